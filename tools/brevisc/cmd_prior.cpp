// brevisc prior learn MODEL... -o PRIOR.json: the search's prior over productions, learned from
// a sample of the tensors of one or more checkpoints, to reuse with `--prior` on a model family.
#include "tools/brevisc/Commands.h"

#include "runtime/containers/FileIO.h"
#include "synth/Driver.h"
#include "synth/strategies/Search.h"

#include <algorithm>
#include <iostream>

namespace brevis::cli {

namespace {

struct PriorOptions {
  std::vector<std::string> inputs;
  std::string output;
  int level = kDefaultLevel;
  unsigned threads = 0;
  bool force = false;
};

int runLearn(const PriorOptions &o, const Verbosity &v) {
  for (const std::string &input : o.inputs)
    if (auto refused = refuseOwnInput(o.output, {input})) return *refused;
  if (std::count(o.inputs.begin(), o.inputs.end(), "-") > 1) return usageError("standard input (-) can be read once");
  ProductionPrior prior;
  for (const std::string &input : o.inputs) {
    auto file = openInput(input); // - is standard input, read whole
    if (!file) return fail(file.error().message);
    std::optional<std::string> notSafetensors;
    const std::vector<Region> regions = tileRegions((*file)->bytes(), notSafetensors);
    if (notSafetensors) return fail(input + " is not safetensors (" + *notSafetensors + ")");
    std::vector<RegionInput> inputs;
    for (const Region &r : regions)
      inputs.push_back(RegionInput{r.kind, r.name, r.dtype, r.shape, (*file)->bytes().subspan(r.bytes.offset, r.bytes.size)});
    prior.add(learnPrior(inputs, policyForLevel(o.level), resolveThreads(o.threads)));
  }
  const std::string text = prior.toJson() + "\n";
  if (o.output == "-") {
    std::cout << text << std::flush;
    return std::cout ? kExitOk : fail("cannot write the prior to standard output");
  }
  auto out = OutputFile::create(o.output, o.force);
  if (!out) return fail(out.error().message);
  if (auto w = (*out)->write(reinterpret_cast<const uint8_t *>(text.data()), text.size()); !w) return fail(w.error().message);
  if (auto c = (*out)->commit(); !c) return fail(c.error().message);
  if (!v.quiet)
    std::cerr << fmt::format("learned a prior from {} file{} ({} winning productions) -> {}\n", o.inputs.size(),
                             o.inputs.size() == 1 ? "" : "s", prior.observations(), o.output);
  return kExitOk;
}

} // namespace

void registerPrior(CLI::App &app, Context &ctx) {
  auto *cmd = app.add_subcommand("prior", "The search's prior over candidate programs");
  cmd->require_subcommand(1);
  auto o = std::make_shared<PriorOptions>();
  auto *learn = cmd->add_subcommand(
      "learn", "Learn a prior from a sample of the tensors of checkpoints, for compress/synth --prior FILE");
  learn->add_option("inputs", o->inputs, "safetensors checkpoints (- is standard input)")->required();
  learn->add_option("-o,--output", o->output, "prior file to write (JSON; - for standard output)")->required();
  learn->add_option("-l,--level", o->level, "1-9: the encoding policy the sample is searched with, as for compress")
      ->transform(wholeNumberIn(1, 9))
      ->capture_default_str();
  addThreadsOption(learn, o->threads, "threads (default 0: all cores)");
  learn->add_flag("-f,--force", o->force, "overwrite an existing prior file");
  learn->callback([o, &ctx] { ctx.exitCode = runLearn(*o, ctx.verbosity); });
}

} // namespace brevis::cli
