// brevisc explain ARCHIVE|CHECKPOINT [--tensor NAME] [--json] [-l LEVEL]: why each tensor got
// its program — the program with the bytes of each literal, bits per weight beside the order-0
// entropies of whole words and of the IEEE fields, and the candidates the search scored for it
// with their estimated costs. For an archive, the stored program is shown and the candidates
// come from searching the decoded tensor again at the given level.
#include "tools/brevisc/Commands.h"

#include "lang/Diagnostics.h"
#include "lang/Printer.h"
#include "runtime/containers/FileIO.h"
#include "tools/api/Explanation.h"

#include <iostream>

namespace brevis::cli {

namespace {

struct ExplainOptions {
  std::string input;
  std::optional<std::string> tensor;
  int level = kDefaultLevel;
  std::string prior;
  unsigned threads = 0;
  size_t candidates = 5;
  bool json = false;
};

std::string shapeText(const std::vector<uint64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void printText(const RegionReport &r, size_t candidates) {
  std::cout << fmt::format("tensor {} {}{}: {} weights, {} -> {} ({:.2f} bits/weight)\n", quoteString(r.name),
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
    std::cout << fmt::format("    {:<32} {:<8} u{}[{}]  {:>10}  {:6.2f} bits/word{}\n", l.path, l.encoding, l.width,
                             l.length, humanBytes(l.bytes), bitsPerWord(l.bytes, l.length),
                             l.detail.empty() ? "" : "  (" + l.detail + ")");
  if (candidates > 0 && !r.candidates.empty()) std::cout << "  candidates (estimated, cheapest first):\n";
  for (const size_t i : shownCandidates(r, candidates))
    std::cout << fmt::format("    {} {:>10}  {}\n", r.candidates[i].chosen ? "*" : " ",
                             humanBytes(static_cast<uint64_t>(r.candidates[i].estimatedBytes)), r.candidates[i].program);
}

int runExplain(const ExplainOptions &o, const Verbosity &v) {
  if (auto refused = refuseOwnInput("-", {o.input})) return *refused; // the report goes there
  const std::string inputName = shownName(o.input);
  auto file = openInput(o.input); // a checkpoint or an archive, from a file or a pipe
  if (!file) return fail(file.error().message);
  auto strategy = strategyOptionsFor(o.level, o.prior);
  if (!strategy) return fail(strategy.error().message);
  auto explained =
      explainTensors(*file, inputName, ExplainSettings{o.tensor, o.level, resolveThreads(o.threads), *strategy});
  if (!explained) return fail(explained.error().message);
  if (explained->empty() && !v.quiet) // an archive of a file kept as bytes
    std::cerr << fmt::format("brevisc: note: {} holds no tensors: its file is kept as bytes\n", inputName);
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const ExplainedTensor &t : *explained) out.push_back(explanationJson(t, o.candidates));
    printJson({{"command", "explain"}, {"input", inputName}, {"level", o.level}, {"tensors", out}});
  } else {
    for (size_t i = 0; i < explained->size(); ++i) {
      const ExplainedTensor &t = (*explained)[i];
      if (i) std::cout << "\n";
      if (!t.file.empty()) std::cout << "in " << withControlsEscaped(t.file, false) << ":\n";
      printText(t.report, o.candidates);
      if (!t.repeatOf.empty())
        std::cout << fmt::format("  repeats the bytes of {}: the same program, reading its payload\n",
                                 quoteString(t.repeatOf));
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
      ->transform(wholeNumberIn(1, 9))
      ->capture_default_str();
  addPriorOption(cmd, o->prior);
  cmd->add_option("--candidates", o->candidates, "how many candidates to list per tensor")
      ->transform(wholeNumberIn(0, 1000))
      ->capture_default_str();
  addThreadsOption(cmd, o->threads, "threads (default 0: all cores)");
  cmd->add_flag("--json", o->json, "print the report as JSON on stdout");
  cmd->callback([o, &ctx] { ctx.exitCode = runExplain(*o, ctx.verbosity); });
}

} // namespace brevis::cli
