#pragma once
// The template synthesizer: one fixed program shape per dtype, built through the real AST.
// Float tensors become a merge of their IEEE fields (sign, exponent, mantissa), each a
// literal in its smallest encoding; everything else is one literal. The search-based
// synthesizer replaces this; the template stays as its baseline and fallback.
#include "lang/Ast.h"
#include "runtime/common/Bytes.h"
#include "runtime/codecs/LitEncode.h"

#include <atomic>
#include <optional>
#include <string>

namespace brevis {

struct SynthOutput {
  Checkpoint checkpoint;
  Bytes payload;
  /// Set when the input is not valid safetensors and was kept as one byte stream.
  std::optional<std::string> notSafetensorsReason;
};

/// How tensors become programs: Brevis's own float-field template, or another compressor's
/// fixed pipeline written as a program (synth/BaselineSchemes.h), for comparisons.
enum class TensorScheme { FloatFields, ZipNN, DFloat11 };

struct SynthOptions {
  unsigned threads = 1;  ///< regions are independent; the result does not depend on the count
  EncodePolicy policy{}; ///< which literal encodings to keep (default: the exact smallest)
  TensorScheme scheme = TensorScheme::FloatFields;
  std::atomic<uint64_t> *progress = nullptr; ///< input bytes whose program is done, for progress bars
};

SynthOutput synthesizeTemplate(ByteSpan file, const std::string &sourceName, const std::string &payloadName,
                               const SynthOptions &options = {});

/// The program for one tensor's bytes (`bytes` holds words of dtype's width, little-endian);
/// literal payloads are appended to `payload`.
ExprPtr synthesizeTensor(DType dtype, ByteSpan bytes, Bytes &payload, EncodePolicy policy = {});

} // namespace brevis
