#include "runtime/HuffmanDecode.h"

#include <fmt/format.h>

#include <cstring>

namespace brevis {

namespace {

uint64_t load64(const uint8_t *p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

/// One LSB-first bit stream. `bits` holds `count` valid bits; `next` is the next byte to load.
struct BitStream {
  const uint8_t *next;
  const uint8_t *end;
  uint64_t bits = 0;
  unsigned count = 0;

  /// Branch-free refill to at least 56 bits; reads 8 bytes at `next` (caller ensures next <= end,
  /// and the buffer has slack after end).
  void refillFast() {
    bits |= load64(next) << count;
    next += (63 - count) >> 3;
    count |= 56;
  }
  /// Refill that reads no byte past `end` (missing bytes read as 0).
  void refillSafe() {
    while (count <= 56) {
      uint64_t byte = next < end ? *next : 0;
      bits |= byte << count;
      ++next;
      count += 8;
    }
  }
};

} // namespace

Result<std::unique_ptr<HuffmanDecoder>> HuffmanDecoder::create(ByteSpan bytes, unsigned width, uint64_t count) {
  auto d = std::unique_ptr<HuffmanDecoder>(new HuffmanDecoder());
  d->count_ = count;
  ByteReader in(bytes);
  auto code = readHuffmanCode(in, width);
  if (!code) return code.error();
  d->code_ = std::move(*code);
  if (d->code_.words.size() == 1) {
    if (in.remaining() != 0) return Error{"huffman literal has trailing bytes"};
    d->blockWords_ = count ? count : 1;
    if (count) d->blocks_.push_back(Block{});
    return d;
  }
  auto blockWords = in.varint();
  if (!blockWords || *blockWords == 0) return Error{"huffman literal has an invalid block size"};
  d->blockWords_ = *blockWords;
  uint64_t blocks = count / *blockWords + (count % *blockWords != 0);
  // Every block has at least four size bytes: a count beyond that is corrupt.
  if (blocks > in.remaining() / kHuffmanStreams) return Error{"huffman literal is truncated"};
  d->blocks_.resize(blocks);
  for (auto &b : d->blocks_) {
    for (auto &s : b.sizes) {
      auto size = in.varint();
      if (!size) return Error{"huffman literal is truncated"};
      s = *size;
    }
    for (unsigned s = 0; s < kHuffmanStreams; ++s) {
      b.streams[s] = in.take(b.sizes[s]);
      if (!b.streams[s]) return Error{"huffman literal is truncated"};
    }
  }
  if (in.remaining() != 0) return Error{"huffman literal has trailing bytes"};

  // The decoding table: every L-bit pattern whose low bits are a code maps to that code.
  const unsigned L = d->code_.maxLength;
  d->table_.assign(size_t{1} << L, 0);
  std::vector<uint32_t> codes = canonicalCodesLsbFirst(d->code_);
  for (uint32_t s = 0; s < codes.size(); ++s) {
    unsigned len = d->code_.lengths[s];
    for (uint32_t hi = 0; hi < (1u << (L - len)); ++hi) d->table_[codes[s] | (hi << len)] = (s << 8) | len;
  }
  return d;
}

uint64_t HuffmanDecoder::blockLength(size_t b) const {
  uint64_t begin = b * blockWords_;
  return std::min(blockWords_, count_ - begin);
}

Result<void> HuffmanDecoder::decodeBlock(size_t b, uint16_t *out) const { return decodeBlockInto(b, out); }

Result<void> HuffmanDecoder::decodeBlock(size_t b, uint8_t *out) const {
  if (code_.words.size() > 256) return Error{"huffman alphabet does not fit in bytes"};
  return decodeBlockInto(b, out);
}

Result<void> HuffmanDecoder::checkStreamsConsumed(size_t b, const void *streams) const {
  const BitStream *s = static_cast<const BitStream *>(streams);
  const Block &block = blocks_[b];
  for (unsigned k = 0; k < kHuffmanStreams; ++k) {
    // Exactly the stream's bytes were used, and the unused bits of its last byte are zero.
    uint64_t size = block.sizes[k];
    uint64_t consumed = static_cast<uint64_t>(s[k].next - block.streams[k]) * 8 - s[k].count;
    if (consumed > size * 8 || (consumed + 7) / 8 != size)
      return Error{fmt::format("huffman block {} stream {} is corrupt: {} bits decoded from {} bytes", b, k, consumed,
                               size)};
    if (consumed % 8 && (block.streams[k][size - 1] >> (consumed % 8)) != 0)
      return Error{fmt::format("huffman block {} stream {} has non-zero padding bits", b, k)};
  }
  return {};
}

template <typename Symbol> Result<void> HuffmanDecoder::decodeBlockInto(size_t b, Symbol *out) const {
  const uint64_t n = blockLength(b);
  if (code_.words.size() == 1) {
    std::memset(out, 0, n * sizeof(Symbol));
    return {};
  }
  const Block &block = blocks_[b];
  const unsigned L = code_.maxLength;
  const uint64_t mask = (uint64_t{1} << L) - 1;
  const uint32_t *table = table_.data();
  BitStream s[kHuffmanStreams];
  for (unsigned k = 0; k < kHuffmanStreams; ++k) {
    s[k].next = block.streams[k];
    s[k].end = block.streams[k] + block.sizes[k];
  }
  auto decodeOne = [&](BitStream &st) -> Symbol {
    uint32_t e = table[st.bits & mask];
    unsigned len = e & 0xff;
    st.bits >>= len;
    st.count -= len;
    return static_cast<Symbol>(e >> 8);
  };

  // Word i of the block belongs to stream i % 4; a round decodes `perRefill` words per stream.
  const unsigned perRefill = 56 / L;
  uint64_t i = 0;
  const uint64_t round = uint64_t{kHuffmanStreams} * perRefill;
  while (i + round <= n && s[0].next <= s[0].end && s[1].next <= s[1].end && s[2].next <= s[2].end &&
         s[3].next <= s[3].end) {
    for (auto &st : s) st.refillFast();
    for (unsigned r = 0; r < perRefill; ++r, i += kHuffmanStreams) {
      out[i] = decodeOne(s[0]);
      out[i + 1] = decodeOne(s[1]);
      out[i + 2] = decodeOne(s[2]);
      out[i + 3] = decodeOne(s[3]);
    }
  }
  for (; i < n; ++i) {
    BitStream &st = s[i % kHuffmanStreams];
    if (st.count < L) st.refillSafe();
    out[i] = decodeOne(st);
  }
  return checkStreamsConsumed(b, s);
}

} // namespace brevis
