#include "runtime/execution/ParallelDecode.h"

#include "lang/Printer.h"
#include "runtime/common/UninitializedAllocator.h"
#include "runtime/containers/Checksum.h"
#include "runtime/execution/HashingSink.h"
#include "runtime/execution/Interpreter.h"
#include "runtime/execution/ThreadPool.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

namespace brevis {

std::string regionLabel(const Region &r) {
  switch (r.kind) {
  case RegionKind::Header: return "the header";
  case RegionKind::Bytes: return fmt::format("the bytes region at @{}+{}", r.bytes.offset, r.bytes.size);
  case RegionKind::Tensor: return "tensor " + quoteString(r.name);
  }
  return {};
}

namespace {

/// A write buffer: its bytes are not cleared when it grows (a decoder writes every byte it
/// commits), which for fresh buffers was a memset and its page faults on every buffer decoded.
using WriteBuffer = UninitializedVector<uint8_t>;

struct Piece {
  size_t job, region;
  uint64_t firstByte, size; ///< within the region
  size_t hashSlot;          ///< where its hash goes
};

/// Writes a run of consecutive output bytes at their place (one task: a large piece, or several
/// small ones), counting progress. Decoders write small chunks, or decode straight into the
/// buffer (reserve/commit); they are gathered into writes of kWriteBytes, which the kernel
/// copies into the page cache far more cheaply than many small ones.
///
/// The buffers are small because memory touched for the first time is expensive: every 4 KiB
/// page is a fault, and on virtual machines a fault costs microseconds (12 µs a page here, more
/// than decoding the page's bytes). A file's first buffers are always fresh; with 1 MiB ones,
/// a 3 MB checkpoint was decoded into new pages from start to end.
///
/// The decoding thread writes them itself: a thread of its own for writes (as zstd's
/// asynchronous I/O) cost more in hand-offs than the copy it overlapped (docs/benchmarks.md).
class OutputBuffer final : public ByteSink {
public:
  static constexpr size_t kWriteBytes = size_t{128} << 10;
  OutputBuffer(PositionalSink &out, uint64_t offset, uint64_t size, std::atomic<uint64_t> *progress)
      : out_(out), offset_(offset), bufferBytes_(static_cast<size_t>(std::min<uint64_t>(size, kWriteBytes))),
        progress_(progress), direct_(out.memoryAt(offset, static_cast<size_t>(size))), size_(size) {}
  OutputBuffer(const OutputBuffer &) = delete;
  OutputBuffer &operator=(const OutputBuffer &) = delete;
  Result<void> write(const uint8_t *data, size_t size) override {
    if (direct_) {
      if (written_ + size > size_) return Error{"a region piece produced more bytes than it holds"};
      std::memcpy(direct_ + written_, data, size);
      return advance(size);
    }
    while (size) {
      if (used_ == 0 && size >= bufferBytes_) return emit(data, size); // large writes go straight through
      size_t take = std::min(size, bufferBytes_ - used_);
      std::memcpy(room(take), data, take);
      BREVIS_TRY(commitRoom(take));
      data += take;
      size -= take;
    }
    return {};
  }
  /// Room in the buffer; a request larger than the buffer gets a scratch buffer passed on by
  /// write().
  uint8_t *reserve(size_t size) override {
    // In place in the sink's memory when the room fits there; else in the buffer, or scratch.
    directReserved_ = direct_ && written_ + size <= size_;
    if (directReserved_) return direct_ + written_;
    // Room past the task's end (a decoder may ask for more than it commits): scratch, which
    // commit() passes to write(), which copies what fits.
    scratchReserved_ = direct_ || size > bufferBytes_;
    return scratchReserved_ ? ByteSink::reserve(size) : room(size);
  }
  Result<void> commit(size_t size) override {
    if (directReserved_) return advance(size);
    return scratchReserved_ ? ByteSink::commit(size) : commitRoom(size);
  }
  /// Whether a write failed (its error names no region: the bytes may be any piece's).
  bool writeFailed() const { return writeFailed_; }
  Result<void> flush() {
    if (direct_ || used_ == 0) return {};
    const size_t size = used_;
    used_ = 0;
    return emit(buffer_.data(), size);
  }

private:
  /// Room for `size` <= bufferBytes_ bytes in the buffer.
  uint8_t *room(size_t size) {
    if (used_ + size > bufferBytes_) {
      auto flushed = flush();
      if (!flushed && !error_) error_ = flushed.error();
      used_ = 0; // after a failed write the bytes are dropped; commit() reports the failure
    }
    if (buffer_.size() < bufferBytes_) buffer_.resize(bufferBytes_);
    return buffer_.data() + used_;
  }
  Result<void> commitRoom(size_t size) {
    if (error_) return *error_;
    used_ += size;
    if (used_ == bufferBytes_) return flush();
    return {};
  }
  /// `size` bytes are in place in the sink's memory.
  Result<void> advance(size_t size) {
    written_ += size;
    if (progress_) progress_->fetch_add(size, std::memory_order_relaxed);
    return {};
  }
  Result<void> emit(const uint8_t *data, size_t size) {
    auto wrote = out_.writeAt(offset_ + written_, data, size);
    if (!wrote) {
      writeFailed_ = true;
      return wrote;
    }
    written_ += size;
    if (progress_) progress_->fetch_add(size, std::memory_order_relaxed);
    return {};
  }
  PositionalSink &out_;
  uint64_t offset_;
  size_t bufferBytes_; ///< kWriteBytes, or the whole task if smaller
  std::atomic<uint64_t> *progress_;
  WriteBuffer buffer_; ///< bytes [0, used_) wait to be written
  size_t used_ = 0;
  std::optional<Error> error_;
  uint64_t written_ = 0;
  bool writeFailed_ = false;
  bool scratchReserved_ = false;
  uint8_t *direct_; ///< the task's bytes in the sink's memory (PositionalSink::memoryAt), or null
  uint64_t size_;   ///< the task's bytes
  bool directReserved_ = false;
};

/// Where the index's hashes of region `region`'s pieces start in job.pieceHashes.
size_t firstPieceHash(const DecodeJob &job, size_t region) {
  uint64_t at = 0;
  for (size_t k = 0; k < region; ++k) at += indexedPieces(job.checkpoint->regions[k].bytes.size);
  return static_cast<size_t>(at);
}

} // namespace

std::pair<uint64_t, uint64_t> piecesToDecode(const DecodeJob &job, const Region &r) {
  const uint64_t all = digestPieces(r.bytes.size);
  if (!job.onlyBytes || job.onlyRegions.size() != 1 || job.pieceHashes.empty() || all <= 1) return {0, all};
  const uint64_t begin = std::min(job.onlyBytes->offset, r.bytes.size);
  const uint64_t end = begin + std::min(job.onlyBytes->size, r.bytes.size - begin);
  if (begin == end) return {0, 0};
  return {begin / kDigestPieceBytes, (end + kDigestPieceBytes - 1) / kDigestPieceBytes};
}

Result<void> decodeJobs(std::span<const DecodeJob> jobs, RegionDecoder &decoder, const DecodeOptions &options) {
  struct RegionRef {
    size_t job, region;
  };
  std::vector<RegionRef> regions;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const Checkpoint &c = *jobs[j].checkpoint;
    if (jobs[j].payload->size() != c.payloadSize)
      return Error{fmt::format("{}: the payload has {} bytes, but the program expects {}", jobs[j].label,
                               jobs[j].payload->size(), c.payloadSize)};
    if (jobs[j].digests.size() != c.regions.size())
      return Error{fmt::format("{}: {} region checksums for {} regions", jobs[j].label, jobs[j].digests.size(),
                               c.regions.size())};
    if (!jobs[j].pieceHashes.empty() && jobs[j].pieceHashes.size() != firstPieceHash(jobs[j], c.regions.size()))
      return Error{fmt::format("{}: {} piece checksums for {} pieces", jobs[j].label, jobs[j].pieceHashes.size(),
                               firstPieceHash(jobs[j], c.regions.size()))};
    if (jobs[j].onlyRegions.empty())
      for (size_t r = 0; r < c.regions.size(); ++r) regions.push_back({j, r});
    else
      for (size_t r : jobs[j].onlyRegions) regions.push_back({j, r});
  }
  auto describe = [&](const RegionRef &ref) {
    return fmt::format("{}: {}", jobs[ref.job].label, regionLabel(jobs[ref.job].checkpoint->regions[ref.region]));
  };

