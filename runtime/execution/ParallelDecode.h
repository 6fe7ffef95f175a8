#pragma once
// Decoding whole checkpoints on several threads. The work is split into pieces: every region,
// cut at multiples of kDigestPieceBytes of its output, so that many small tensors and one huge
// one both spread over the threads. Each piece is decoded straight to its place in the output
// (positional writes, memory bounded by one chunk per thread) and hashed where it is produced;
// runs of small consecutive pieces are one thread's task and one write, not one each;
// the pieces' hashes make each region's digest, compared with the archive index. The output is
// the same for any thread count; with one thread pieces are produced in file order, so the
// output may be a pipe.
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/execution/ByteSink.h"
#include "runtime/execution/DecodeOptions.h"
#include "runtime/containers/Payload.h"
#include "runtime/execution/RegionDecoder.h"

#include <atomic>
#include <optional>
#include <utility>
#include <span>
#include <string>
#include <vector>

namespace brevis {

/// One file to rebuild: its program, payload, expected region digests and destination.
struct DecodeJob {
  DecodeJob(const Checkpoint *checkpoint, const Payload *payload, std::span<const uint64_t> digests,
            PositionalSink *output, std::string label, std::vector<size_t> onlyRegions = {})
      : checkpoint(checkpoint), payload(payload), digests(digests), output(output), label(std::move(label)),
        onlyRegions(std::move(onlyRegions)) {}

  const Checkpoint *checkpoint = nullptr;
  const Payload *payload = nullptr;
  std::span<const uint64_t> digests; ///< one per region (regionDigest of the original bytes)
  PositionalSink *output = nullptr;
  std::string label; ///< names the file in messages
  /// Only these regions (indices into checkpoint->regions); all when empty.
  std::vector<size_t> onlyRegions;
  /// With onlyRegions naming one region of more than one piece, and the index's piece hashes
  /// (version 6): only the pieces that hold its bytes [offset, offset + size) are decoded, each
  /// checked against its hash. Otherwise the whole region is.
  std::optional<ByteRange> onlyBytes;
  /// The index's hashes of the pieces of each region of more than one piece, in region order
  /// (ArchiveMember::pieceHashes); empty in archives older than version 6.
  std::span<const uint64_t> pieceHashes;
  /// If set, receives those hashes of the decoded bytes, as the index holds them (a whole job).
  std::vector<uint64_t> *pieceHashesOut = nullptr;
};

/// The pieces of a region decodeJobs decodes for `job.onlyBytes` (all of them without it):
/// [first, end) in units of kDigestPieceBytes.
std::pair<uint64_t, uint64_t> piecesToDecode(const DecodeJob &job, const Region &region);

/// Validates every literal the jobs' regions read (on the threads), prepares the decoder for each
/// job, decodes every piece and checks every region's digest. The first failure in file order
/// is reported, naming the file and region.
Result<void> decodeJobs(std::span<const DecodeJob> jobs, RegionDecoder &decoder, const DecodeOptions &options);

/// A label for a region in messages: "tensor NAME", "the header", "the bytes at @O+S".
std::string regionLabel(const Region &r);

} // namespace brevis
