// brevisc unpack ARCHIVE [-o PROGRAM.bdsl]: an archive as editable text (program + payload
// sidecar). brevisc pack PROGRAM.bdsl [-o ARCHIVE.brv]: back again, after checking that the
// program still rebuilds its source exactly. Together they make archives inspectable and
// editable without losing a byte.
#include "tools/brevisc/Commands.h"

#include "lang/Printer.h"
#include "runtime/FileIO.h"

#include <iostream>

namespace brevis::cli {

namespace {

struct PackOptions {
  std::string input;
  std::string output;
  std::string payload;
  bool force = false;
};

int runUnpack(const PackOptions &o, const Verbosity &v) {
  auto archive = loadArchive(o.input);
  if (!archive) return fail(archive.error().message);
  std::string output = o.output;
  if (output.empty()) {
    const std::string suffix = ".brv";
    std::string base = o.input.size() > suffix.size() && o.input.ends_with(suffix)
                           ? o.input.substr(0, o.input.size() - suffix.size())
                           : o.input;
    output = withExtension(base, ".bdsl");
  }
  std::string payloadPath = output + ".bin";
  // The program names its payload file: point it at the sidecar written beside it.
  Checkpoint &c = archive->module.checkpoint();
  c.payloadFile = baseName(payloadPath);
  auto written = writeProgramFiles(output, printCheckpoint(c), payloadPath,
                                   ByteSpan(archive->payload.data(), archive->payload.size()), o.force);
  if (!written) return fail(written.error().message);
  if (!v.quiet) std::cerr << fmt::format("{}: -> {} + {}\n", o.input, output, payloadPath);
  return kExitOk;
}

int runPack(const PackOptions &o, const Verbosity &v) {
  auto text = readTextFile(o.input);
  if (!text) return fail(text.error().message);
  auto module = loadProgram(o.input, *text, /*requireRunnable=*/true);
  if (!module) return kExitFailure;
  if (!module->isCheckpoint()) return fail(o.input + " is a single expression; only checkpoint programs are packed");
  Checkpoint &c = module->checkpoint();
  std::string payloadPath = o.payload.empty() ? directoryOf(o.input) + "/" + baseName(c.payloadFile) : o.payload;
  auto payload = Payload::readFile(payloadPath);
  if (!payload) return fail(payload.error().message);
  std::string output = o.output.empty() ? withExtension(o.input, ".brv") : o.output;
  auto out = OutputFile::create(output, o.force);
  if (!out) return fail(out.error().message);

  // Bit-exact or nothing: the program must rebuild the file its source line describes.
  DiscardSink sink;
  auto decoded = decodeCheckpoint(c, *payload, /*jit=*/false, sink);
  if (!decoded) return fail(o.input + ": " + decoded.error().message);

  Bytes archive = archiveOf(c, ByteSpan(payload->data(), payload->size()));
  auto done = (*out)->write(archive.data(), archive.size());
  if (done) done = (*out)->commit();
  if (!done) return fail(done.error().message);
  if (!v.quiet)
    std::cerr << fmt::format("{}: -> {} ({}, verified against {})\n", o.input, output, humanBytes(archive.size()),
                             quoteString(c.source.fileName));
  return kExitOk;
}

} // namespace

void registerPack(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<PackOptions>();
  auto *cmd = app.add_subcommand("pack", "Pack a checkpoint program and its payload into an archive, verified");
  cmd->add_option("program", o->input, ".bdsl checkpoint program")->required();
  cmd->add_option("-o,--output", o->output, "archive to write (default: PROGRAM with extension .brv)");
  cmd->add_option("--payload", o->payload, "payload file (default: the one the program names, beside it)");
  cmd->add_flag("-f,--force", o->force, "overwrite an existing archive");
  cmd->callback([o, &ctx] { ctx.exitCode = runPack(*o, ctx.verbosity); });

  auto u = std::make_shared<PackOptions>();
  auto *unpack = app.add_subcommand("unpack", "Write an archive's program as text, with its payload beside it");
  unpack->add_option("archive", u->input, ".brv file")->required();
  unpack->add_option("-o,--output", u->output,
                     "program file to write (default: ARCHIVE without .brv, extension .bdsl); the payload goes to "
                     "OUTPUT.bin");
  unpack->add_flag("-f,--force", u->force, "overwrite existing files");
  unpack->callback([u, &ctx] { ctx.exitCode = runUnpack(*u, ctx.verbosity); });
}

} // namespace brevis::cli
