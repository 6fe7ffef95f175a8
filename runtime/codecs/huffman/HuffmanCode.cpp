#include "runtime/codecs/huffman/HuffmanCode.h"

#include "lang/StreamType.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cassert>

namespace brevis {

void writeHuffmanCode(const HuffmanCode &code, Bytes &out) {
  putVarint(out, code.words.size());
  for (size_t i = 0; i < code.words.size(); ++i) putVarint(out, i == 0 ? code.words[0] : code.words[i] - code.words[i - 1] - 1);
  for (size_t i = 0; i < code.lengths.size(); i += 2) {
    uint8_t lo = code.lengths[i] - 1;
    uint8_t hi = i + 1 < code.lengths.size() ? code.lengths[i + 1] - 1 : 0;
    out.push_back(static_cast<uint8_t>(lo | (hi << 4)));
  }
}

uint64_t huffmanCodeSize(const HuffmanCode &code) {
  uint64_t size = varintSize(code.words.size()) + (code.lengths.size() + 1) / 2;
  for (size_t i = 0; i < code.words.size(); ++i) size += varintSize(i == 0 ? code.words[0] : code.words[i] - code.words[i - 1] - 1);
  return size;
}

Result<HuffmanCode> readHuffmanCode(ByteReader &in, unsigned width) {
  auto k = in.varint();
  if (!k || *k == 0 || *k > kHuffmanMaxSymbols) return Error{"huffman table has an invalid symbol count"};
  // Each symbol takes at least one byte, so a count beyond the bytes left is corrupt; this
  // also bounds the allocation below by the payload's size.
  if (*k > in.remaining()) return Error{"huffman table is truncated"};
  HuffmanCode code;
  code.words.resize(*k);
  for (uint64_t i = 0; i < *k; ++i) {
    auto v = in.varint();
    if (!v) return Error{"huffman table is truncated"};
    uint64_t word = *v;
    if (i > 0 && (__builtin_add_overflow(code.words[i - 1], *v, &word) || __builtin_add_overflow(word, 1, &word)))
      return Error{"huffman table symbols overflow 64 bits"};
    if ((word & ~widthMask(width)) != 0) return Error{fmt::format("huffman table symbol {} does not fit in {} bits", word, width)};
    code.words[i] = word;
  }
  if (*k == 1) return code;
  const uint8_t *nibbles = in.take((*k + 1) / 2);
  if (!nibbles) return Error{"huffman table is truncated"};
  code.lengths.resize(*k);
  uint64_t kraft = 0; // in units of 2^-16
  for (uint64_t i = 0; i < *k; ++i) {
    unsigned len = ((nibbles[i / 2] >> (4 * (i % 2))) & 15) + 1;
    code.lengths[i] = static_cast<uint8_t>(len);
    code.maxLength = std::max(code.maxLength, len);
    kraft += uint64_t{1} << (kHuffmanMaxLength - len);
  }
  if (*k % 2 && (nibbles[*k / 2] >> 4) != 0) return Error{"huffman table has non-zero padding"};
  if (kraft != uint64_t{1} << kHuffmanMaxLength) return Error{"huffman table does not describe a complete code"};
  return code;
}

std::vector<uint32_t> canonicalCodesLsbFirst(const HuffmanCode &code) {
  // Codes in order of length, then of symbol: each length's first code follows the codes of the
  // shorter lengths, shifted to its length (a counting sort of the symbols by length; a sort of
  // them was a tenth of setting up a small literal's decoder).
  std::array<uint32_t, kHuffmanMaxLength + 1> count{}, next{};
  for (uint8_t len : code.lengths) {
    assert(len >= 1 && len <= kHuffmanMaxLength && "readHuffmanCode and the encoder bound the lengths");
    ++count[len];
  }
  uint32_t first = 0;
  unsigned previous = 0;
  for (unsigned len = 1; len <= kHuffmanMaxLength; ++len) {
    if (count[len] == 0) continue;
    if (previous) first <<= len - previous;
    next[len] = first;
    first += count[len];
    previous = len;
  }
  static constexpr auto kReversedBytes = [] {
    std::array<uint8_t, 256> r{};
    for (unsigned v = 0; v < 256; ++v)
      for (unsigned b = 0; b < 8; ++b) r[v] |= static_cast<uint8_t>(((v >> b) & 1u) << (7 - b));
    return r;
  }();
  static_assert(kHuffmanMaxLength <= 16, "codes are reversed as 16-bit numbers");
  std::vector<uint32_t> codes(code.lengths.size());
  for (size_t s = 0; s < codes.size(); ++s) {
    const unsigned len = code.lengths[s];
    const uint32_t c = next[len]++;
    codes[s] = (uint32_t{kReversedBytes[c & 0xff]} << 8 | kReversedBytes[c >> 8]) >> (16 - len);
  }
  return codes;
}

} // namespace brevis
