// brevisc synth MODEL [-o PROGRAM.bdsl] [-f]: one program per tensor, as editable text plus
// a binary payload sidecar (PROGRAM.bdsl.bin).
#include "tools/brevisc/Commands.h"

#include "tools/brevisc/Progress.h"
#include "tools/brevisc/Verify.h"

#include "lang/Printer.h"
#include "runtime/containers/FileIO.h"
#include "synth/Driver.h"

#include <iostream>

namespace brevis::cli {

namespace {

struct SynthCommandOptions {
  std::string input;
  std::string output;
  unsigned threads = 0;
  int level = kDefaultLevel;
  bool force = false;
  bool json = false;
};

int runSynth(const SynthCommandOptions &o, const Verbosity &v) {
  std::string output = o.output.empty() ? withExtension(o.input, ".bdsl") : o.output;
  std::string payloadPath = output + ".bin";
  auto file = MappedFile::open(o.input);
  if (!file) return fail(file.error().message);

  auto strategy = makeStrategy(kDefaultStrategy, strategyOptionsForLevel(o.level));
  if (!strategy) return fail(strategy.error().message);
  std::atomic<uint64_t> done{0};
  SynthOutput synth;
  {
    ProgressBar bar("synthesize " + baseName(o.input), (*file)->bytes().size(), done,
                    !v.quiet && !o.json && stderrIsTerminal());
    synth = synthesizeCheckpoint((*file)->bytes(), baseName(o.input), baseName(payloadPath), **strategy,
                                 SynthOptions{resolveThreads(o.threads), &done});
  }
  if (auto intact = (*file)->checkIntact(); !intact) return fail(intact.error().message + "; nothing was written");
  if (synth.notSafetensorsReason && !v.quiet)
    std::cerr << "brevisc: note: " << o.input << " is not valid safetensors (" << *synth.notSafetensorsReason
              << "); keeping it as one byte stream\n";
  std::string text = printCheckpoint(synth.checkpoint);
  if (auto ok = verifyProgram(output, text, synth.payload); !ok) return fail(ok.error().message);

  if (auto written = writeProgramFiles(output, text, payloadPath, synth.payload, o.force); !written)
    return fail(written.error().message);
  if (o.json)
    printJson({{"command", "synth"},
               {"input", o.input},
               {"output", output},
               {"payload", payloadPath},
               {"original_bytes", (*file)->bytes().size()},
               {"program_bytes", text.size()},
               {"payload_bytes", synth.payload.size()},
               {"regions", synth.checkpoint.regions.size()},
               {"safetensors", !synth.notSafetensorsReason}});
  else if (!v.quiet)
    std::cerr << fmt::format("{}: {} regions -> {} ({}) + {} ({})\n", o.input, synth.checkpoint.regions.size(), output,
                             humanBytes(text.size()), payloadPath, humanBytes(synth.payload.size()));
  return kExitOk;
}

} // namespace

void registerSynth(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<SynthCommandOptions>();
  auto *cmd = app.add_subcommand("synth", "Synthesize a program for every tensor of a checkpoint");
  cmd->add_option("input", o->input, "safetensors file (any other file is kept as one byte stream)")
      ->required();
  cmd->add_option("-o,--output", o->output, "program file to write (default: INPUT with extension .bdsl); "
                                            "the payload goes to OUTPUT.bin");
  cmd->add_option("-T,--threads", o->threads, "synthesis threads (default 0: all cores)");
  cmd->add_option("-l,--level", o->level, "1-9, as for compress")->check(CLI::Range(1, 9))->capture_default_str();
  cmd->add_flag("-f,--force", o->force, "overwrite existing output files");
  cmd->add_flag("--json", o->json, "print the result as JSON on stdout (docs/cli.md)");
  cmd->callback([o, &ctx] { ctx.exitCode = runSynth(*o, ctx.verbosity); });
}

} // namespace brevis::cli
