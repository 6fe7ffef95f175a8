#include "synth/Driver.h"

#include "lang/SafetensorsIndex.h"
#include "runtime/containers/Checksum.h"
#include "runtime/containers/Payload.h"
#include "runtime/containers/Safetensors.h"
#include "runtime/execution/ThreadPool.h"
#include "synth/Literals.h"
#include "synth/strategies/Search.h"

#include <cassert>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace brevis {

std::vector<Region> tileRegions(ByteSpan file, std::optional<std::string> &notSafetensorsReason) {
  std::vector<Region> regions;
  auto addBytes = [&](RegionKind kind, uint64_t begin, uint64_t end) {
    Region r;
    r.kind = kind;
    r.bytes = ByteRange{begin, end - begin};
    regions.push_back(std::move(r));
  };
  auto layout = parseSafetensors(file);
  if (!layout) {
    notSafetensorsReason = layout.error().message;
    addBytes(RegionKind::Bytes, 0, file.size());
    return regions;
  }
  addBytes(RegionKind::Header, 0, layout->headerSize);
  uint64_t at = layout->headerSize;
  for (const auto &t : layout->tensors) {
    if (t.begin > at) addBytes(RegionKind::Bytes, at, t.begin);
    Region r;
    r.kind = RegionKind::Tensor;
    r.name = t.name;
    r.dtype = t.dtype;
    r.shape = t.shape;
    r.bytes = ByteRange{t.begin, t.end - t.begin};
    regions.push_back(std::move(r));
    at = t.end;
  }
  if (file.size() > at) addBytes(RegionKind::Bytes, at, file.size());
  return regions;
}

unsigned usefulThreads(unsigned requested, uint64_t bytes) {
  const uint64_t useful = std::max<uint64_t>({std::thread::hardware_concurrency(), bytes / kMinBytesPerThread, 1});
  return static_cast<unsigned>(std::clamp<uint64_t>(requested, 1, useful));
}

std::vector<size_t> firstWithSameBytes(const std::vector<Region> &regions, ByteSpan file,
                                       std::vector<uint64_t> *digests, unsigned threads) {
  std::vector<size_t> first(regions.size());
  std::unordered_multimap<uint64_t, size_t> seen;
  // The regions' digests on the threads (one after another, before the first region could
  // start, they took 18-23 ms of a 134 MB checkpoint's 200 ms at level 1 on two threads), a
  // digest piece per task (a checkpoint of one 131 MB tensor had one thread hash it while the
  // other waited, a tenth of level 5 on two threads), then the repeats in file order.
  struct Piece {
    size_t region;
    uint64_t index; // within the region
  };
  std::vector<Piece> pieces;
  std::vector<size_t> firstPiece(regions.size() + 1);
  for (size_t i = 0; i < regions.size(); ++i) {
    firstPiece[i] = pieces.size();
    for (uint64_t p = 0; p < digestPieces(regions[i].bytes.size); ++p) pieces.push_back(Piece{i, p});
  }
  firstPiece.back() = pieces.size();
  std::vector<uint64_t> pieceHashes(pieces.size());
  parallelFor(pieces.size(), threads, [&](size_t p) {
    const ByteRange bytes = regions[pieces[p].region].bytes;
    pieceHashes[p] = xxh3(digestPiece(file.subspan(bytes.offset, bytes.size), pieces[p].index));
  });
  std::vector<uint64_t> keys(regions.size());
  for (size_t i = 0; i < regions.size(); ++i)
    keys[i] = combinePieceHashes(std::span(pieceHashes).subspan(firstPiece[i], firstPiece[i + 1] - firstPiece[i]));
  if (digests) *digests = keys;
  for (size_t i = 0; i < regions.size(); ++i) {
    first[i] = i;
    const Region &r = regions[i];
    const ByteSpan bytes = file.subspan(r.bytes.offset, r.bytes.size);
    const uint64_t key = keys[i];
    if (r.bytes.size == 0) continue;
    auto [begin, end] = seen.equal_range(key);
    for (auto it = begin; it != end; ++it) {
      const Region &q = regions[it->second];
      if (q.kind == r.kind && q.dtype == r.dtype && q.bytes.size == r.bytes.size &&
          std::memcmp(file.data() + q.bytes.offset, bytes.data(), bytes.size()) == 0) {
        first[i] = it->second;
        break;
      }
    }
    if (first[i] == i) seen.emplace(key, i);
  }
  return first;
}

void writeHeaderAsIndex(Checkpoint &c, ByteSpan file) {
  for (size_t i = 0; i < c.regions.size(); ++i) {
    Region &r = c.regions[i];
    if (r.kind != RegionKind::Header) continue;
    const ByteSpan bytes = file.subspan(r.bytes.offset, r.bytes.size);
    const std::string_view text(reinterpret_cast<const char *>(bytes.data()), bytes.size());
    if (auto index = matchSafetensorsIndex(c, i, text)) {
      index->loc = r.loc;
      r.index = std::move(*index);
      r.program = Lit::makeText(text);
    }
  }
}

