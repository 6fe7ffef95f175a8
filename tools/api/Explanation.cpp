#include "tools/api/Explanation.h"

#include "runtime/containers/Archive.h"

#include "runtime/execution/ThreadPool.h"
#include "lang/Printer.h"
#include "synth/Driver.h"
#include "synth/Strategy.h"
#include "tools/api/ArchiveReader.h"

#include <map>
#include <optional>

namespace brevis {

namespace {

/// For each region of `c`, the region whose payload its program reads where every payload range
/// it reads was read first by that one earlier region (a repeated tensor); empty otherwise.
std::vector<std::string> payloadOwners(const Checkpoint &c) {
  std::map<std::pair<uint64_t, uint64_t>, size_t> owner;
  std::vector<std::string> repeatOf(c.regions.size());
  for (size_t i = 0; i < c.regions.size(); ++i) {
    std::optional<size_t> shared;
    bool own = false;
    auto walk = [&](auto &self, const Expr &e) -> void {
      if (auto *l = dynAs<Lit>(e); l && !l->isInline() && l->payload().size > 0) {
        auto [it, added] = owner.emplace(std::pair{l->payload().offset, l->payload().size}, i);
        if (added || (shared && *shared != it->second)) own = true;
        else shared = it->second;
      }
      forEachChild(e, [&](const Expr &child) { self(self, child); });
    };
    walk(walk, *c.regions[i].program);
    if (shared && !own) {
      const Region &first = c.regions[*shared];
      repeatOf[i] = first.kind == RegionKind::Tensor ? first.name : std::string(regionKindName(first.kind));
    }
  }
  return repeatOf;
}

} // namespace

double bitsPerWord(uint64_t bytes, uint64_t words) {
  return words ? 8.0 * static_cast<double>(bytes) / static_cast<double>(words) : 0;
}

Result<std::vector<ExplainedTensor>> explainTensors(std::shared_ptr<const MappedFile> file, const std::string &name,
                                                    const ExplainSettings &settings) {
  const StrategyOptions options = settings.strategy ? *settings.strategy : strategyOptionsForLevel(settings.level);
  struct Job {
    RegionInput input;
    const Expr *stored = nullptr;
    const Payload *storedPayload = nullptr; ///< the archive member's, which `stored` reads
    Bytes decoded;
    std::string file, repeatOf;
  };
  std::vector<Job> jobs;
  std::vector<Region> regions; // owns the names and shapes the jobs point at
  std::optional<SynthOutput> synthesized; // a checkpoint's programs, as compress makes them
  std::optional<Payload> synthesizedPayload;
  std::optional<ArchiveReader> archive;
  std::vector<TensorInfo> tensors;
  if (looksLikeArchive(file->bytes())) {
    auto opened = ArchiveReader::open(file, name);
    if (!opened) return opened.error();
    // The whole archive is explained, so the whole archive is checked, as decompress does:
    // the tensors' digests do not cover what no tensor reads.
    BREVIS_TRY(checkArchiveChecksum(file->bytes(), name));
    archive.emplace(std::move(*opened));
    tensors = archive->tensors();
    std::vector<std::vector<std::string>> repeats;
    for (size_t m = 0; m < archive->memberCount(); ++m) repeats.push_back(payloadOwners(archive->checkpoint(m)));
    // Every tensor of that name, in every member file of a directory archive.
    for (const TensorInfo &t : tensors) {
      if (!t.opaqueDtype.empty()) continue; // bytes of a `bytes` region: no program of its own
      if (settings.tensor && t.name != *settings.tensor) continue;
      Job job;
      job.stored = archive->checkpoint(t.member).regions[t.region].program.get();
      job.storedPayload = &archive->payload(t.member);
      job.repeatOf = repeats[t.member][t.region];
      job.file = archive->isDirectory() ? t.file : std::string();
      // Decoded (and checked against the archive's digests) to search it again.
      job.decoded.resize(t.bytes);
      VectorPositionalSink sink(job.decoded);
      BREVIS_TRY(archive->readTensor(t, sink, DecodeOptions{.threads = settings.threads}));
      jobs.push_back(std::move(job));
      jobs.back().input = RegionInput{RegionKind::Tensor, t.name, t.dtype, t.shape, jobs.back().decoded};
    }
  } else {
    std::optional<std::string> notSafetensors;
    regions = tileRegions(file->bytes(), notSafetensors);
    if (notSafetensors) return Error{name + " is neither an archive nor safetensors (" + *notSafetensors + ")"};
    // The programs compress makes at this level (the same driver: tensors of one role reuse a
    // structure, repeats read their first copy's payload), which each tensor's own search below
    // is set beside.
    auto strategy = makeStrategy(kDefaultStrategy, options);
    if (!strategy) return strategy.error();
    synthesized = synthesizeCheckpoint(file->bytes(), name, "explain.bin", **strategy,
                                       SynthOptions{usefulThreads(settings.threads, file->bytes().size())});
    synthesizedPayload = Payload::fromBytes(synthesized->payload);
    const std::vector<std::string> repeats = payloadOwners(synthesized->checkpoint);
    for (size_t i = 0; i < synthesized->checkpoint.regions.size(); ++i) {
      const Region &r = synthesized->checkpoint.regions[i];
      if (r.kind != RegionKind::Tensor || (settings.tensor && r.name != *settings.tensor)) continue;
      jobs.push_back(Job{RegionInput{r.kind, r.name, r.dtype, r.shape, file->bytes().subspan(r.bytes.offset, r.bytes.size)},
                         r.program.get(),
                         &*synthesizedPayload,
                         {},
                         {},
                         repeats[i]});
    }
  }
  if (settings.tensor && jobs.empty()) return Error{name + " has no tensor called " + quoteString(*settings.tensor)};

  std::vector<ExplainedTensor> out(jobs.size());
  uint64_t bytes = 0;
  for (const auto &job : jobs) bytes += job.input.bytes.size();
  parallelFor(jobs.size(), usefulThreads(settings.threads, bytes), [&](size_t i) {
    out[i].report = explainRegion(jobs[i].input, options, jobs[i].stored, jobs[i].storedPayload);
    out[i].file = jobs[i].file;
    out[i].repeatOf = jobs[i].repeatOf;
    if (!jobs[i].repeatOf.empty()) { // nothing was searched for it, and it stores nothing
      out[i].report.payloadBytes = 0;
      out[i].report.candidates.clear();
    }
  });
  return out;
}

std::vector<size_t> shownCandidates(const RegionReport &r, size_t candidates) {
  std::vector<size_t> shown;
  if (candidates == 0) return shown;
  for (size_t i = 0; i < r.candidates.size(); ++i)
    if (i < candidates || r.candidates[i].chosen) shown.push_back(i);
  return shown;
}

nlohmann::json explanationJson(const ExplainedTensor &t, size_t candidates) {
  const RegionReport &r = t.report;
  nlohmann::json literals = nlohmann::json::array();
  for (const auto &l : r.literals) {
    literals.push_back({{"path", l.path},
                        {"encoding", l.encoding},
                        {"width", l.width},
                        {"length", l.length},
                        {"bytes", l.bytes},
                        {"bits_per_word", bitsPerWord(l.bytes, l.length)}});
    if (!l.detail.empty()) literals.back()["detail"] = l.detail;
  }
  nlohmann::json fields = nlohmann::json::object();
  for (const auto &[name, bits] : r.fieldEntropyBits) fields[name] = bits;
  nlohmann::json scored = nlohmann::json::array();
  for (const size_t i : shownCandidates(r, candidates))
    scored.push_back({{"program", r.candidates[i].program},
                      {"estimated_bytes", r.candidates[i].estimatedBytes},
                      {"chosen", r.candidates[i].chosen}});
  nlohmann::json out = {{"name", r.name},
                        {"dtype", std::string(dtypeInfo(r.dtype).bdslName)},
                        {"shape", r.shape},
                        {"original_bytes", r.originalBytes},
                        {"payload_bytes", r.payloadBytes},
                        {"bits_per_weight", bitsPerWord(r.payloadBytes, r.words)},
                        {"entropy_bits_per_weight", {{"whole_word", r.wordEntropyBits}, {"fields", fields}}},
                        {"program", r.program},
                        {"literals", literals},
                        {"candidates", scored}};
  if (!t.file.empty()) out["file"] = t.file;
  if (!t.repeatOf.empty()) out["repeat_of"] = t.repeatOf;
  return out;
}

} // namespace brevis
