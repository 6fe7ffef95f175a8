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

/// What the decoded bytes are held to besides the program's `source` checksum.
struct CheckpointCheck {
  /// false: nothing is compared (the bytes are written for inspection: `run --no-verify`).
  bool verify = true;
  /// The original file where it is at hand (empty if not): a region that does not rebuild its
  /// bytes is then reported with its first differing word, got and wanted.
  ByteSpan original;
};

/// Decodes region `r` into `sink` piece by piece, returning its digest (regionDigest of what it
/// wrote): as an archive's index has it, without a second pass.
Result<uint64_t> decodeRegionPieces(const Region &r, const Payload &payload, RegionDecoder &decoder, ByteSink &sink);

/// Decodes one region of `c` alone (its literals validated first) and checks it against its
/// digest where it carries one, as runCheckpoint does.
Result<void> runRegion(const Checkpoint &c, const Region &r, const Payload &payload, RegionDecoder &decoder,
                       ByteSink &sink, const CheckpointCheck &check = {});

/// Validates the payload, prepares the decoder, decodes every region and verifies the result:
/// the size and checksum of the whole, and the digest of each region that carries one (an error
/// then names the region and carries its location). With `regionDigests`, every region's
/// digest (regionDigest of its bytes) is appended there: what an archive's index needs for a
/// program that comes without one.
Result<void> runCheckpoint(const Checkpoint &c, const Payload &payload, RegionDecoder &decoder, ByteSink &sink,
                           std::vector<uint64_t> *regionDigests = nullptr, const CheckpointCheck &check = {});

} // namespace brevis
