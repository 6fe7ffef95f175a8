#include "tools/api/ArchiveReader.h"

#include "lang/Printer.h"
#include "runtime/containers/Safetensors.h"
#include "runtime/execution/DeclarationCheck.h"
#include "runtime/execution/Interpreter.h"
#include "runtime/execution/ParallelDecode.h"
#include "tools/api/Decoding.h"
#include "tools/api/ProgramText.h"

#include <fmt/format.h>

#include <algorithm>

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

namespace {
/// Positional writes of the bytes [base, base + size) of a member, shifted to start at byte 0:
/// a region, or a part of one. The other bytes of the pieces decoded (a tensor inside a region
/// of bytes shares them with its neighbours) are dropped; a range inside the window is decoded
/// in place where `out` keeps memory.
class WindowSink final : public PositionalSink {
public:
  WindowSink(PositionalSink &out, uint64_t base, uint64_t size) : out_(out), base_(base), end_(base + size) {}
  Result<void> writeAt(uint64_t offset, const uint8_t *data, size_t size) override {
    const uint64_t from = std::max(offset, base_), to = std::min(offset + size, end_);
    if (from >= to) return {};
    return out_.writeAt(from - base_, data + (from - offset), to - from);
  }
  uint8_t *memoryAt(uint64_t offset, size_t size) override {
    return offset >= base_ && offset + size <= end_ ? out_.memoryAt(offset - base_, size) : nullptr;
  }

private:
  PositionalSink &out_;
  uint64_t base_, end_;
};
} // namespace

Result<Bytes> ArchiveReader::header(size_t m, const DecodeOptions &options) const {
  const Checkpoint &c = checkpoint(m);
  const Region *h = headerRegion(c);
  if (!h) return Bytes();
  Bytes out(h->bytes.size);
  VectorPositionalSink sink(out);
  WindowSink window(sink, h->bytes.offset, h->bytes.size);
  DecodeJob job = decodeJob(m, window);
  job.onlyRegions = {static_cast<size_t>(h - c.regions.data())};
  BREVIS_TRY(decodeJobs(std::span(&job, 1), options));
  return out;
}

std::vector<TensorInfo> ArchiveReader::opaqueTensors(size_t m) const {
  // Only a header kept as text can list them: one written as the list of the tensors
  // (`safetensors(…)`) lists the tensor regions, and these are not.
  const Checkpoint &c = checkpoint(m);
  const Region *h = headerRegion(c);
  if (!h || h->index || h->bytes.size > kMaxSafetensorsHeader + 8) return {};
  std::lock_guard lock(opaque_->mutex);
  if (opaque_->members.size() != memberCount()) opaque_->members.assign(memberCount(), std::nullopt);
  std::optional<std::vector<TensorInfo>> &known = opaque_->members[m];
  if (known) return *known;
  known.emplace();
  auto bytes = header(m);
  if (!bytes) return {}; // reading a tensor then says why
  auto layout = parseSafetensorsHeader(*bytes, c.source.size);
  if (!layout) return {};
  for (const TensorEntry &t : layout->opaque) {
    // The region of bytes holding it; an empty one, any region where it is.
    const bool empty = t.end == t.begin;
    auto holds = [&](const Region &r) {
      return r.bytes.offset <= t.begin && t.end <= r.bytes.offset + r.bytes.size &&
             (r.kind == RegionKind::Bytes || empty);
    };
    auto holder = std::find_if(c.regions.begin(), c.regions.end(), holds);
    // A tensor across two regions of bytes (a program written so by hand) is not one to read.
    if (holder == c.regions.end()) continue;
    known->push_back(TensorInfo{m, static_cast<size_t>(holder - c.regions.begin()), member(m).path, t.name, DType::U8,
                                t.shape, t.end - t.begin, t.opaqueDtype, t.begin - holder->bytes.offset});
  }
  return *known;
}

