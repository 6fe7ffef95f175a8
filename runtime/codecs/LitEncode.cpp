#include "runtime/codecs/LitEncode.h"

#include "lang/BitpackFormat.h"
#include "runtime/codecs/bitpack/BitpackEncode.h"
#include "runtime/codecs/context/ContextCodec.h"
#include "runtime/codecs/huffman/HuffmanEncode.h"
#include "runtime/codecs/rans/Rans16.h"
#include "runtime/codecs/rans/RansCodec.h"
#include "runtime/codecs/zstd/ZstdCodec.h"

#include <algorithm>
#include <cfloat>

namespace brevis {

bool encodingApplies(Encoding encoding, WordsView words, unsigned width) {
  switch (encoding) {
  case Encoding::Raw:
  case Encoding::Bitpack: return true;
  case Encoding::Huffman: return !words.empty() && (width <= 16 || histogram(words, width, kHuffmanMaxSymbols));
  case Encoding::Rans:
  case Encoding::RansO1: return !words.empty() && width <= maxEncodingWidth(encoding);
  case Encoding::Zstd:
  case Encoding::Context: return width <= maxEncodingWidth(encoding);
  }
  return false;
}

bool encodeLit(Encoding encoding, WordsView words, unsigned width, Bytes &out, int zstdLevel, double contextRawRoom) {
  switch (encoding) {
  case Encoding::Raw: encodeRaw(words, width, out); return true;
  case Encoding::Bitpack: encodeBitpack(words, out); return true;
  case Encoding::Huffman: return !words.empty() && encodeHuffman(words, width, out);
  case Encoding::Rans:
  case Encoding::RansO1:
    if (words.empty() || width > maxEncodingWidth(encoding)) return false;
    if (width > kRansMaxWidth) return encodeRans16(words, width, out); // 9..16 bits: our own coder
    encodeRans(words, encoding == Encoding::Rans ? 0 : 1, out);
    return true;
  case Encoding::Zstd:
    if (width > maxEncodingWidth(encoding)) return false;
    encodeZstd(words, zstdLevel, out);
    return true;
  case Encoding::Context: {
    if (width > maxEncodingWidth(encoding)) return false;
    // The adaptation rate, whether to code the most common word by an escape flag, and how many
    // low bits to store raw (the most within contextRawRoom of the smallest), judged on at most
    // a run of kContextRateWords from the middle of a long stream (the common word too):
    // simulating every word before coding it took as long as the coding.
    const uint64_t n = words.size();
    const WordsView run = n <= kContextRateWords ? words : words.subspan((n - kContextRateWords) / 2, kContextRateWords);
    std::vector<ContextCoding> codings;
    for (const std::optional<uint64_t> &tried : contextEscapesToTry(run, width)) {
      const std::vector<ContextCoding> some = contextCodings(run, width, tried);
      codings.insert(codings.end(), some.begin(), some.end());
    }
    const ContextCoding best = chooseContextCoding(codings, contextRawRoom);
    encodeContext(words, width, best.rate, best.escape, out, best.rawBits);
    return true;
  }
  }
  return false;
}

bool hasCheapExactSize(Encoding encoding) {
  switch (encoding) {
  case Encoding::Raw:
  case Encoding::Bitpack: return true;
  case Encoding::Huffman:
  case Encoding::Rans:
  case Encoding::RansO1:
  case Encoding::Zstd:
  case Encoding::Context: return false;
  }
  return false;
}

uint64_t encodedSize(Encoding encoding, WordsView words, unsigned width) {
  switch (encoding) {
  case Encoding::Raw: return words.size() * containerBytes(width);
  case Encoding::Bitpack: return bitpackPayloadSize(words.size(), bitpackBits(words));
  case Encoding::Huffman:
  case Encoding::Rans:
  case Encoding::RansO1:
  case Encoding::Zstd:
  case Encoding::Context: break;
  }
  __builtin_trap(); // entropy coders' sizes depend on encoding: estimateSize(), or encodeLit()
}

} // namespace brevis