  // 1. Every literal is validated before any decoder sees it.
  BREVIS_TRY(parallelForEach(regions.size(), options.threads, [&](size_t i) -> Result<void> {
    const DecodeJob &job = jobs[regions[i].job];
    auto valid = validateForExecution(*job.checkpoint->regions[regions[i].region].program, *job.payload);
    if (!valid) return Error{fmt::format("{}: {}", describe(regions[i]), valid.error().message)};
    return {};
  }));
  // 2. Per-checkpoint preparation (the JIT compiles every program here, on its own threads);
  // a job for a few regions leaves them to be compiled on demand.
  for (const DecodeJob &job : jobs)
    if (job.onlyRegions.empty()) BREVIS_TRY(decoder.prepare(*job.checkpoint, *job.payload));

  // 3. Pieces, in file order.
  std::vector<Piece> pieces;
  std::vector<size_t> firstSlot(regions.size());
  std::vector<std::pair<uint64_t, uint64_t>> decodedPieces(regions.size()); // of each region
  for (size_t i = 0; i < regions.size(); ++i) {
    const Region &r = jobs[regions[i].job].checkpoint->regions[regions[i].region];
    firstSlot[i] = pieces.size();
    decodedPieces[i] = piecesToDecode(jobs[regions[i].job], r);
    for (uint64_t piece = decodedPieces[i].first; piece < decodedPieces[i].second; ++piece) {
      const uint64_t at = piece * kDigestPieceBytes;
      pieces.push_back(Piece{regions[i].job, regions[i].region, at, std::min(kDigestPieceBytes, r.bytes.size - at),
                             pieces.size()});
    }
  }
  // Tasks: a large piece alone, or a run of small consecutive ones (many small tensors) that
  // one thread decodes through one buffer, so that they make few writes, not one each.
  constexpr uint64_t kTaskBytes = uint64_t{1} << 20;
  struct Task {
    size_t firstPiece, pieces;
    uint64_t offset, size; ///< in the job's output
  };
  std::vector<Task> tasks;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece &p = pieces[i];
    const uint64_t offset = jobs[p.job].checkpoint->regions[p.region].bytes.offset + p.firstByte;
    if (!tasks.empty()) {
      Task &t = tasks.back();
      const Piece &last = pieces[t.firstPiece + t.pieces - 1];
      if (last.job == p.job && t.offset + t.size == offset && t.size + p.size <= kTaskBytes) {
        ++t.pieces;
        t.size += p.size;
        continue;
      }
    }
    tasks.push_back(Task{i, 1, offset, p.size});
  }

  std::vector<uint64_t> hashes(pieces.size());
  // options.alongside is task 0, when given: the first handed out. Its result is kept apart
  // (a failure there must not stop the pieces, whose own errors come first).
  const size_t besideTasks = options.alongside ? 1 : 0;
  Result<void> beside;
  auto decoded = parallelForEach(besideTasks + tasks.size(), options.threads, [&](size_t t) -> Result<void> {
    if (t < besideTasks) {
      beside = options.alongside();
      return {};
    }
    const Task &task = tasks[t - besideTasks];
    const DecodeJob &job = jobs[pieces[task.firstPiece].job];
    OutputBuffer buffer(*job.output, task.offset, task.size, options.progress);
    for (size_t i = task.firstPiece; i < task.firstPiece + task.pieces; ++i) {
      const Piece &p = pieces[i];
      const Region &r = job.checkpoint->regions[p.region];
      const unsigned wordBytes = containerBytes(streamTypeOf(*r.program).width);
      HashingSink<Xxh3Stream> sink(buffer); // each piece hashed where it is produced
      auto done = decoder.decodeWords(r, *job.payload, p.firstByte / wordBytes, p.size / wordBytes, sink);
      if (!done && buffer.writeFailed()) return Error{fmt::format("{}: {}", job.label, done.error().message)};
      if (!done) return Error{fmt::format("{}: {}: {}", job.label, regionLabel(r), done.error().message)};
      if (sink.written() != p.size)
        return Error{fmt::format("{}: {} produced {} bytes instead of {} at byte {}", job.label, regionLabel(r),
                                 sink.written(), p.size, p.firstByte)};
      hashes[p.hashSlot] = sink.digest();
    }
    auto flushed = buffer.flush();
    if (!flushed) return Error{fmt::format("{}: {}", job.label, flushed.error().message)};
    return {};
  });
  BREVIS_TRY(decoded);

  // 4. Digests: of each whole region, or of each piece of a part of one.
  for (size_t i = 0; i < regions.size(); ++i) {
    const DecodeJob &job = jobs[regions[i].job];
    const Region &r = job.checkpoint->regions[regions[i].region];
    const auto [first, end] = decodedPieces[i];
    const auto decoded = std::span<const uint64_t>(hashes).subspan(firstSlot[i], static_cast<size_t>(end - first));
    const bool whole = first == 0 && end == digestPieces(r.bytes.size);
    if (whole && combinePieceHashes(decoded) != job.digests[regions[i].region])
      return Error{fmt::format("{}: the decoded bytes do not match their checksum", describe(regions[i]))};
    if (whole) continue;
    const size_t indexed = firstPieceHash(job, regions[i].region) + static_cast<size_t>(first);
    for (size_t k = 0; k < decoded.size(); ++k)
      if (decoded[k] != job.pieceHashes[indexed + k])
        return Error{fmt::format("{}: the decoded bytes {} to {} do not match their checksum", describe(regions[i]),
                                 (first + k) * kDigestPieceBytes,
                                 std::min(r.bytes.size, (first + k + 1) * kDigestPieceBytes))};
  }
  for (size_t i = 0; i < regions.size(); ++i) {
    const DecodeJob &job = jobs[regions[i].job];
    const Region &r = job.checkpoint->regions[regions[i].region];
    const size_t count = static_cast<size_t>(indexedPieces(r.bytes.size));
    if (job.pieceHashesOut && count)
      job.pieceHashesOut->insert(job.pieceHashesOut->end(), hashes.begin() + static_cast<std::ptrdiff_t>(firstSlot[i]),
                                 hashes.begin() + static_cast<std::ptrdiff_t>(firstSlot[i] + count));
  }
  return beside;
}

} // namespace brevis
