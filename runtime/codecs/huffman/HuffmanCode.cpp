#include "runtime/codecs/huffman/HuffmanCode.h"

#include "lang/StreamType.h"

#include <fmt/format.h>

#include <algorithm>

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
  const size_t k = code.lengths.size();
  std::vector<uint32_t> order(k);
  for (uint32_t i = 0; i < k; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return code.lengths[a] < code.lengths[b]; });
  std::vector<uint32_t> codes(k);
  uint32_t next = 0;
  unsigned len = k ? code.lengths[order[0]] : 0;
  for (size_t j = 0; j < k; ++j) {
    uint32_t s = order[j];
    next <<= code.lengths[s] - len;
    len = code.lengths[s];
    uint32_t reversed = 0;
    for (unsigned b = 0; b < len; ++b) reversed |= ((next >> b) & 1u) << (len - 1 - b);
    codes[s] = reversed;
    ++next;
  }
  return codes;
}

} // namespace brevis
