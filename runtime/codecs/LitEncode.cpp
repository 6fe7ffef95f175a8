#include "runtime/codecs/LitEncode.h"

#include "runtime/codecs/huffman/HuffmanEncode.h"
#include "runtime/codecs/rans/Rans16.h"
#include "runtime/codecs/rans/RansCodec.h"

#include <bit>

namespace brevis {

namespace {

/// Smallest b such that every word fits in b bits.
unsigned usedBits(std::span<const uint64_t> words) {
  uint64_t all = 0;
  for (uint64_t w : words) all |= w;
  return static_cast<unsigned>(std::bit_width(all));
}

void encodeBitpack(std::span<const uint64_t> words, Bytes &out) {
  unsigned b = usedBits(words);
  out.push_back(static_cast<uint8_t>(b));
  // Accumulate LSB-first into a 128-bit window and flush whole bytes.
  unsigned __int128 window = 0;
  unsigned filled = 0;
  for (uint64_t w : words) {
    window |= static_cast<unsigned __int128>(w) << filled;
    filled += b;
    while (filled >= 8) {
      out.push_back(static_cast<uint8_t>(window));
      window >>= 8;
      filled -= 8;
    }
  }
  if (filled) out.push_back(static_cast<uint8_t>(window));
}

void encodeRaw(std::span<const uint64_t> words, unsigned width, Bytes &out) {
  unsigned cb = containerBytes(width);
  size_t at = out.size();
  out.resize(at + words.size() * cb);
  for (uint64_t w : words)
    for (unsigned k = 0; k < cb; ++k, ++at) out[at] = static_cast<uint8_t>(w >> (8 * k));
}

} // namespace

bool encodingApplies(Encoding encoding, std::span<const uint64_t> words, unsigned width) {
  switch (encoding) {
  case Encoding::Raw:
  case Encoding::Bitpack: return true;
  case Encoding::Huffman: return !words.empty() && (width <= 16 || histogram(words, width, kHuffmanMaxSymbols));
  case Encoding::Rans:
  case Encoding::RansO1: return !words.empty() && width <= maxEncodingWidth(encoding);
  }
  return false;
}

bool encodeLit(Encoding encoding, std::span<const uint64_t> words, unsigned width, Bytes &out) {
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
  }
  return false;
}

uint64_t encodedSize(Encoding encoding, std::span<const uint64_t> words, unsigned width) {
  if (encoding == Encoding::Raw) return words.size() * containerBytes(width);
  return bitpackPayloadSize(words.size(), usedBits(words));
}

} // namespace brevis
