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
  /// Writes exactly region.bytes.size bytes to `sink`: the region's program executed, its
  /// words stored little-endian. The program has been type-checked and has no holes.
  virtual Result<void> decode(const Region &region, const Payload &payload, ByteSink &sink) = 0;
};

} // namespace brevis
