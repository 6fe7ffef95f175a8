#pragma once
// One strategy for producing a region's bytes from its program: the interpreter, or the JIT.
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/ByteSink.h"
#include "runtime/Payload.h"

namespace brevis {

class RegionDecoder {
public:
  virtual ~RegionDecoder() = default;

  /// Called once per checkpoint before its regions are decoded, so a decoder can do per-checkpoint
  /// work (the JIT compiles every program in one batch). Same preconditions as decode().
  virtual Result<void> prepare(const Checkpoint &, const Payload &) { return {}; }

  /// Writes exactly region.bytes.size bytes to `sink`: the region's program executed, its
  /// words stored little-endian. Preconditions: the program is type-checked against the region
  /// and has no holes, and every literal has been validated against `payload`
  /// (validatePayload / validateForExecution). Decoders run without re-checking.
  virtual Result<void> decode(const Region &region, const Payload &payload, ByteSink &sink) = 0;
};

} // namespace brevis
