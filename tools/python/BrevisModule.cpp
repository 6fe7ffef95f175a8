// brevis._brevis: the C++ side of the Python package (docs/python.md). Thin bindings over the
// library interface (tools/api): open an archive, list its tensors, decode tensors straight into
// buffers the caller allocated (numpy arrays), compress and decompress files. Everything that
// decodes or compresses releases the GIL; the Python files of the package shape the API like
// safetensors'.
#include "lang/DType.h"
#include "lang/Printer.h"
#include "runtime/containers/Archive.h"
#include "runtime/containers/FileIO.h"
#include "tools/api/ArchiveReader.h"
#include "tools/api/Compression.h"
#include "tools/api/Decoding.h"
#include "tools/api/Explanation.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace py = pybind11;

namespace brevis {
namespace {

/// Every library error reaches Python as brevis.BrevisError with the library's message.
struct BrevisError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename T> T valueOr(Result<T> r) {
  if (!r) throw BrevisError(r.error().message);
  return std::move(*r);
}
void check(const Result<void> &r) {
  if (!r) throw BrevisError(r.error().message);
}

unsigned threadsFor(unsigned requested) {
  return requested ? requested : std::max(1u, std::thread::hardware_concurrency());
}

/// A writable contiguous buffer of the caller's (a numpy array), checked to hold `bytes`.
uint8_t *writableBuffer(const py::buffer &buffer, uint64_t bytes, const std::string &what) {
  py::buffer_info info = buffer.request(/*writable=*/true);
  const uint64_t size = static_cast<uint64_t>(info.size) * static_cast<uint64_t>(info.itemsize);
  if (size != bytes)
    throw BrevisError(fmt::format("the buffer for {} holds {} bytes; it needs {}", what, size, bytes));
  bool contiguous = true;
  ssize_t stride = info.itemsize;
  for (ssize_t d = info.ndim - 1; d >= 0; --d) {
    if (info.shape[d] > 1 && info.strides[d] != stride) contiguous = false;
    stride *= info.shape[d];
  }
  if (!contiguous) throw BrevisError(fmt::format("the buffer for {} is not C-contiguous", what));
  return static_cast<uint8_t *>(info.ptr);
}

/// Positional writes of a member's file scattered to the tensors' own buffers: each tensor's
/// bytes go to its buffer; other bytes are dropped.
class ScatterSink final : public PositionalSink {
public:
  struct Target {
    uint64_t begin = 0, size = 0;
    uint8_t *data = nullptr;
  };
  explicit ScatterSink(std::vector<Target> targets) : targets_(std::move(targets)) {
    // Empty tensors take no bytes; without them no two targets start at one offset.
    std::erase_if(targets_, [](const Target &t) { return t.size == 0; });
    std::sort(targets_.begin(), targets_.end(), [](const Target &a, const Target &b) { return a.begin < b.begin; });
  }
  Result<void> writeAt(uint64_t offset, const uint8_t *data, size_t size) override {
    // A write may cover several regions (small ones are decoded together) and bytes no target
    // wants (the header): each target takes its part.
    const uint64_t end = offset + size;
    auto t = std::upper_bound(targets_.begin(), targets_.end(), offset,
                              [](uint64_t at, const Target &target) { return at < target.begin; });
    if (t != targets_.begin()) --t;
    for (; t != targets_.end() && t->begin < end; ++t) {
      const uint64_t from = std::max(offset, t->begin), to = std::min(end, t->begin + t->size);
      if (from < to) std::memcpy(t->data + (from - t->begin), data + (from - offset), to - from);
    }
    return {};
  }