SynthOutput synthesizeCheckpoint(ByteSpan file, const std::string &sourceName, const std::string &payloadName,
                                 Strategy &strategy, const SynthOptions &options) {
  SynthOutput out;
  Checkpoint &c = out.checkpoint;
  c.version = kLanguageVersion;
  c.source = SourceInfo{sourceName, file.size(), 0}; // its digest is taken beside the regions, below
  c.payloadFile = payloadName;
  c.regions = tileRegions(file, out.notSafetensorsReason);
  // Before the regions are synthesized: a header written so has no literal to code.
  if (!options.headerText) writeHeaderAsIndex(c, file);

  const unsigned threads = usefulThreads(options.threads, file.size());
  std::vector<RegionInput> inputs;
  inputs.reserve(c.regions.size());
  for (const Region &r : c.regions)
    inputs.push_back(RegionInput{r.kind, r.name, r.dtype, r.shape, file.subspan(r.bytes.offset, r.bytes.size)});
  strategy.prepare(inputs, threads);

  // Each region's program into a payload of its own, so that the regions run on any threads in
  // any order and the joined payload is still the same. Regions are joined in file order as soon
  // as every region before them is done, and their buffers freed: the memory is then reused by
  // the regions that follow (a fresh buffer for every region, all held until the end, was most
  // of level 1's page faults) and only the regions in flight, or done while a write goes on,
  // are held twice.
  const size_t n = c.regions.size();
  std::vector<Bytes> payloads(n);
  std::vector<char> done(n, 0);
  std::mutex joining;
  size_t joined = 0;        // regions before this one are joined (with `joining` held)
  bool joinerActive = false; // a thread is joining regions (with `joining` held)
  const std::vector<size_t> first = firstWithSameBytes(c.regions, file, &out.digests, threads);
  // Room for every byte of the file, reserved, not touched: a payload seldom exceeds its input.
  if (!options.payloadWriter) out.payload.reserve(file.size() + kPayloadSlack);
  uint64_t payloadSize = 0;
  // After a failed write nothing more can be kept: the regions left are not made, and the
  // output (without their programs) is only the error.
  std::atomic<bool> writeFailed{false};
  // Joins region i, every region before it joined: only the one joining thread gets here.
  auto joinOne = [&](size_t i) {
    if (out.payloadError) {
      Bytes().swap(payloads[i]);
      return;
    }
    if (first[i] != i) { // the first is earlier, so its program already points at its payload
      c.regions[i].program = cloneExpr(*c.regions[first[i]].program);
      return;
    }
    rebasePayload(*c.regions[i].program, payloadSize);
    payloadSize += payloads[i].size();
    if (!options.payloadWriter) {
      out.payload.insert(out.payload.end(), payloads[i].begin(), payloads[i].end());
    } else if (auto written = options.payloadWriter(ByteSpan(payloads[i].data(), payloads[i].size())); !written) {
      out.payloadError = written.error();
      writeFailed = true;
    }
    Bytes().swap(payloads[i]);
  };
  // One thread at a time joins the regions that are ready, in file order, outside the lock:
  // writing a large payload takes milliseconds, and a thread that finishes a region meanwhile
  // hands it to the joining thread and goes on to the next region instead of waiting (on two
  // threads, level 1 had one thread idle for a sixth of its time).
  auto joinReady = [&](std::unique_lock<std::mutex> &lock) {
    if (joinerActive) return; // the joining thread takes this region when it comes to it
    joinerActive = true;
    while (joined < n && done[joined]) {
      const size_t i = joined++;
      lock.unlock();
      joinOne(i);
      lock.lock();
    }
    joinerActive = false;
  };
  // The file's digest is one more task, first: on several threads it is taken while the first
  // regions are synthesized (alone before them, a seventh of level 1's time on two threads).
  parallelFor(n + 1, threads, [&](size_t task) {
    if (task == 0) {
      c.source.xxh64 = xxh64(file);
      return;
    }
    const size_t i = task - 1;
    if (first[i] == i && !c.regions[i].index && !writeFailed.load(std::memory_order_relaxed)) {
      // Not a repeat (the first's program), nor made already.
      RegionProgram p = strategy.synthesize(inputs[i]);
      c.regions[i].program = std::move(p.program);
      payloads[i] = std::move(p.payload);
    }
    if (options.progress) options.progress->fetch_add(inputs[i].bytes.size(), std::memory_order_relaxed);
    std::unique_lock lock(joining);
    done[i] = 1;
    joinReady(lock);
  });
  assert(joined == n && !joinerActive);
  c.payloadSize = payloadSize;
  return out;
}

std::variant<size_t, CheckpointFillError> fillCheckpointHoles(Checkpoint &c, ByteSpan file, Bytes &payload, int level) {
  const StrategyOptions options = strategyOptionsForLevel(level);
  size_t filled = 0;
  for (size_t i = 0; i < c.regions.size(); ++i) {
    Region &r = c.regions[i];
    const RegionInput input{r.kind, r.name, r.dtype, r.shape, file.subspan(r.bytes.offset, r.bytes.size)};
    const std::vector<uint64_t> words = readWords(input.bytes, regionWordType(input).wordBits / 8);
    HoleSearch search(options.policy, searchLimits(options));
    auto result = fillHoles(r.program, words, regionContext(input), search, payload);
    if (auto *error = std::get_if<FillError>(&result)) return CheckpointFillError{i, std::move(*error)};
    filled += std::get<size_t>(result);
  }
  return filled;
}

} // namespace brevis
