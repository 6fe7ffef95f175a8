#pragma once
// Encoding of htscodecs' order-0, 32-way rANS frames (the frames `rans` literals hold; wire
// format in RansX32Decode.cpp and docs/format/literals.md), for every block htscodecs would
// code 32-way.
//
// htscodecs 1.3 pays about 30 us a call before coding a byte: it asks the CPU for its features
// (three CPUID instructions, each a trap to the hypervisor on a virtual machine, ~3.6 us here)
// and sets up its SIMD encoder's tables. On a checkpoint of small tensors that was a quarter of
// level 1's time. This encoder has no setup beyond the frequency table, and writes the frames
// htscodecs writes for blocks of a few thousand bytes (32 states, a table summing to the
// smallest power of two not below the length, at most 4096); on larger ones its table's
// rounding differs and its frames come out as small or smaller. Both decoders read them. With
// AVX-512 it codes 32 symbols at a time, their steps looked up by permutes of tables held in
// registers: twice htscodecs' speed on float exponents (whose SIMD encoder gathers its tables).
#include "runtime/common/Bytes.h"

#include <cstdint>
#include <span>

namespace brevis {

/// htscodecs codes blocks of at most this many bytes 4-way (another frame): they are left to it.
inline constexpr size_t kRansX32MinBytes = 1001;

/// Appends one frame of `block` (at least kRansX32MinBytes bytes; counts[s]: how often byte s
/// occurs in it) to `frame`: order 0, 32-way, or the bytes stored as they are (htscodecs'
/// "cat" frame) where coding would not make them smaller. With `vectorized`, whole rounds of 32
/// symbols are coded 32 at a time where the CPU has AVX-512 (and VBMI) and the block at most 64
/// distinct bytes: the same frame (tests compare the two).
void encodeRansX32Frame(std::span<const uint8_t> block, const uint64_t counts[256], Bytes &frame,
                        bool vectorized = true);

} // namespace brevis
