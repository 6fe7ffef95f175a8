#pragma once
// `rans` (order 0) and `rans_o1` (order 1: the previous byte selects the frequency table)
// literals of words up to 8 bits, coded with htscodecs' static rANS in its 32-way interleaved
// form (SIMD decoders chosen at run time). Framing (docs/format/literals.md):
//
//   varint B                       words per block
//   per block: varint size, then one htscodecs rANS 4x16 frame of the block's bytes,
//              varint P, then P patches (varint gap, byte value)
//
// Patches carry a block's rarest bytes outside the rANS frame: htscodecs quantizes frequencies
// to 12 bits, and every symbol present costs at least 1/4096 of the probability space, taken
// from the frequent ones. On float exponents (~40 symbols seen a few times per megabyte) that
// cost 0.35% of the coded size; coding those few occurrences as (position, value) pairs and the
// mode in their place costs ~0.05%. The entropy coding is htscodecs', except for order-0 blocks
// of 1,001 to 65,536 bytes, whose frames RansX32Encode writes (htscodecs' setup costs more).
#include "lang/Result.h"
#include "runtime/common/Bytes.h"
#include "runtime/common/RunBlocks.h"
#include "runtime/common/Words.h"

#include <array>
#include <functional>
#include <memory>
#include <span>

namespace brevis {

inline constexpr unsigned kRansMaxWidth = 8;
/// Words per block: big enough for the 32-way coder's tables to pay off.
inline constexpr uint64_t kRansBlockWords = uint64_t{1} << 20;

/// Appends the rANS encoding (order 0 or 1) of `words`, each < 256. Order 0 moves the rare
/// bytes of each block into patches where a size model says that pays; order 1 writes none.
/// `blockCounts`, where given, holds how often each byte occurs in each block of `words`
/// (kRansBlockWords words a block), so that an order-0 stream is not counted again. `run`,
/// where given, codes the blocks (RunBlocks.h).
using ByteCounts = std::array<uint64_t, 256>;
void encodeRans(WordsView words, unsigned order, Bytes &out, std::span<const ByteCounts> blockCounts = {},
                const RunBlocks *run = nullptr);

/// Which bytes of a block to patch: the set of rarest symbols (replaced by the most frequent
/// one in the rANS frame) whose removal minimizes modeled frame + patch size. Exposed for tests.
struct RarePlan {
  bool rare[256] = {};
  uint8_t replacement = 0;
  uint64_t patches = 0; ///< occurrences of rare symbols
};
RarePlan planRarePatches(const uint64_t counts[256], uint64_t n);

class RansDecoder {
public:
  /// `bytes` is a literal's slice of a Payload: htscodecs may read the byte before a frame (its
  /// size varint) and, on damaged frames, past its end into the payload's slack.
  static Result<std::unique_ptr<RansDecoder>> create(ByteSpan bytes, unsigned width, uint64_t count);
  uint64_t blockWords() const { return blockWords_; }
  size_t blockCount() const { return blocks_.size(); }
  uint64_t blockLength(size_t b) const;
  /// Decodes block b into `out` (at least blockWords() bytes); fails on a corrupt frame or a
  /// byte wider than the literal's width.
  Result<void> decodeBlock(size_t b, uint8_t *out) const { return decodeBlocks(b, 1, out); }
  /// Blocks [b, b + n) one after another into `out`. Four at a time decode faster than one
  /// (RansX32Decode.h).
  Result<void> decodeBlocks(size_t b, size_t n, uint8_t *out) const;
  static constexpr size_t kBlocksTogether = 4;

private:
  struct Block {
    ByteSpan frame;
    ByteSpan patches; ///< the patch list after its count (checked by create)
    uint64_t patchCount = 0;
  };
  unsigned width_ = 8;
  uint64_t count_ = 0;
  uint64_t blockWords_ = 0;
  std::vector<Block> blocks_;
};

} // namespace brevis