std::vector<TensorInfo> ArchiveReader::tensors() const {
  std::vector<TensorInfo> out;
  for (size_t m = 0; m < memberCount(); ++m) {
    const size_t first = out.size();
    for (size_t r = 0; r < checkpoint(m).regions.size(); ++r) {
      const Region &region = checkpoint(m).regions[r];
      if (region.kind != RegionKind::Tensor) continue;
      out.push_back(TensorInfo{m, r, member(m).path, region.name, region.dtype, region.shape, region.bytes.size, {}, 0});
    }
    std::vector<TensorInfo> opaque = opaqueTensors(m);
    if (opaque.empty()) continue;
    out.insert(out.end(), std::make_move_iterator(opaque.begin()), std::make_move_iterator(opaque.end()));
    auto start = [&](const TensorInfo &t) { return checkpoint(m).regions[t.region].bytes.offset + t.offset; };
    std::stable_sort(out.begin() + static_cast<ptrdiff_t>(first), out.end(),
                     [&](const TensorInfo &a, const TensorInfo &b) {
                       // An empty tensor before one that starts where it is, as the header has it.
                       return start(a) != start(b) ? start(a) < start(b) : a.bytes < b.bytes;
                     });
  }
  return out;
}

Result<TensorInfo> ArchiveReader::findTensor(const std::string &name, const std::optional<std::string> &file) const {
  if (file && !archive_.directory) return Error{fmt::format("{} is an archive of one file, not a directory", path_)};
  if (file && std::none_of(archive_.members.begin(), archive_.members.end(),
                           [&](const ArchiveMember &m) { return m.path == *file; }))
    return Error{fmt::format("{} has no file {}", path_, quoteString(*file))};
  std::optional<TensorInfo> found;
  for (TensorInfo &t : tensors()) {
    if (t.name != name || (file && t.file != *file)) continue;
    if (found)
      return Error{fmt::format("{} has tensor {} in both {} and {}", path_, quoteString(name),
                               quoteString(found->file), quoteString(t.file))};
    found = std::move(t);
  }
  if (!found)
    return Error{file ? fmt::format("{} has no tensor {} in {}", path_, quoteString(name), quoteString(*file))
                      : fmt::format("{} has no tensor {}", path_, quoteString(name))};
  return *found;
}


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
  if (!t.opaqueDtype.empty()) return readTensorPart(t, ByteRange{0, t.bytes}, sink, options);
  BREVIS_TRY(declarationsHold(t.member));
  const Region &r = checkpoint(t.member).regions[t.region];
  WindowSink window(sink, r.bytes.offset, r.bytes.size);
  DecodeJob job = decodeJob(t.member, window);
  job.onlyRegions = {t.region};
  return decodeJobs(std::span(&job, 1), options);
}

ByteRange ArchiveReader::tensorPartToDecode(const TensorInfo &t, ByteRange part) const {
  DiscardPositionalSink none;
  DecodeJob job = decodeJob(t.member, none);
  job.onlyRegions = {t.region};
  job.onlyBytes = ByteRange{t.offset + part.offset, part.size};
  const Region &r = checkpoint(t.member).regions[t.region];
  const auto [first, end] = piecesToDecode(job, r);
  // Pieces of the region, as bytes of the tensor (one inside a region of bytes keeps its own).
  const uint64_t begin = std::clamp(first * kDigestPieceBytes, t.offset, t.offset + t.bytes);
  const uint64_t stop = std::clamp(end * kDigestPieceBytes, t.offset, t.offset + t.bytes);
  return ByteRange{begin - t.offset, stop - begin};
}

Result<void> ArchiveReader::readTensorPart(const TensorInfo &t, ByteRange part, PositionalSink &sink,
                                           const DecodeOptions &options) const {
  BREVIS_TRY(declarationsHold(t.member));
  const ByteRange decoded = tensorPartToDecode(t, part);
  if (decoded.size == 0) return {};
  WindowSink window(sink, checkpoint(t.member).regions[t.region].bytes.offset + t.offset + decoded.offset,
                    decoded.size);
  DecodeJob job = decodeJob(t.member, window);
  job.onlyRegions = {t.region};
  job.onlyBytes = ByteRange{t.offset + part.offset, part.size};
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