  /// A range inside one tensor's buffer: decoded there in place.
  uint8_t *memoryAt(uint64_t offset, size_t size) override {
    auto t = std::upper_bound(targets_.begin(), targets_.end(), offset,
                              [](uint64_t at, const Target &target) { return at < target.begin; });
    if (t == targets_.begin()) return nullptr;
    --t;
    return offset + size <= t->begin + t->size ? t->data + (offset - t->begin) : nullptr;
  }

private:
  std::vector<Target> targets_;
};

class PyArchive {
public:
  explicit PyArchive(const std::string &path) {
    auto file = MappedFile::open(path);
    if (!file) throw BrevisError(file.error().message);
    file_ = *file;
    reader_ = std::make_unique<ArchiveReader>(valueOr(ArchiveReader::open(file_, path)));
    tensors_ = reader_->tensors();
    // Per member, the regions its tensors lie in (a region of bytes may hold several).
    std::vector<std::vector<size_t>> regions(reader_->memberCount());
    for (const TensorInfo &t : tensors_) regions[t.member].push_back(t.region);
    for (auto &r : regions) {
      std::sort(r.begin(), r.end());
      tensorRegions_.push_back(static_cast<size_t>(std::unique(r.begin(), r.end()) - r.begin()));
    }
  }

  std::string path() const { return reader_->path(); }
  size_t memberCount() const { return reader_->memberCount(); }
  bool isDirectory() const { return reader_->isDirectory(); }
  /// Whether member `m` was a safetensors file when compressed (its program has a header
  /// region), rather than bytes kept as they were.
  bool memberIsSafetensors(size_t m) const {
    const auto &regions = reader_->checkpoint(checkedMember(m)).regions;
    return std::any_of(regions.begin(), regions.end(), [](const Region &r) { return r.kind == RegionKind::Header; });
  }
  std::string memberPath(size_t m) const { return reader_->member(checkedMember(m)).path; }
  uint64_t originalSize() const { return reader_->originalSize(); }

  /// (name, dtype as safetensors writes it, shape, bytes, member index) of every tensor.
  py::list tensors() const {
    py::list out;
    for (const TensorInfo &t : tensors_)
      out.append(py::make_tuple(t.name,
                                t.opaqueDtype.empty() ? std::string(dtypeInfo(t.dtype).safetensorsName) : t.opaqueDtype,
                                py::tuple(py::cast(t.shape)), t.bytes, t.member));
    return out;
  }

