// brevisc compress MODEL [-o MODEL.brv] [-f]: synthesize, verify and pack into one archive.
#include "tools/brevisc/Commands.h"
#include "tools/brevisc/Verify.h"

#include "lang/Printer.h"
#include "runtime/FileIO.h"
#include "synth/TemplateSynth.h"

#include <chrono>
#include <iostream>

namespace brevis::cli {

namespace {

struct CompressOptions {
  std::string input;
  std::string output;
  bool force = false;
};

int runCompress(const CompressOptions &o, const Verbosity &v) {
  auto start = std::chrono::steady_clock::now();
  std::string output = o.output.empty() ? o.input + ".brv" : o.output;
  auto file = readFile(o.input);
  if (!file) return fail(file.error().message);

  std::string name = baseName(o.input);
  // The names `synth` and `unpack` use, so that unpack and pack give back this very archive.
  SynthOutput synth = synthesizeTemplate(*file, name, withExtension(name, ".bdsl") + ".bin");
  if (synth.notSafetensorsReason && !v.quiet)
    std::cerr << "brevisc: note: " << o.input << " is not valid safetensors (" << *synth.notSafetensorsReason
              << "); compressing it as one byte stream\n";
  if (auto ok = verifyProgram(name + ".bdsl", printCheckpoint(synth.checkpoint), synth.payload); !ok)
    return fail(ok.error().message);
  Bytes archive = archiveOf(synth.checkpoint, synth.payload);
  if (auto written = writeFile(output, archive, o.force); !written) return fail(written.error().message);

  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!v.quiet) {
    double pct = file->empty() ? 100.0 : 100.0 * static_cast<double>(archive.size()) / static_cast<double>(file->size());
    std::cerr << fmt::format("{}: {} -> {} ({:.2f}%, saved {}), {} regions, {:.2f} s, {}\n", o.input,
                             humanBytes(file->size()), humanBytes(archive.size()), pct,
                             humanBytes(file->size() > archive.size() ? file->size() - archive.size() : 0),
                             synth.checkpoint.regions.size(), seconds, output);
  }
  return kExitOk;
}

} // namespace

void registerCompress(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<CompressOptions>();
  auto *cmd = app.add_subcommand("compress", "Compress a checkpoint into a verified .brv archive");
  cmd->add_option("input", o->input, "safetensors file (any other file is stored as one byte stream)")
      ->required();
  cmd->add_option("-o,--output", o->output, "archive to write (default: INPUT.brv)");
  cmd->add_flag("-f,--force", o->force, "overwrite an existing archive");
  cmd->callback([o, &ctx] { ctx.exitCode = runCompress(*o, ctx.verbosity); });
}

} // namespace brevis::cli
