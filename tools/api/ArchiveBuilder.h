#pragma once
// Writing `.brv` archives, verified: the one way brevisc's compress and pack, the benchmark and
// programs embedding Brevis make an archive. Bit-exact or nothing: a member is written only after
// its printed program has been parsed back, type-checked and decoded to bytes matching the
// original's digests.
//
//   auto builder = brevis::ArchiveBuilder::create("model.safetensors.brv", /*overwrite=*/false);
//   (*builder)->add(member, options);   // once per file
//   (*builder)->finish(/*directory=*/false);
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/containers/Archive.h"
#include "runtime/containers/FileIO.h"
#include "runtime/containers/Payload.h"
#include "runtime/execution/DecodeOptions.h"

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace brevis {

/// One file of an archive to be written: its checkpoint program, payload and region digests.
struct MemberSource {
  std::string path; ///< relative, '/'-separated
  Checkpoint checkpoint;
  Payload payload;               ///< empty if streamed
  std::vector<uint64_t> digests; ///< regionDigest of each region's original bytes
  /// The payload went to the archive already, part by part (ArchiveBuilder::appendPayload).
  bool streamed = false;
};

/// The digests an archive's index holds for `c`, from the original file's bytes.
std::vector<uint64_t> regionDigests(const Checkpoint &c, ByteSpan file);
/// The same for a program that comes without its original (`pack`), by decoding it sequentially,
/// checked against the program's source checksum.
/// `original` (empty if not at hand) locates a region that does not rebuild it (CheckpointCheck).
Result<std::vector<uint64_t>> regionDigestsByDecoding(const Checkpoint &c, const Payload &payload,
                                                      ByteSpan original = {});

class ArchiveBuilder {
public:
  /// Writes to a temporary file beside `path`, renamed into place by finish().
  static Result<std::unique_ptr<ArchiveBuilder>> create(const std::string &path, bool overwrite);
  /// Onto an output already open; fails unless it takes positional writes.
  static Result<std::unique_ptr<ArchiveBuilder>> create(std::unique_ptr<OutputFile> output);
  /// Onto any positional sink (in memory, for instance), which must outlive the builder.
  explicit ArchiveBuilder(PositionalSink &output) : writer_(output) {}

  /// Verifies the member (decoding as `options` say) and appends its payload. A streamed
  /// member's payload is the bytes appended since the last member, verified as written.
  Result<void> add(const MemberSource &member, const DecodeOptions &options);
  /// Whether the next member's payload may be streamed: written part by part as it is made,
  /// then read back from the archive to be verified, so that it is never held whole in memory.
  bool canStream() const { return writer_.canReadBack(); }
  /// The next part of the next member's payload (canStream()).
  Result<void> appendPayload(ByteSpan part);
  /// Writes the metadata and, for a file, renames it into place; returns the archive's size.
  Result<uint64_t> finish(bool directory);

private:
  explicit ArchiveBuilder(std::unique_ptr<OutputFile> out) : file_(std::move(out)), writer_(*file_) {}
  std::unique_ptr<OutputFile> file_; ///< null when writing to a caller's sink
  ArchiveWriter writer_;
  std::vector<ArchiveMember> members_;
  std::optional<ByteRange> streamed_; ///< the parts appended for the next member
  /// The first member's text packed as the program section (packProgramText) on a thread of its
  /// own while the member is verified, where threads are given: what finish() writes where that
  /// member is the only one. Done at the end, it was a serial 45 ms on a checkpoint of 145
  /// tensors with channel constants (232 KB of text), the other thread idle.
  std::future<Bytes> packedFirst_;
};

} // namespace brevis
