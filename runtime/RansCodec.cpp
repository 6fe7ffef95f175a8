#include "runtime/RansCodec.h"

#include "runtime/Varint.h"

#include <fmt/format.h>
#include <htscodecs/rANS_static4x16.h>

#include <algorithm>
#include <limits>

namespace brevis {

void encodeRans(std::span<const uint64_t> words, unsigned order, Bytes &out) {
  putVarint(out, kRansBlockWords);
  std::vector<uint8_t> block;
  Bytes frame;
  for (uint64_t begin = 0; begin < words.size(); begin += kRansBlockWords) {
    uint64_t end = std::min<uint64_t>(words.size(), begin + kRansBlockWords);
    block.assign(words.begin() + begin, words.begin() + end);
    unsigned bound = rans_compress_bound_4x16(static_cast<unsigned>(block.size()), static_cast<int>(order) | RANS_ORDER_X32);
    frame.resize(bound);
    unsigned size = bound;
    if (!rans_compress_to_4x16(block.data(), static_cast<unsigned>(block.size()), frame.data(), &size,
                               static_cast<int>(order) | RANS_ORDER_X32))
      __builtin_trap(); // only fails on allocation failure or a buffer below the bound
    putVarint(out, size);
    out.insert(out.end(), frame.begin(), frame.begin() + size);
  }
}

Result<std::unique_ptr<RansDecoder>> RansDecoder::create(ByteSpan bytes, unsigned width, uint64_t count) {
  auto d = std::unique_ptr<RansDecoder>(new RansDecoder());
  d->width_ = width;
  d->count_ = count;
  ByteReader in(bytes);
  auto blockWords = in.varint();
  if (!blockWords || *blockWords == 0 || *blockWords > std::numeric_limits<unsigned>::max())
    return Error{"rans literal has an invalid block size"};
  d->blockWords_ = *blockWords;
  uint64_t blocks = count / *blockWords + (count % *blockWords != 0);
  if (blocks > in.remaining()) return Error{"rans literal is truncated"};
  for (uint64_t b = 0; b < blocks; ++b) {
    auto size = in.varint();
    const uint8_t *frame = size ? in.take(*size) : nullptr;
    if (!frame || *size > std::numeric_limits<unsigned>::max()) return Error{"rans literal is truncated"};
    d->blocks_.push_back(ByteSpan(frame, *size));
  }
  if (in.remaining() != 0) return Error{"rans literal has trailing bytes"};
  return d;
}

uint64_t RansDecoder::blockLength(size_t b) const { return std::min(blockWords_, count_ - b * blockWords_); }

Result<void> RansDecoder::decodeBlock(size_t b, uint8_t *out) const {
  unsigned expected = static_cast<unsigned>(blockLength(b));
  unsigned got = expected;
  ByteSpan frame = blocks_[b];
  // htscodecs takes non-const input but does not modify it.
  if (!rans_uncompress_to_4x16(const_cast<uint8_t *>(frame.data()), static_cast<unsigned>(frame.size()), out, &got) ||
      got != expected)
    return Error{fmt::format("rans block {} is corrupt", b)};
  if (width_ < 8) {
    uint8_t seen = 0;
    for (unsigned i = 0; i < got; ++i) seen |= out[i];
    if (seen >> width_) return Error{fmt::format("rans block {} holds words wider than {} bits", b, width_)};
  }
  return {};
}

} // namespace brevis
