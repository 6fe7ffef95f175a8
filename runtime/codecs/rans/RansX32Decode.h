#pragma once
// Decoding of htscodecs' order-0, 32-way rANS frames (the frames `rans` literals hold) with
// AVX-512, several frames at once.
//
// htscodecs' own AVX-512 decoder is bound by latency, not throughput: each round of 32 symbols
// waits for a table gather (~30 cycles), then a multiply, then the renormalization, before the
// next round's gather can start, and its two 16-lane halves share one chain through the word
// pointer. Frames are independent, so decoding several in one loop gives the core several
// chains to overlap.
//
// A gather of sixteen table entries takes about 17 cycles of throughput here (AMD Zen 4), most
// of a round. Where a frame has at most 64 symbols (a float's exponents have about 20) and the
// CPU has AVX-512 VBMI, a round looks its 32 slots up without gathers: byte permutes of
// 128-entry tables in registers give each slot's bucket of 32 slots a rank and the place where
// the next symbol starts in it (or, in up to eight buckets where several start, each slot's
// rank), a byte permute gives the rank's symbol, and word permutes its frequency and cumulative
// frequency (docs/benchmarks.md, "rANS without gathers"). Three or four such frames decode in
// one loop that way; fewer (whose chains of latencies would not overlap enough), and other
// frames, by gathers, two in one loop. The wire format is htscodecs' (docs/format/literals.md):
// frames written by its encoder decode here to the same bytes, and anything else (other flags,
// no AVX-512) is left to htscodecs.
#include "runtime/common/Bytes.h"

#include <cstdint>
#include <optional>
#include <span>

namespace brevis {

struct RansX32Frame {
  ByteSpan frame;    ///< one whole htscodecs 4x16 frame
  uint8_t *out;      ///< `length` bytes
  uint32_t length;   ///< the bytes it must decode to
  enum class Status { Pending, Done, NotHandled, Corrupt } status = Status::Pending;
  /// Where Done: the OR of the symbols the frame's table can give, so no decoded byte has a bit
  /// outside it (what a literal's width check needs, without reading the bytes back).
  uint8_t symbolsOr = 0;
};

/// Whether this CPU runs decodeRansX32Frames() (AVX-512 F and BW).
bool ransX32DecoderAvailable();

/// Decodes every frame that is order 0 with the 32-way flag alone (and no other), setting its
/// status: Done, Corrupt (a malformed table, bad states, or words running out), or NotHandled
/// (another kind of frame, for htscodecs). Requires ransX32DecoderAvailable().
void decodeRansX32Frames(std::span<RansX32Frame> frames);

/// How decodeRansX32Frames() looks up a frame's symbols, for tests and benchmarks.
struct RansX32Lookup {
  bool permutes = false;      ///< without gathers
  unsigned symbols = 0;       ///< with a slot in the frame's table
  unsigned sharedBuckets = 0; ///< buckets of 32 slots where two or more symbols start
};
/// nullopt where decodeRansX32Frames() would not decode `frame` symbol by symbol (not its kind
/// of frame, corrupt, or of one symbol). Requires ransX32DecoderAvailable().
std::optional<RansX32Lookup> ransX32LookupOf(const RansX32Frame &frame);

} // namespace brevis
