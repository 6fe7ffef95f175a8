#pragma once
// `zstd` literals: words of up to 8 bits, one byte each, LZ-coded by libzstd in independent
// blocks (docs/format/literals.md):
//
//   varint B                       words per block
//   per block: varint size, then one zstd frame of the block's bytes, its content size recorded
//
// Byte streams with repeated strings (a safetensors JSON header, some uint8-quantized weights)
// code far below their order-0 or order-1 entropy, which every other encoding is bound by.
// Blocks let a decoder start at any block, as the other block-coded encodings do; a block's
// frame is decoded in one call into the block's buffer, so the window a frame declares
// allocates nothing.
#include "lang/Result.h"
#include "runtime/common/Bytes.h"
#include "runtime/common/Words.h"

#include <memory>
#include <span>
#include <vector>

namespace brevis {

inline constexpr unsigned kZstdMaxWidth = 8;
/// Words per block: matches reach back at most this far.
inline constexpr uint64_t kZstdBlockWords = uint64_t{1} << 20;
/// libzstd's compression levels that encodeZstd takes.
inline constexpr int kZstdMinLevel = 1;
inline constexpr int kZstdMaxLevel = 22;

/// Appends the `zstd` encoding of `words` (each < 256) at compression `level` (clamped to
/// kZstdMinLevel..kZstdMaxLevel). Every frame's window spans its block.
void encodeZstd(WordsView words, int level, Bytes &out);

/// The size of one zstd frame of `bytes` at `level`, without keeping it: the cost model's
/// sampling.
uint64_t zstdFrameSize(std::span<const uint8_t> bytes, int level);

/// A parsed `zstd` literal whose frames' headers are checked: each is one frame whose recorded
/// content size is its block's length. The frames' contents are checked when decoded.
class ZstdDecoder {
public:
  /// `bytes` must stay alive while the decoder is used.
  static Result<std::unique_ptr<ZstdDecoder>> create(ByteSpan bytes, unsigned width, uint64_t count);
  uint64_t blockWords() const { return blockWords_; }
  size_t blockCount() const { return frames_.size(); }
  uint64_t blockLength(size_t b) const;
  /// Decodes block b into `out` (at least blockLength(b) bytes); fails on a corrupt frame or a
  /// byte wider than the literal's width.
  Result<void> decodeBlock(size_t b, uint8_t *out) const;

private:
  unsigned width_ = 8;
  uint64_t count_ = 0;
  uint64_t blockWords_ = 0;
  std::vector<ByteSpan> frames_;
};

} // namespace brevis
