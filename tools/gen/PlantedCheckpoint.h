#pragma once
// A checkpoint of tensors with planted structure, for testing that the synthesizer finds it:
// a constant tensor, a tiled one, an index ramp, an F32 up-cast from BF16, F32 values of F16
// origin, xor-masked integers, a few-valued tensor, zero rows inside a dense matrix, two
// halves of different scale in one tensor, and output channels of different scales. Each
// tensor comes with its structure in words and a structure-aware reference size: the order-0
// entropy of what is not implied by the structure (the tile, the BF16 or F16 source's IEEE
// fields, the masked bytes, the value distribution, the dense rows). The same seed gives the
// same bytes on every machine.
#include "lang/DType.h"
#include "lang/Result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace brevis::gen {

struct PlantedTensor {
  std::string name;
  DType dtype = DType::U8;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> bytes; ///< little-endian words of the dtype's width
  std::string structure;      ///< what was planted, in words
  double referenceBytes = 0;  ///< what a structure-aware coder needs, at least
};

std::vector<PlantedTensor> plantedTensors(uint64_t seed);

/// Writes plantedTensors(seed) as a safetensors file (through a temporary file).
Result<void> writePlantedCheckpoint(const std::string &path, const std::vector<PlantedTensor> &tensors, bool overwrite);

} // namespace brevis::gen