  /// The safetensors header of member `m` (length prefix and JSON), decoded and checked.
  py::bytes header(size_t m) const {
    Result<Bytes> out = Bytes();
    {
      py::gil_scoped_release release;
      out = reader_->header(checkedMember(m));
    }
    const Bytes bytes = valueOr(std::move(out));
    return py::bytes(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  }

  /// Decodes the tensors `indices` (into tensors()) into `buffers`, one each, on `threads`.
  void readInto(const std::vector<size_t> &indices, const std::vector<py::buffer> &buffers, unsigned threads) const {
    if (indices.size() != buffers.size()) throw BrevisError("one buffer per tensor is needed");
    std::vector<std::vector<ScatterSink::Target>> targets(reader_->memberCount());
    std::vector<std::vector<size_t>> regions(reader_->memberCount());
    for (size_t i = 0; i < indices.size(); ++i) {
      const TensorInfo &t = checkedTensor(indices[i]);
      const Region &r = reader_->checkpoint(t.member).regions[t.region];
      targets[t.member].push_back(
          {r.bytes.offset + t.offset, t.bytes, writableBuffer(buffers[i], t.bytes, quoteString(t.name))});
      regions[t.member].push_back(t.region);
    }
    std::vector<std::unique_ptr<ScatterSink>> sinks;
    std::vector<DecodeJob> jobs;
    for (size_t m = 0; m < targets.size(); ++m) {
      if (targets[m].empty() && regions[m].empty()) continue;
      std::sort(regions[m].begin(), regions[m].end());
      regions[m].erase(std::unique(regions[m].begin(), regions[m].end()), regions[m].end());
      // Every tensor of the member (load_file): decode the member whole, as decompress does,
      // with the decoder prepared for all of it; the other regions' bytes are dropped.
      if (regions[m].size() == tensorRegions_[m]) regions[m].clear();
      sinks.push_back(std::make_unique<ScatterSink>(std::move(targets[m])));
      jobs.push_back(DecodeJob{&reader_->checkpoint(m), &reader_->payload(m), reader_->digests(m), sinks.back().get(),
                               label(m), std::move(regions[m])});
    }
    if (jobs.empty()) return;
    DecodeOptions options;
    options.threads = threadsFor(threads);
    Result<void> done;
    {
      py::gil_scoped_release release;
      done = decodeJobs(jobs, options);
    }
    check(done);
  }

  /// The bytes of tensor `index` that read_part_into decodes for its bytes [begin, begin + size):
  /// (offset, size), the pieces the index checks one by one (the whole tensor in older archives).
  std::pair<uint64_t, uint64_t> partToDecode(size_t index, uint64_t begin, uint64_t size) const {
    const ByteRange r = reader_->tensorPartToDecode(checkedTensor(index), ByteRange{begin, size});
    return {r.offset, r.size};
  }

  /// Decodes part_to_decode(index, begin, size) of tensor `index` into `buffer`.
  void readPartInto(size_t index, uint64_t begin, uint64_t size, const py::buffer &buffer, unsigned threads) const {
    const TensorInfo &t = checkedTensor(index);
    const ByteRange part{begin, size};
    const ByteRange decoded = reader_->tensorPartToDecode(t, part);
    ScatterSink sink({{0, decoded.size, writableBuffer(buffer, decoded.size, quoteString(t.name))}});
    DecodeOptions options;
    options.threads = threadsFor(threads);
    Result<void> done;
    {
      py::gil_scoped_release release;
      done = reader_->readTensorPart(t, part, sink, options);
    }
    check(done);
  }

private:
  const TensorInfo &checkedTensor(size_t index) const {
    if (index >= tensors_.size()) throw BrevisError(fmt::format("no tensor number {}", index));
    return tensors_[index];
  }
  size_t checkedMember(size_t m) const {
    if (m >= reader_->memberCount()) throw BrevisError(fmt::format("no member number {}", m));
    return m;
  }
  std::string label(size_t m) const {
    return reader_->isDirectory() ? reader_->path() + ":" + reader_->member(m).path : reader_->path();
  }

  std::shared_ptr<const MappedFile> file_;
  std::unique_ptr<ArchiveReader> reader_;
  std::vector<TensorInfo> tensors_;
  std::vector<size_t> tensorRegions_; ///< per member, how many regions its tensors lie in
};

/// Compresses `bytes`, the file `name`, into the archive `target`; the GIL is released. With
/// `source`, the file they were mapped from, the archive is written only if it did not change.
uint64_t compressInto(ByteSpan bytes, const std::string &name, const std::string &target, int level,
                      unsigned threads, bool overwrite, const MappedFile *source = nullptr) {
  if (level < 1 || level > 9) throw BrevisError(fmt::format("level {} is not one of 1 to 9", level));
  py::gil_scoped_release release;
  auto builder = valueOr(ArchiveBuilder::create(target, overwrite));
  CompressSettings settings;
  settings.strategy = strategyOptionsForLevel(level);
  settings.threads = threadsFor(threads);
  auto added = addCompressed(*builder, name, bytes, settings);
  if (source) check(source->checkIntact());
  if (!added) throw BrevisError((source ? source->path() : name) + ": " + added.error().message);
  return valueOr(builder->finish(/*directory=*/false));
}

/// Compresses the file `source` (whose base name the archive records) into `target`.
uint64_t compressFile(const std::string &source, const std::string &target, int level, unsigned threads, bool overwrite) {
  auto file = valueOr(MappedFile::open(source));
  const std::string name = source.substr(source.rfind('/') == std::string::npos ? 0 : source.rfind('/') + 1);
  return compressInto(file->bytes(), name, target, level, threads, overwrite, file.get());
}

/// Compresses bytes in memory as the file `name` into `target` (save_file).
uint64_t compressBytes(const py::buffer &data, const std::string &name, const std::string &target, int level,
                       unsigned threads, bool overwrite) {
  py::buffer_info info = data.request();
  const ByteSpan bytes(static_cast<const uint8_t *>(info.ptr), static_cast<size_t>(info.size * info.itemsize));
  return compressInto(bytes, name, target, level, threads, overwrite);
}

/// Rebuilds the archive `source` at `target` (a file, or a directory for a directory archive),
/// every region checked against its digest and the archive against its checksum.
void decompressFile(const std::string &source, const std::string &target, unsigned threads, bool overwrite) {
  auto file = valueOr(MappedFile::open(source));
  py::gil_scoped_release release;
  ArchiveReader archive = valueOr(ArchiveReader::open(file, source));
  std::unique_ptr<DirectoryOutput> dir;
  std::unique_ptr<OutputFile> single;
  std::vector<OutputFile *> outputs;
  if (archive.isDirectory()) {
    dir = valueOr(DirectoryOutput::open(target, overwrite));
    for (size_t m = 0; m < archive.memberCount(); ++m) outputs.push_back(valueOr(dir->createFile(archive.member(m).path)));
  } else {
    single = valueOr(OutputFile::create(target, overwrite));
    outputs.push_back(single.get());
  }
  check(outputs[0]->checkRoom(archive.originalSize()));
  std::vector<DecodeJob> jobs;
  for (size_t m = 0; m < archive.memberCount(); ++m) {
    check(outputs[m]->preallocate(archive.member(m).sourceSize));
    jobs.push_back(DecodeJob{&archive.checkpoint(m), &archive.payload(m), archive.digests(m), outputs[m],
                             archive.isDirectory() ? source + ":" + archive.member(m).path : source, {}});
  }
  DecodeOptions options;
  options.threads = threadsFor(threads);
  check(decodeJobs(jobs, options));
  check(checkArchiveChecksum(file->bytes(), source));
  check(file->checkIntact());
  if (single) check(single->commit());
  if (dir) check(dir->commit());
}

/// brevisc explain --json's "tensors", as JSON text (the package parses it).
std::string explainJson(const std::string &path, const std::string &tensor, int level, size_t candidates,
                        unsigned threads) {
  if (level < 1 || level > 9) throw BrevisError(fmt::format("level {} is not one of 1 to 9", level));
  auto file = valueOr(MappedFile::open(path));
  py::gil_scoped_release release;
  // The package's tensor="" (its default) means every tensor.
  std::optional<std::string> only;
  if (!tensor.empty()) only = tensor;
  auto explained = valueOr(explainTensors(file, path, ExplainSettings{only, level, threadsFor(threads), std::nullopt}));
  nlohmann::json out = nlohmann::json::array();
  for (const ExplainedTensor &t : explained) out.push_back(explanationJson(t, candidates));
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace
} // namespace brevis

PYBIND11_MODULE(_brevis, m) {
  using namespace brevis;
  m.doc() = "Brevis archives: the C++ side of the brevis package (see help(brevis))";
  py::register_exception<BrevisError>(m, "BrevisError");
  py::class_<PyArchive>(m, "Archive")
      .def(py::init<const std::string &>(), py::arg("path"))
      .def_property_readonly("path", &PyArchive::path)
      .def_property_readonly("member_count", &PyArchive::memberCount)
      .def_property_readonly("is_directory", &PyArchive::isDirectory)
      .def_property_readonly("original_size", &PyArchive::originalSize)
      .def("member_path", &PyArchive::memberPath, py::arg("member"))
      .def("member_is_safetensors", &PyArchive::memberIsSafetensors, py::arg("member"))
      .def("tensors", &PyArchive::tensors)
      .def("header", &PyArchive::header, py::arg("member") = 0)
      .def("read_into", &PyArchive::readInto, py::arg("indices"), py::arg("buffers"), py::arg("threads") = 0)
      .def("part_to_decode", &PyArchive::partToDecode, py::arg("index"), py::arg("begin"), py::arg("size"))
      .def("read_part_into", &PyArchive::readPartInto, py::arg("index"), py::arg("begin"), py::arg("size"),
           py::arg("buffer"), py::arg("threads") = 0);
  m.def("compress_file", &compressFile, py::arg("source"), py::arg("target"), py::arg("level"), py::arg("threads"),
        py::arg("overwrite"));
  m.def("compress_bytes", &compressBytes, py::arg("data"), py::arg("name"), py::arg("target"), py::arg("level"),
        py::arg("threads"), py::arg("overwrite"));
  m.def("decompress_file", &decompressFile, py::arg("source"), py::arg("target"), py::arg("threads"),
        py::arg("overwrite"));
  m.def("explain_json", &explainJson, py::arg("path"), py::arg("tensor"), py::arg("level"), py::arg("candidates"),
        py::arg("threads"));
  m.attr("archive_format_version") = kArchiveVersion;
}
