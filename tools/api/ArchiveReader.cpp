#include "tools/api/ArchiveReader.h"

#include "lang/Printer.h"
#include "runtime/containers/Safetensors.h"
#include "runtime/execution/DeclarationCheck.h"
#include "runtime/execution/Interpreter.h"
#include "runtime/execution/ParallelDecode.h"
#include "tools/api/Decoding.h"
#include "tools/api/ProgramText.h"

#include <fmt/format.h>

namespace brevis {

namespace {

/// A member's tensor declarations held to the safetensors header its program rebuilds: reading a
/// tensor by name (run --tensor, readTensor, the Python package) trusts them, and the regions'
/// digests check bytes, not names, so an archive whose program swapped two names would verify
/// and hand out the other tensor. Decoding a whole member needs no names (its bytes are checked
/// region by region), and parsing the header there was half the time of opening an archive of
/// 50,000 tensors: the check is made when a tensor is first read, once per member.
Result<void> checkMemberDeclarations(const Checkpoint &c, const ArchiveMember &m, const std::string &path) {
  const Region *h = headerRegion(c);
  if (!h) return {};
  auto corrupt = [&](const std::string &what) { return Error{fmt::format("{} is corrupt: member {}: {}", path, m.path, what)}; };
  if (h->bytes.size > kMaxSafetensorsHeader + 8)
    return corrupt(fmt::format("its header region has {} bytes, more than a safetensors header may", h->bytes.size));
  auto header = evaluate(*h->program, m.payload);
  if (!header) return corrupt("its header region: " + header.error().message);
  if (std::vector<Error> errors = checkDeclarations(c, *header); !errors.empty())
    return corrupt(fmt::format("its program, line {}: {}", errors.front().loc.line, errors.front().message));
  return {};
}

} // namespace

Result<ArchiveReader> ArchiveReader::open(const std::string &path, ArchiveReadOptions options,
                                          std::string *diagnostics) {
  auto file = MappedFile::open(path);
  if (!file) return file.error();
  return open(*file, path, options, diagnostics);
}

Result<ArchiveReader> ArchiveReader::open(std::shared_ptr<const MappedFile> file, const std::string &path,
                                          ArchiveReadOptions options, std::string *diagnostics) {
  auto archive = readArchive(std::move(file), path, options);
  if (!archive) return archive.error();
  ArchiveReader reader;
  reader.path_ = path;
  for (ArchiveMember &m : archive->members) {
    std::string name = archive->directory ? path + ":" + m.path : path + ":program";
    std::string diags;
    auto module = parseProgram(name, m.programText, /*requireRunnable=*/true, diags);
    if (diagnostics) *diagnostics += diags;
    if (!module)
      return Error{fmt::format("{} holds a program that does not check{}", name, diagnostics ? "" : ":\n" + diags)};
    if (!module->isCheckpoint()) return Error{fmt::format("{} holds a single expression, not a checkpoint program", name)};
    BREVIS_TRY(checkMemberProgram(module->checkpoint(), m, path));
    reader.modules_.push_back(std::move(*module));
  }
  reader.archive_ = std::move(*archive);
  return reader;
}

uint64_t ArchiveReader::originalSize() const {
  uint64_t total = 0;
  for (const auto &m : archive_.members) total += m.sourceSize;
  return total;
}

uint64_t ArchiveReader::payloadSize() const {
  uint64_t total = 0;
  for (const auto &m : archive_.members) total += m.payload.size();
  return total;
}

std::vector<TensorInfo> ArchiveReader::tensors() const {
  std::vector<TensorInfo> out;
  for (size_t m = 0; m < memberCount(); ++m)
    for (size_t r = 0; r < checkpoint(m).regions.size(); ++r) {
      const Region &region = checkpoint(m).regions[r];
      if (region.kind != RegionKind::Tensor) continue;
      out.push_back(TensorInfo{m, r, member(m).path, region.name, region.dtype, region.shape, region.bytes.size});
    }
  return out;
}

Result<TensorInfo> ArchiveReader::findTensor(const std::string &name) const {
  std::optional<TensorInfo> found;
  for (TensorInfo &t : tensors()) {
    if (t.name != name) continue;
    if (found)
      return Error{fmt::format("{} has tensor {} in both {} and {}", path_, quoteString(name), found->file, t.file)};
    found = std::move(t);
  }
  if (!found) return Error{fmt::format("{} has no tensor {}", path_, quoteString(name))};
  return *found;
}

namespace {
/// Positional writes of one region, shifted to start at byte 0.
class ShiftedSink final : public PositionalSink {
public:
  ShiftedSink(PositionalSink &out, uint64_t base) : out_(out), base_(base) {}
  Result<void> writeAt(uint64_t offset, const uint8_t *data, size_t size) override {
    return out_.writeAt(offset - base_, data, size);
  }
  uint8_t *memoryAt(uint64_t offset, size_t size) override { return out_.memoryAt(offset - base_, size); }

private:
  PositionalSink &out_;
  uint64_t base_;
};
} // namespace

DecodeJob ArchiveReader::decodeJob(size_t i, PositionalSink &output) const {
  DecodeJob job{&checkpoint(i), &payload(i), digests(i), &output,
                archive_.directory ? path_ + ":" + member(i).path : path_, {}};
  job.pieceHashes = member(i).pieceHashes;
  return job;
}

Result<void> ArchiveReader::declarationsHold(size_t member) const {
  std::lock_guard lock(declarations_->mutex);
  if (declarations_->checked.size() != memberCount()) declarations_->checked.assign(memberCount(), std::nullopt);
  std::optional<std::string> &known = declarations_->checked[member];
  if (!known) {
    Result<void> held = checkMemberDeclarations(checkpoint(member), archive_.members[member], path_);
    known = held ? std::string() : held.error().message;
  }
  if (!known->empty()) return Error{*known};
  return {};
}

Result<void> ArchiveReader::readTensor(const TensorInfo &t, PositionalSink &sink, const DecodeOptions &options) const {
  BREVIS_TRY(declarationsHold(t.member));
  ShiftedSink shifted(sink, checkpoint(t.member).regions[t.region].bytes.offset);
  DecodeJob job = decodeJob(t.member, shifted);
  job.onlyRegions = {t.region};
  return decodeJobs(std::span(&job, 1), options);
}

ByteRange ArchiveReader::tensorPartToDecode(const TensorInfo &t, ByteRange part) const {
  DiscardPositionalSink none;
  DecodeJob job = decodeJob(t.member, none);
  job.onlyRegions = {t.region};
  job.onlyBytes = part;
  const Region &r = checkpoint(t.member).regions[t.region];
  const auto [first, end] = piecesToDecode(job, r);
  const uint64_t begin = first * kDigestPieceBytes;
  return ByteRange{begin, std::min(r.bytes.size, end * kDigestPieceBytes) - std::min(begin, r.bytes.size)};
}

Result<void> ArchiveReader::readTensorPart(const TensorInfo &t, ByteRange part, PositionalSink &sink,
                                           const DecodeOptions &options) const {
  BREVIS_TRY(declarationsHold(t.member));
  const ByteRange decoded = tensorPartToDecode(t, part);
  if (decoded.size == 0) return {};
  ShiftedSink shifted(sink, checkpoint(t.member).regions[t.region].bytes.offset + decoded.offset);
  DecodeJob job = decodeJob(t.member, shifted);
  job.onlyRegions = {t.region};
  job.onlyBytes = part;
  return decodeJobs(std::span(&job, 1), options);
}

Result<Bytes> ArchiveReader::readTensor(const std::string &name, const DecodeOptions &options) const {
  auto t = findTensor(name);
  if (!t) return t.error();
  Bytes out(t->bytes);
  VectorPositionalSink sink(out);
  BREVIS_TRY(readTensor(*t, sink, options));
  return out;
}

} // namespace brevis
