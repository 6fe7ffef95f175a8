#pragma once
// ZipNN's fixed pipeline written as a Brevis program, so that benchmarks compare against it
// through the same archive, decoders and checks: byte grouping, each float word split into its
// byte planes (BF16/F16: high and low byte; F32: four), every plane Huffman-coded or kept raw,
// whichever is smaller (ZipNN uses zstd's Huffman coder per plane). Integer tensors and
// non-tensor regions are one literal, Huffman-coded or raw.
#include "synth/Strategy.h"

namespace brevis {

class ZipNNStrategy final : public Strategy {
public:
  RegionProgram synthesize(const RegionInput &region) const override;
};

} // namespace brevis
