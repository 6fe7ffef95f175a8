// brevisc decompress ARCHIVE.brv [-o OUT] [-T N] [-f] [--jit] [--json]: rebuild the original file
// or directory, every region checked against its digest before the output is renamed into place.
#include "tools/brevisc/Commands.h"

#include "runtime/Archive.h"
#include "runtime/FileIO.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace brevis::cli {

namespace {

namespace fs = std::filesystem;

struct DecompressOptions {
  std::string input;
  std::string output;
  unsigned threads = 0;
  bool jit = false;
  bool force = false;
  bool json = false;
};

int runDecompress(const DecompressOptions &o, const Verbosity &v) {
  auto start = std::chrono::steady_clock::now();
  std::string output = o.output;
  if (output.empty()) {
    const std::string suffix = ".brv";
    if (o.input.size() <= suffix.size() || !o.input.ends_with(suffix))
      return fail(fmt::format("cannot derive an output name from {} (it does not end in .brv); use -o PATH", o.input));
    output = o.input.substr(0, o.input.size() - suffix.size());
  }
  auto isArchive = fileIsArchive(o.input);
  if (!isArchive) return fail(isArchive.error().message);
  if (!*isArchive) return fail(o.input + " is not a brevis archive (bad magic)");
  std::error_code ec;
  // Devices (-o /dev/null) are written in place; files and directories are not replaced without -f.
  auto status = fs::status(output, ec);
  if (!o.force && (fs::is_regular_file(status) || fs::is_directory(status)))
    return fail(fmt::format("{} already exists; use -f to overwrite it", output));

  auto archive = loadArchive(o.input);
  if (!archive) return fail(archive.error().message);
  DecodeSettings settings;
  settings.jit = o.jit;
  settings.threads = resolveThreads(o.threads);
  settings.progress = !v.quiet && !o.json && stderrIsTerminal();
  settings.progressLabel = "decompress " + baseName(o.input);
  settings.asyncWrites = true;

  std::vector<DecodeJob> jobs;
  std::vector<std::unique_ptr<OutputFile>> files;
  std::vector<std::unique_ptr<SequentialPositionalSink>> pipes;
  std::optional<TempDirectory> dir;
  const Archive &a = archive->contents();
  if (a.directory) {
    auto made = TempDirectory::create(output);
    if (!made) return fail(made.error().message);
    dir.emplace(std::move(*made));
  }
  for (size_t i = 0; i < archive->memberCount(); ++i) {
    std::string path = output;
    if (dir) {
      path = dir->path() + "/" + a.members[i].path;
      fs::create_directories(fs::path(path).parent_path(), ec);
      if (ec) return fail(fmt::format("cannot create {}: {}", fs::path(path).parent_path().string(), ec.message()));
    }
    auto out = OutputFile::create(path, o.force);
    if (!out) return fail(out.error().message);
    if (i == 0)
      if (auto room = (*out)->checkRoom(archive->originalSize()); !room) return fail(room.error().message);
    if (auto room = (*out)->preallocate(a.members[i].sourceSize); !room) return fail(room.error().message);
    PositionalSink *sink = out->get();
    if (!(*out)->isPositional()) {
      settings.threads = 1; // a pipe takes the bytes in order
      pipes.push_back(std::make_unique<SequentialPositionalSink>(**out, 0));
      sink = pipes.back().get();
    }
    files.push_back(std::move(*out));
    jobs.push_back(DecodeJob{&archive->checkpoint(i), &archive->payload(i), archive->digests(i), sink,
                             a.directory ? o.input + ":" + a.members[i].path : o.input, {}});
  }
  auto done = runDecodeJobs(jobs, settings);
  for (size_t i = 0; done && i < files.size(); ++i) done = files[i]->commit();
  if (done && dir) done = dir->commit();
  if (!done) return fail(done.error().message);

  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  uint64_t original = archive->originalSize();
  double rate = seconds > 0 ? static_cast<double>(original) / seconds : 0;
  if (o.json) {
    nlohmann::json j = {{"input", o.input},
                        {"output", output},
                        {"archive_bytes", a.fileSize},
                        {"original_bytes", original},
                        {"files", archive->memberCount()},
                        {"seconds", seconds},
                        {"threads", settings.threads},
                        {"decoder", o.jit ? "jit" : "interpreter"},
                        {"verified", true}};
    std::cout << j.dump(2) << "\n";
  } else if (!v.quiet) {
    std::cerr << fmt::format("{}: {} -> {} ({}{}), verified, {:.2f} s, {}/s\n", o.input, humanBytes(a.fileSize), output,
                             humanBytes(original),
                             a.directory ? fmt::format(", {} files", archive->memberCount()) : "", seconds,
                             humanBytes(static_cast<uint64_t>(rate)));
  }
  return kExitOk;
}

} // namespace

void registerDecompress(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<DecompressOptions>();
  auto *cmd = app.add_subcommand("decompress", "Rebuild the original file or directory from a .brv archive, verified");
  cmd->add_option("archive", o->input, ".brv file")->required();
  cmd->add_option("-o,--output", o->output, "file or directory to write (default: ARCHIVE without .brv)");
  cmd->add_option("-T,--threads", o->threads, "decoding threads (default 0: all cores)");
  cmd->add_flag("--jit", o->jit, "decode with native code compiled by LLVM instead of the interpreter");
  cmd->add_flag("-f,--force", o->force, "overwrite the output");
  cmd->add_flag("--json", o->json, "print the summary as JSON on stdout");
  cmd->callback([o, &ctx] { ctx.exitCode = runDecompress(*o, ctx.verbosity); });
}

} // namespace brevis::cli
