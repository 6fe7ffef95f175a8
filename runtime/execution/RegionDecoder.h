#pragma once
// One strategy for producing a region's bytes from its program: the interpreter, or the JIT.
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/execution/ByteSink.h"
#include "runtime/containers/Payload.h"

#include <string>

namespace brevis {

class RegionDecoder {
public:
  virtual ~RegionDecoder() = default;

  /// Called once per checkpoint before its regions are decoded, so a decoder can do per-checkpoint
  /// work (the JIT compiles every program in one batch). Same preconditions as decodeWords().
  virtual Result<void> prepare(const Checkpoint &, const Payload &) { return {}; }

  /// Writes words [first, first + count) of the region's program to `sink`, each stored
  /// little-endian in containerBytes(W) bytes. Preconditions: the program is type-checked against
  /// the region and has no holes, every literal has been validated against `payload`
  /// (validatePayload / validateForExecution), and the range lies inside the program's output.
  /// Decoders run without re-checking. After prepare(), may be called from several threads at
  /// once (for different ranges or regions).
  virtual Result<void> decodeWords(const Region &region, const Payload &payload, uint64_t first, uint64_t count,
                                   ByteSink &sink) = 0;

  /// What the decoder did, in a line for -v (empty: nothing to say). The JIT: its functions,
  /// their compile time and how many region pieces ran compiled code.
  virtual std::string summary() const { return {}; }

  /// The whole region: exactly region.bytes.size bytes.
  Result<void> decode(const Region &region, const Payload &payload, ByteSink &sink) {
    return decodeWords(region, payload, 0, streamTypeOf(*region.program).length, sink);
  }
};

} // namespace brevis
