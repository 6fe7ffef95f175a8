// brevisc explain ARCHIVE|CHECKPOINT [--tensor NAME] [--json] [-l LEVEL]: why each tensor got
// its program — the program with the bytes of each literal, bits per weight beside the order-0
// entropies of whole words and of the IEEE fields, and the candidates the search scored for it
// with their estimated costs. For an archive, the stored program is shown and the candidates
// come from searching the decoded tensor again at the given level.
#include "tools/brevisc/Commands.h"

#include "lang/Printer.h"
#include "runtime/containers/FileIO.h"
#include "runtime/execution/ThreadPool.h"
#include "synth/Driver.h"
#include "synth/Explain.h"

#include <iostream>
#include <map>
#include <optional>

namespace brevis::cli {

namespace {

struct ExplainOptions {
  std::string input;
  std::string tensor;
  int level = kDefaultLevel;
  unsigned threads = 0;
  size_t candidates = 5;
  bool json = false;
};

std::string shapeText(const std::vector<uint64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

double bitsPerWord(uint64_t bytes, uint64_t words) {
  return words ? 8.0 * static_cast<double>(bytes) / static_cast<double>(words) : 0;
}

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

nlohmann::json toJson(const RegionReport &r, size_t candidates) {
  nlohmann::json literals = nlohmann::json::array();
  for (const auto &l : r.literals)
    literals.push_back({{"path", l.path},
                        {"encoding", l.encoding},
                        {"width", l.width},
                        {"length", l.length},
                        {"bytes", l.bytes},
                        {"bits_per_word", bitsPerWord(l.bytes, l.length)}});
  nlohmann::json fields = nlohmann::json::object();
  for (const auto &[name, bits] : r.fieldEntropyBits) fields[name] = bits;
  nlohmann::json rejected = nlohmann::json::array();
  for (size_t i = 0; i < r.candidates.size() && i < candidates; ++i)
    rejected.push_back({{"program", r.candidates[i].program},
                        {"estimated_bytes", r.candidates[i].estimatedBytes},
                        {"chosen", r.candidates[i].chosen}});
  return {{"name", r.name},
          {"dtype", std::string(dtypeInfo(r.dtype).bdslName)},
          {"shape", r.shape},
          {"original_bytes", r.originalBytes},
          {"payload_bytes", r.payloadBytes},
          {"bits_per_weight", bitsPerWord(r.payloadBytes, r.words)},
          {"entropy_bits_per_weight", {{"whole_word", r.wordEntropyBits}, {"fields", fields}}},
          {"program", r.program},
          {"literals", literals},
          {"candidates", rejected}};
}

void printText(const RegionReport &r, size_t candidates) {
  std::cout << fmt::format("tensor \"{}\" {}{}: {} weights, {} -> {} ({:.2f} bits/weight)\n", r.name,
                           dtypeInfo(r.dtype).bdslName, shapeText(r.shape), r.words, humanBytes(r.originalBytes),
                           humanBytes(r.payloadBytes), bitsPerWord(r.payloadBytes, r.words));
  std::string fields;
  double fieldSum = 0;
  for (const auto &[name, bits] : r.fieldEntropyBits) {
    fields += fmt::format("{}{} {:.2f}", fields.empty() ? "" : " + ", name, bits);
    fieldSum += bits;
  }
  std::cout << fmt::format("  order-0 entropy: whole words {:.2f} bits/weight", r.wordEntropyBits);
  if (!fields.empty()) std::cout << fmt::format("; fields {} = {:.2f}", fields, fieldSum);
  std::cout << " (no tables)\n  program:\n";
  size_t start = 0;
  while (start < r.program.size()) {
    size_t end = r.program.find('\n', start);
    if (end == std::string::npos) end = r.program.size();
    std::cout << "    " << r.program.substr(start, end - start) << "\n";
    start = end + 1;
  }
  std::cout << "  literals:\n";
  for (const auto &l : r.literals)
    std::cout << fmt::format("    {:<32} {:<8} u{}[{}]  {:>10}  {:6.2f} bits/word\n", l.path, l.encoding, l.width,
                             l.length, humanBytes(l.bytes), bitsPerWord(l.bytes, l.length));
  if (candidates > 0 && !r.candidates.empty()) std::cout << "  candidates (estimated, cheapest first):\n";
  for (size_t i = 0; i < r.candidates.size() && i < candidates; ++i)
    std::cout << fmt::format("    {} {:>10}  {}\n", r.candidates[i].chosen ? "*" : " ",
                             humanBytes(static_cast<uint64_t>(r.candidates[i].estimatedBytes)), r.candidates[i].program);
}

int runExplain(const ExplainOptions &o, const Verbosity &) {
  const std::string inputName = o.input == "-" ? "standard input" : o.input;
  auto file = openInput(o.input); // a checkpoint or an archive, from a file or a pipe
  if (!file) return fail(file.error().message);
  const StrategyOptions options = strategyOptionsForLevel(o.level);

  struct Job {
    RegionInput input;
    const Expr *stored = nullptr;
    Bytes decoded;
    std::string file;     ///< the member file, in a directory archive
    std::string repeatOf; ///< the tensor whose bytes (program and payload) this one repeats
  };
  std::vector<Job> jobs;
  std::vector<Region> regions; // owns the names and shapes the jobs point at
  std::optional<ArchiveReader> archive;
  std::vector<TensorInfo> tensors;
  if (looksLikeArchive((*file)->bytes())) {
    auto opened = loadArchive(*file, o.input);
    if (!opened) return fail(opened.error().message);
    archive.emplace(std::move(*opened));
    tensors = archive->tensors();
    std::vector<std::vector<std::string>> repeats;
    for (size_t m = 0; m < archive->memberCount(); ++m) repeats.push_back(payloadOwners(archive->checkpoint(m)));
    // Every tensor of that name, in every member file of a directory archive.
    for (const TensorInfo &t : tensors) {
      if (!o.tensor.empty() && t.name != o.tensor) continue;
      Job job;
      job.stored = archive->checkpoint(t.member).regions[t.region].program.get();
      job.repeatOf = repeats[t.member][t.region];
      job.file = archive->isDirectory() ? t.file : std::string();
      // Decoded (and checked against the archive's digests) to search it again.
      job.decoded.resize(t.bytes);
      VectorPositionalSink sink(job.decoded);
      if (auto read = archive->readTensor(t, sink, DecodeOptions{.threads = resolveThreads(o.threads)}); !read)
        return fail(read.error().message);
      jobs.push_back(std::move(job));
      jobs.back().input = RegionInput{RegionKind::Tensor, t.name, t.dtype, t.shape, jobs.back().decoded};
    }
  } else {
    std::optional<std::string> notSafetensors;
    regions = tileRegions((*file)->bytes(), notSafetensors);
    if (notSafetensors) return fail(inputName + " is neither an archive nor safetensors (" + *notSafetensors + ")");
    // As compress will: a repeat of an earlier tensor's bytes gets its program and payload.
    const std::vector<size_t> first = firstWithSameBytes(regions, (*file)->bytes());
    for (size_t i = 0; i < regions.size(); ++i) {
      const Region &r = regions[i];
      if (r.kind != RegionKind::Tensor || (!o.tensor.empty() && r.name != o.tensor)) continue;
      jobs.push_back(Job{RegionInput{r.kind, r.name, r.dtype, r.shape,
                                     (*file)->bytes().subspan(r.bytes.offset, r.bytes.size)},
                         nullptr,
                         {},
                         {},
                         first[i] == i ? std::string() : regions[first[i]].name});
    }
  }
  if (!o.tensor.empty() && jobs.empty()) return fail(inputName + " has no tensor called \"" + o.tensor + "\"");

  std::vector<RegionReport> reports(jobs.size());
  parallelFor(jobs.size(), resolveThreads(o.threads), [&](size_t i) {
    reports[i] = explainRegion(jobs[i].input, options, jobs[i].stored);
    if (!jobs[i].repeatOf.empty()) { // nothing was searched for it, and it stores nothing
      reports[i].payloadBytes = 0;
      reports[i].candidates.clear();
    }
  });
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < reports.size(); ++i) {
      out.push_back(toJson(reports[i], o.candidates));
      if (!jobs[i].file.empty()) out.back()["file"] = jobs[i].file;
      if (!jobs[i].repeatOf.empty()) out.back()["repeat_of"] = jobs[i].repeatOf;
    }
    printJson({{"command", "explain"}, {"input", inputName}, {"level", o.level}, {"tensors", out}});
  } else {
    for (size_t i = 0; i < reports.size(); ++i) {
      if (i) std::cout << "\n";
      if (!jobs[i].file.empty()) std::cout << "in " << jobs[i].file << ":\n";
      printText(reports[i], o.candidates);
      if (!jobs[i].repeatOf.empty())
        std::cout << fmt::format("  repeats the bytes of {}: the same program, reading its payload\n",
                                 quoteString(jobs[i].repeatOf));
    }
  }
  return kExitOk;
}

} // namespace

void registerExplain(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<ExplainOptions>();
  auto *cmd = app.add_subcommand("explain", "Show why each tensor got its program: bytes per literal, bits per "
                                            "weight against order-0 entropies, and the candidates the search scored");
  cmd->add_option("input", o->input, "an archive (its stored programs) or a safetensors checkpoint (searched now)")
      ->required();
  cmd->add_option("--tensor", o->tensor, "only this tensor (in a directory archive, in every file that has one)");
  cmd->add_option("-l,--level", o->level, "1-9: the search's level, as for compress")
      ->check(CLI::Range(1, 9))
      ->capture_default_str();
  cmd->add_option("--candidates", o->candidates, "how many candidates to list per tensor")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  addThreadsOption(cmd, o->threads, "threads (default 0: all cores)");
  cmd->add_flag("--json", o->json, "print the report as JSON on stdout");
  cmd->callback([o, &ctx] { ctx.exitCode = runExplain(*o, ctx.verbosity); });
}

} // namespace brevis::cli
