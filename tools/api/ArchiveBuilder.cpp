#include "tools/api/ArchiveBuilder.h"

#include "lang/Printer.h"
#include "runtime/containers/Checksum.h"
#include "tools/api/Decoding.h"
#include "tools/api/ProgramText.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <system_error>

namespace brevis {

std::vector<uint64_t> regionDigests(const Checkpoint &c, ByteSpan file) {
  std::vector<uint64_t> digests;
  digests.reserve(c.regions.size());
  for (const Region &r : c.regions) digests.push_back(regionDigest(file.subspan(r.bytes.offset, r.bytes.size)));
  return digests;
}

Result<std::vector<uint64_t>> regionDigestsByDecoding(const Checkpoint &c, const Payload &payload,
                                                      ByteSpan original) {
  std::vector<uint64_t> digests;
  DiscardSink discard;
  BREVIS_TRY(decodeCheckpoint(c, payload, DecodeOptions{}, discard, &digests, CheckpointCheck{true, original}));
  return digests;
}

namespace {

Error notSeekable(const std::string &path) {
  return Error{fmt::format("cannot write an archive to {}: an archive is written with seeks (its header last), "
                           "so it needs a file written from its start, not a pipe or a file opened for appending",
                           path)};
}

} // namespace

Result<std::unique_ptr<ArchiveBuilder>> ArchiveBuilder::create(const std::string &path, bool overwrite) {
  // A named pipe is refused before its open, which would wait for a reader only to refuse it then.
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return notSeekable(path);
  auto out = OutputFile::create(path, overwrite);
  if (!out) return out.error();
  return create(std::move(*out));
}

Result<std::unique_ptr<ArchiveBuilder>> ArchiveBuilder::create(std::unique_ptr<OutputFile> out) {
  if (!out->isPositional()) return notSeekable(out->path());
  return std::unique_ptr<ArchiveBuilder>(new ArchiveBuilder(std::move(out)));
}

Result<void> ArchiveBuilder::add(const MemberSource &m, const DecodeOptions &options) {
  ArchiveMember entry;
  entry.path = m.path;
  entry.sourceSize = m.checkpoint.source.size;
  entry.sourceXxh64 = m.checkpoint.source.xxh64;
  entry.programText = printCheckpoint(m.checkpoint, CheckpointForm::Archive);
  entry.digests = m.digests;
  // What is written is the printed text, parsed back and decoded as decompression will.
  std::string diagnostics;
  auto module = parseProgram(m.path + ".bdsl", entry.programText, /*requireRunnable=*/true, diagnostics);
  if (!module) return Error{fmt::format("internal error: the program for {} does not check:\n{}", m.path, diagnostics)};
  if (members_.empty()) { // a first member, or one after a first that failed: nothing packed yet holds
    packedFirst_ = {};
    if (options.threads > 1) {
      try {
        packedFirst_ = std::async(std::launch::async, [text = entry.programText] { return packProgramText(text); });
      } catch (const std::system_error &) {
        // No thread to be had: finish() packs the text itself.
      }
    }
  }
  // A streamed payload is decoded from the archive itself; another is written once it decodes.
  Payload written;
  if (m.streamed) {
    entry.payloadRange = streamed_.value_or(ByteRange{writer_.payloadSize(), 0});
    streamed_.reset();
    if (entry.payloadRange.size > 0) {
      auto back = writer_.readPayloadBack(entry.payloadRange);
      if (!back) return back.error();
      written = std::move(*back);
    }
  }
  const Payload &payload = m.streamed ? written : m.payload;
  DiscardPositionalSink sink;
  DecodeJob job{&module->checkpoint(), &payload, m.digests, &sink, m.path, {}};
  job.pieceHashesOut = &entry.pieceHashes; // of the bytes that matched the digests
  if (auto ok = decodeJobs(std::span(&job, 1), options); !ok)
    return Error{m.streamed ? "the archive as written does not decode to the input (a fault of the storage, or an "
                              "internal error): " + ok.error().message
                            : "internal error: the synthesized program does not reproduce the input: " +
                                  ok.error().message};
  if (!m.streamed) {
    auto range = writer_.appendPayload(ByteSpan(m.payload.data(), m.payload.size()));
    if (!range) return range.error();
    entry.payloadRange = *range;
  }
  members_.push_back(std::move(entry));
  return {};
}

Result<void> ArchiveBuilder::appendPayload(ByteSpan part) {
  if (!canStream()) return Error{"internal error: this archive's output cannot take a streamed payload"};
  auto range = writer_.appendPayload(part);
  if (!range) return range.error();
  if (!streamed_) streamed_ = ByteRange{range->offset, 0};
  streamed_->size += range->size;
  return {};
}

Result<uint64_t> ArchiveBuilder::finish(bool directory) {
  std::optional<Bytes> packed;
  if (packedFirst_.valid()) packed = packedFirst_.get(); // waited for in any case: it reads no member
  auto size = writer_.finish(members_, directory, members_.size() == 1 ? std::move(packed) : std::nullopt);
  if (!size) return size.error();
  if (file_) BREVIS_TRY(file_->commit());
  return *size;
}

} // namespace brevis
