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
  if (archive->contents().directory)
    return fail(fmt::format("{} holds a directory; unpack works on single-file archives (decompress it instead)",
                            o.input));
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
  Checkpoint &c = archive->checkpoint(0);
  c.payloadFile = baseName(payloadPath);
  const Payload &payload = archive->payload(0);
  auto written = writeProgramFiles(output, printCheckpoint(c), payloadPath, ByteSpan(payload.data(), payload.size()),
                                   o.force);
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
  auto builder = ArchiveBuilder::create(output, o.force);
  if (!builder) return fail(builder.error().message);

  // Bit-exact or nothing: the program must rebuild the file its source line describes.
  auto digests = digestsByDecoding(c, *payload);
  if (!digests) return fail(o.input + ": " + digests.error().message);
  MemberSource member{baseName(c.source.fileName), std::move(c), std::move(*payload), std::move(*digests)};
  if (!isValidMemberPath(member.path))
    return fail(fmt::format("{} names an unusable source file {}", o.input, quoteString(member.checkpoint.source.fileName)));
  DecodeSettings settings;
  settings.threads = resolveThreads(0);
  auto added = (*builder)->add(member, settings);
  if (!added) return fail(o.input + ": " + added.error().message);
  auto size = (*builder)->commit(/*directory=*/false);
  if (!size) return fail(size.error().message);
  if (!v.quiet)
    std::cerr << fmt::format("{}: -> {} ({}, verified against {})\n", o.input, output, humanBytes(*size),
                             quoteString(member.checkpoint.source.fileName));
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
