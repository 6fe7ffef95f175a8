#pragma once
// Rebuilds the file a checkpoint program describes: every region in order, through a
// RegionDecoder, checking the total size and the xxh64 of the result against the program's
// `source` line. Nothing is reported as success unless the bytes are exactly the original's.
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/execution/ByteSink.h"
#include "runtime/containers/Payload.h"
#include "runtime/execution/RegionDecoder.h"

#include <vector>

namespace brevis {

/// Checks that the payload matches the program's declaration and that every literal's payload
/// is well formed. Run before decoding so that decoders never see malformed input.
Result<void> validatePayload(const Checkpoint &c, const Payload &payload);

/// Validates the payload, prepares the decoder, decodes every region and verifies the result.
/// With `regionDigests`, every region's digest (regionDigest of its bytes) is appended there:
/// what an archive's index needs for a program that comes without one.
Result<void> runCheckpoint(const Checkpoint &c, const Payload &payload, RegionDecoder &decoder, ByteSink &sink,
                           std::vector<uint64_t> *regionDigests = nullptr);

} // namespace brevis
