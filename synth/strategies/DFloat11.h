#pragma once
// DFloat11's scheme written as a Brevis program, so that benchmarks compare against it through
// the same archive, decoders and checks: for BF16 tensors the 8-bit exponent Huffman-coded (or
// raw, if smaller), sign and mantissa stored as they are; other tensors as one raw literal;
// non-tensor regions as one literal, Huffman-coded or raw.
#include "synth/Strategy.h"

namespace brevis {

class DFloat11Strategy final : public Strategy {
public:
  RegionProgram synthesize(const RegionInput &region) const override;
};

} // namespace brevis
