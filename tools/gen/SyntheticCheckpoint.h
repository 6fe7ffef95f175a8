#pragma once
// A deterministic generator of LLM-like safetensors checkpoints, for throughput runs and tests
// that need large inputs: a Llama-style layout (embedding, per-layer attention and MLP
// matrices, norms, output head) at a chosen hidden size, as many layers as fit a target size.
// Weights are roughly normal with a per-row scale (log-normal spread, as trained matrices
// show) and rare large outliers; norm weights sit near 1. The same options give the same bytes
// on every machine. With smallTensors, the same weights fill many small tensors instead (a
// checkpoint of thousands of regions, whose decoding is mostly per-region work).
#include "lang/DType.h"
#include "lang/Result.h"

#include <cstdint>
#include <string>

namespace brevis::gen {

struct SyntheticOptions {
  uint64_t targetBytes = uint64_t{1} << 30; ///< the file is at most this large (and close to it)
  DType dtype = DType::BF16;                ///< BF16, F16 or F32
  unsigned hidden = 2048;                   ///< model width; the MLP is 2.75x wider
  unsigned vocab = 32000;
  uint64_t seed = 1;
  /// Many small tensors instead of a model's layout: each of kSmallTensorMinBytes to
  /// kSmallTensorMaxBytes (log-uniform), as the biases, norms and small kernels of real
  /// checkpoints are; `hidden` and `vocab` do not apply.
  bool smallTensors = false;
};

inline constexpr uint64_t kSmallTensorMinBytes = 1024, kSmallTensorMaxBytes = 64 * 1024;

/// Writes the checkpoint to `path` (through a temporary file); returns its size.
Result<uint64_t> writeSyntheticCheckpoint(const std::string &path, const SyntheticOptions &options, bool overwrite);

/// Parses sizes such as "1GiB", "64MiB", "500k", "123" (bytes).
Result<uint64_t> parseSize(const std::string &text);

} // namespace brevis::gen
