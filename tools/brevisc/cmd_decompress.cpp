// brevisc decompress ARCHIVE.brv [-o OUT] [-f] [--jit]: rebuild the original file, verified
// against its checksum before it is renamed into place.
#include "tools/brevisc/Commands.h"

#include "runtime/Archive.h"
#include "runtime/FileIO.h"

#include <chrono>
#include <iostream>

namespace brevis::cli {

namespace {

struct DecompressOptions {
  std::string input;
  std::string output;
  bool jit = false;
  bool force = false;
};

int runDecompress(const DecompressOptions &o, const Verbosity &v) {
  auto start = std::chrono::steady_clock::now();
  std::string output = o.output;
  if (output.empty()) {
    const std::string suffix = ".brv";
    if (o.input.size() <= suffix.size() || o.input.compare(o.input.size() - suffix.size(), suffix.size(), suffix) != 0)
      return fail(fmt::format("cannot derive an output name from {} (it does not end in .brv); use -o FILE", o.input));
    output = o.input.substr(0, o.input.size() - suffix.size());
  }
  // The output is claimed first: a refusal to overwrite should not wait for a large archive.
  auto out = OutputFile::create(output, o.force);
  if (!out) return fail(out.error().message);
  auto archive = loadArchive(o.input);
  if (!archive) return fail(archive.error().message);
  const Checkpoint &c = archive->checkpoint();

  if (auto room = (*out)->reserve(c.source.size); !room) return fail(room.error().message);
  auto done = decodeCheckpoint(c, archive->payload, o.jit, **out);
  if (done) done = (*out)->commit();
  if (!done) return fail(o.input + ": " + done.error().message);

  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!v.quiet)
    std::cerr << fmt::format("{}: {} -> {} ({}), verified, {:.2f} s\n", o.input, humanBytes(archive->archiveSize), output,
                             humanBytes(c.source.size), seconds);
  return kExitOk;
}

} // namespace

void registerDecompress(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<DecompressOptions>();
  auto *cmd = app.add_subcommand("decompress", "Rebuild the original file from a .brv archive, verified");
  cmd->add_option("archive", o->input, ".brv file")->required();
  cmd->add_option("-o,--output", o->output, "file to write (default: ARCHIVE without .brv)");
  cmd->add_flag("--jit", o->jit, "decode with native code compiled by LLVM instead of the interpreter");
  cmd->add_flag("-f,--force", o->force, "overwrite the output file");
  cmd->callback([o, &ctx] { ctx.exitCode = runDecompress(*o, ctx.verbosity); });
}

} // namespace brevis::cli
