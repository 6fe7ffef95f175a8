#pragma once
// The `.brv` archive, version 7 (docs/format/archive.md): member files, each with its program
// text, its index (a digest per region, and the hashes of the pieces of each large region), and
// the literal payloads; a checksum of the front part (everything but the payload) and one of the
// whole file.
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/execution/ByteSink.h"
#include "runtime/common/Bytes.h"
#include "runtime/containers/Checksum.h"
#include "runtime/containers/FileIO.h"
#include "runtime/containers/Payload.h"

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace brevis {

inline constexpr uint32_t kArchiveVersion = 7;
/// The oldest version this reader reads: versions 3 to 6 differ only in lacking encodings, text
/// literals, piece hashes and the program text's archive form (lang/Printer.h).
inline constexpr uint32_t kOldestReadableArchiveVersion = 3;
inline constexpr size_t kArchiveHeaderSize = 72;
inline constexpr size_t kArchiveIndexEntrySize = 8; ///< one region digest or piece hash
/// The first version whose index holds piece hashes.
inline constexpr uint32_t kPieceHashesArchiveVersion = 6;
/// Program text larger than this is refused on reading: the parsed program costs several times
/// the memory of its text, so a small archive must not be able to declare more. A program of
/// 200,000 tensors in the synthesizer's usual form is about 50 MB.
inline constexpr uint64_t kMaxProgramTextSize = uint64_t{64} << 20;
inline constexpr uint64_t kMaxMemberTableSize = uint64_t{64} << 20;
inline constexpr size_t kMaxMemberPath = 4096;
/// The writer hands an archive to its output in whole blocks of this many bytes at offsets that
/// are multiples of it (a write for each block gathered, one for a large payload's run of whole
/// blocks; only the block being filled when the payload is read back, and the last, are written
/// short). Linux keeps a file written so in page-cache folios of that
/// size, which a reader maps with one fault each: a file written a region at a time is kept in
/// 4 KiB pages, and on virtual machines each first touch of a mapped page costs microseconds
/// (decoding a checkpoint of 4,000 small tensors from its archive: a tenth of the time).
inline constexpr size_t kArchiveWriteBlock = size_t{2} << 20;

struct ArchiveMember {
  std::string path; ///< relative, '/'-separated
  uint64_t sourceSize = 0;
  uint64_t sourceXxh64 = 0;
  std::string programText;
  std::vector<uint64_t> digests; ///< the index: regionDigest() of each region's original bytes
  /// The index, version 6: the hashes of the pieces (kDigestPieceBytes) of each region of more
  /// than one piece, in region order, so that a part of a large tensor can be decoded and
  /// checked alone. Empty in older versions. On reading, `digests` holds every index entry of
  /// the member until checkMemberProgram() splits them.
  std::vector<uint64_t> pieceHashes;
  bool indexHasPieceHashes = true; ///< read: the archive's version has them
  ByteRange payloadRange; ///< within the payload section
  Payload payload;        ///< read: a view into the archive (unused by the writer)
};

struct Archive {
  bool directory = false;
  std::vector<ArchiveMember> members;
  uint64_t fileSize = 0;
};

/// Writes an archive in one pass: payloads stream out as members are ready; the metadata goes at
/// the end and the header is written in place last (the output must take positional writes).
/// The zstd level of the program section up to kProgramZstdLevelMaxText of text; larger texts
/// get kProgramZstdLargeLevel. zstd 19 ran at 1.7 MB/s on program text (a checkpoint of 146
/// tensors with channel constants), 15 at 3.4 MB/s, 9 at 33 MB/s: on that checkpoint's 222 KB
/// of text 15 took 66 ms and 9 took 7 ms, for 4.9 KB more in an 88.5 MB archive; on the 723 KB
/// of 4,237 small tensors at level 1, 47 ms (a tenth of their compression) against 12 ms, for
/// 3.3 KB more. Over the corpus, whose texts are mostly below the limit, 9 above it costs 0.9 KB.
/// The level depends on the text alone, not the compression level, so that unpacking and
/// packing an archive gives it back byte for byte (with this rule: an archive packed by an
/// earlier rule comes back with its program section packed by this one).
inline constexpr int kProgramZstdLevel = 15;
inline constexpr size_t kProgramZstdLevelMaxText = size_t{64} << 10;
inline constexpr int kProgramZstdLargeLevel = 9;

/// The program section: the members' texts, one after another, compressed by zstd at the level
/// for their size.
Bytes packProgramText(std::string_view texts);

class ArchiveWriter {
public:
  explicit ArchiveWriter(PositionalSink &out) : out_(out) {}
  /// Appends a member's payload, or the next part of it; returns its range in the payload
  /// section (consecutive calls give consecutive ranges).
  Result<ByteRange> appendPayload(ByteSpan payload);
  /// The payload section's size so far.
  uint64_t payloadSize() const { return payloadSize_; }
  /// Whether readPayloadBack() works: the output keeps what it is given where it can be read.
  bool canReadBack() const { return out_.canReadBack(); }
  /// The payload bytes of `range` (from appendPayload) as written, followed by kPayloadSlack
  /// readable bytes: what decoding the archive will read.
  Result<Payload> readPayloadBack(ByteRange range);
  /// Writes the padding, the metadata of `members` (their payloadRange from appendPayload) and
  /// the header. Returns the archive's size. `packedProgram`, where given, is
  /// packProgramText(the members' texts), made ahead.
  Result<uint64_t> finish(const std::vector<ArchiveMember> &members, bool directory,
                          std::optional<Bytes> packedProgram = std::nullopt);

private:
  /// Appends bytes at at_, gathered into the blocks of kArchiveWriteBlock.
  Result<void> put(ByteSpan bytes);
  /// Writes the block gathered so far.
  Result<void> flush();
  PositionalSink &out_;
  uint64_t at_ = 0;
  Bytes block_; ///< bytes [at_ - block_.size(), at_), not yet written
  uint64_t payloadSize_ = 0;
  bool started_ = false;
  std::unique_ptr<Xxh3Stream> payloadHash_;
};

struct ArchiveReadOptions {
  /// Also verify the trailing checksum, which reads every byte of the file.
  bool verifyWholeFile = false;
};

/// Reads and checks an archive's framing, member table, index and metadata checksum (steps 1–5
/// of docs/format/archive.md); payloads are views into `file`. `name` is used in messages.
Result<Archive> readArchive(std::shared_ptr<const MappedFile> file, const std::string &name,
                            ArchiveReadOptions options = {});

/// The trailing checksum over the whole archive (the header's and index's checksum and the
/// payload's): reads every payload byte. `a` must be an archive readArchive accepted.
Result<void> checkArchiveChecksum(ByteSpan a, const std::string &name);

/// Step 6 of docs/format/archive.md: the parsed program of `m` agrees with its member entry and
/// index, whose entries it splits into `digests` and `pieceHashes` (each large region's piece
/// hashes checked against its digest). `name` is used in messages.
Result<void> checkMemberProgram(const Checkpoint &c, ArchiveMember &m, const std::string &name);

/// Whether a member path is acceptable: relative, '/'-separated, no empty, "." or ".." parts.
bool isValidMemberPath(const std::string &path);

/// The 8 bytes every archive starts with.
ByteSpan archiveMagic();
/// True if the bytes start with the archive magic.
bool looksLikeArchive(ByteSpan bytes);

} // namespace brevis
