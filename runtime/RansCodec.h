#pragma once
// `rans` (order 0) and `rans_o1` (order 1: the previous byte selects the frequency table)
// literals of words up to 8 bits, coded with htscodecs' static rANS in its 32-way interleaved
// form (SIMD decoders chosen at run time). Framing (docs/format/literals.md):
//
//   varint B                       words per block
//   per block: varint size, then one htscodecs rANS 4x16 frame of the block's bytes
//
// The entropy coding itself is htscodecs'; this file pair is the framing around it.
#include "lang/Result.h"
#include "runtime/Bytes.h"

#include <memory>
#include <span>

namespace brevis {

inline constexpr unsigned kRansMaxWidth = 8;
/// Words per block: big enough for the 32-way coder's tables to pay off.
inline constexpr uint64_t kRansBlockWords = uint64_t{1} << 20;

/// Appends the rANS encoding (order 0 or 1) of `words`, each < 256.
void encodeRans(std::span<const uint64_t> words, unsigned order, Bytes &out);

class RansDecoder {
public:
  static Result<std::unique_ptr<RansDecoder>> create(ByteSpan bytes, unsigned width, uint64_t count);
  uint64_t blockWords() const { return blockWords_; }
  size_t blockCount() const { return blocks_.size(); }
  uint64_t blockLength(size_t b) const;
  /// Decodes block b into `out` (at least blockWords() bytes); fails on a corrupt frame or a
  /// byte wider than the literal's width.
  Result<void> decodeBlock(size_t b, uint8_t *out) const;

private:
  unsigned width_ = 8;
  uint64_t count_ = 0;
  uint64_t blockWords_ = 0;
  std::vector<ByteSpan> blocks_;
};

} // namespace brevis
