// brevisc decompress ARCHIVE... [-o OUT | -c] [-T N] [-f] [--jit] [--json]: rebuild the original
// file or directory, every region checked against its digest and the whole archive against its
// checksum before the output is renamed into place.
#include "tools/brevisc/Commands.h"

#include "runtime/containers/Archive.h"
#include "runtime/containers/FileIO.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>
#include <unistd.h>

namespace brevis::cli {

namespace {

namespace fs = std::filesystem;

struct DecompressOptions {
  std::vector<std::string> inputs;
  std::string output;
  std::string maxOutput = "16T";
  unsigned threads = 0;
  bool toStdout = false;
  bool jit = false;
  bool force = false;
  bool json = false;
  bool skipArchiveChecksum = false;
};

/// Where one archive goes: a path, or standard output (empty path).
struct Destination {
  std::string path;
  bool toStdout = false;
};

/// Whether `input` is decompressed to standard output: -c, -o -, or an archive read from standard
/// input with no -o.
bool toStandardOutput(const DecompressOptions &o, const std::string &input) {
  return o.toStdout || o.output == "-" || (o.output.empty() && input == "-");
}

/// `name` without its `.brv` (nothing where it does not end so, or is no more than that).
std::optional<std::string> withoutArchiveSuffix(const std::string &name) {
  const std::string suffix = ".brv";
  if (name.size() <= suffix.size() || !name.ends_with(suffix)) return std::nullopt;
  return name.substr(0, name.size() - suffix.size());
}

Result<Destination> chooseDestination(const DecompressOptions &o, const std::string &input, const ArchiveReader &archive) {
  const Archive &a = archive.contents();
  if (toStandardOutput(o, input)) {
    if (::isatty(STDOUT_FILENO))
      return Error{"refusing to write a checkpoint to a terminal; use -o FILE or redirect standard output"};
    return Destination{"", true};
  }
  if (o.output.empty()) {
    if (a.directory) {
      const auto dir = withoutArchiveSuffix(withoutTrailingSlashes(input).first);
      if (!dir)
        return Error{fmt::format("cannot derive a directory name from {} (it does not end in .brv); use -o DIR", input)};
      return Destination{*dir};
    }
    // The file's own name, as the archive recorded it, beside the archive (in the current
    // directory when the archive is a pipe: `<(cat x.brv)` lies in /dev/fd).
    std::string dir = fs::is_regular_file(input) ? directoryOf(input) : ".";
    std::string name = baseName(a.members[0].path);
    return Destination{dir == "." ? name : dir + "/" + name};
  }
  auto [out, slash] = withoutTrailingSlashes(o.output);
  if (!a.directory && (slash || fs::is_directory(out))) {
    if (!fs::is_directory(out)) return Error{notADirectory(o.output, out)};
    return Destination{out + "/" + baseName(a.members[0].path)};
  }
  if (a.directory && o.inputs.size() > 1) {
    // One of several archives into the directory -o names: a directory archive becomes a
    // directory in it, named after the archive, as it would beside the archive.
    const auto dir = withoutArchiveSuffix(baseName(withoutTrailingSlashes(input).first));
    if (!dir) return Error{fmt::format("cannot derive a directory name from {} (it does not end in .brv)", input)};
    return Destination{out + "/" + *dir};
  }
  return Destination{out};
}

int decompressOne(const DecompressOptions &o, const std::string &input, const Verbosity &v) {
  auto start = std::chrono::steady_clock::now();
  const std::string name = shownName(input);
  std::shared_ptr<const MappedFile> file;
  auto archive = loadArchive(input, {}, &file);
  if (!archive) return fail(archive.error().message);
  const Archive &a = archive->contents();
  if (a.directory && toStandardOutput(o, input))
    return usageError(fmt::format("{} is an archive of a directory of {} files; it cannot be written to standard "
                                  "output (use -o DIR)",
                                  input, a.members.size()));
  auto destination = chooseDestination(o, input, *archive);
  if (!destination) return fail(destination.error().message);
  const std::string &output = destination->path;
  if (auto limited = checkOutputLimit(name, archive->originalSize(), *parseSize(o.maxOutput)); !limited)
    return fail(limited.error().message);
  if (!destination->toStdout && input != "-" && sameFile(input, output))
    return usageError(fmt::format("{} would be written over its own archive; use -o PATH", output));
  if (a.directory && !destination->toStdout && input != "-")
    for (const auto &member : a.members)
      if (sameFile(input, output + "/" + member.path))
        return usageError(fmt::format("{}/{} would be written over its own archive; use -o PATH", output, member.path));
  if (!destination->toStdout)
    if (auto refused = refuseOutputOfEarlierInput(output, input)) return *refused;

  DecodeOptions options = decodeOptions(o.jit, resolveThreads(o.threads), v.verbose);

  // Every output is opened (and a non-empty directory refused) before anything is decoded.
  std::vector<DecodeJob> jobs;
  std::vector<std::unique_ptr<OutputFile>> files; // outputs not owned by `dir`
  std::vector<OutputFile *> outputs;
  std::unique_ptr<DirectoryOutput> dir;
  if (a.directory && !fs::is_character_file(output)) {
    auto opened = DirectoryOutput::open(output, o.force);
    if (!opened) return fail(opened.error().message);
    dir = std::move(*opened);
  }
  for (size_t i = 0; i < archive->memberCount(); ++i) {
    Result<OutputFile *> out = Error{};
    if (dir) {
      out = dir->createFile(a.members[i].path);
    } else {
      auto made = destination->toStdout ? OutputFile::standardOutput() : OutputFile::create(output, o.force);
      if (made) {
        files.push_back(std::move(*made));
        out = files.back().get();
      } else {
        out = made.error();
      }
    }
    if (!out) return fail(out.error().message);
    outputs.push_back(*out);
  }
  if (auto room = outputs[0]->checkRoom(archive->originalSize()); !room) return fail(room.error().message);
  std::vector<std::unique_ptr<SequentialPositionalSink>> pipes;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (auto room = outputs[i]->preallocate(a.members[i].sourceSize); !room) return fail(room.error().message);
    PositionalSink *sink = outputs[i];
    if (!decodesInPlace(*outputs[i], destination->toStdout)) {
      options.threads = 1; // a pipe takes the bytes in order
      pipes.push_back(std::make_unique<SequentialPositionalSink>(*outputs[i], 0));
      sink = pipes.back().get();
    }
    jobs.push_back(DecodeJob{&archive->checkpoint(i), &archive->payload(i), archive->digests(i), sink,
                             a.directory ? name + ":" + a.members[i].path : name, {}});
  }
  // Standard output cannot be taken back: bytes written there stay, so a damaged archive must
  // be found before the first byte goes out. The whole archive's checksum (one pass at memory
  // speed) finds any damage there first; a file is written aside and renamed only once all is
  // checked, so there the check runs beside the decoding (on a thread of its own where there
  // are two) and its failure counts after theirs: damage inside a region is reported by the
  // tensor it hits; the checksum covers the rest (payload bytes no region reads, the trailer).
  const bool checkFirst = destination->toStdout && !o.skipArchiveChecksum;
  Result<void> done = checkFirst ? checkArchiveChecksum(file->bytes(), name) : Result<void>{};
  if (!o.skipArchiveChecksum && !checkFirst)
    options.alongside = [&] { return checkArchiveChecksum(file->bytes(), name); };
  if (done) done = runDecodeJobs(jobs, options, "decompress " + baseName(name), !v.quiet && !o.json && stderrIsTerminal());
  // A mapped archive that shrank reads as zeros past its new end: say so rather than "corrupt".
  if (auto intact = file->checkIntact(); !intact) done = intact.error();
  for (size_t i = 0; done && i < files.size(); ++i) done = files[i]->commit();
  if (done && dir) done = dir->commit();
  if (!done) return fail(done.error().message);
  if (!destination->toStdout) rememberOutput(output, input);

  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  uint64_t original = archive->originalSize();
  double rate = seconds > 0 ? static_cast<double>(original) / seconds : 0;
  const std::string shownOutput = destination->toStdout ? "standard output" : output;
  size_t regions = 0;
  for (size_t i = 0; i < archive->memberCount(); ++i) regions += archive->checkpoint(i).regions.size();
  if (o.json) {
    nlohmann::json j = {{"command", "decompress"},
                        {"input", name},
                        {"output", shownOutput},
                        {"archive_bytes", a.fileSize},
                        {"original_bytes", original},
                        {"ratio", ratioJson(a.fileSize, original)},
                        {"files", archive->memberCount()},
                        {"regions", regions},
                        {"seconds", seconds},
                        {"peak_memory_bytes", peakMemoryBytes()},
                        {"threads", options.threads},
                        {"decoder", o.jit ? "jit" : "interpreter"},
                        {"archive_checksum", !o.skipArchiveChecksum},
                        {"verified", true}};
    printJson(j);
  } else if (!v.quiet) {
    std::cerr << fmt::format("{}: {} -> {} ({}{}), verified, {:.2f} s, {}/s\n", name, humanBytes(a.fileSize),
                             shownOutput, humanBytes(original),
                             a.directory ? fmt::format(", {} files", archive->memberCount()) : "", seconds,
                             humanBytes(static_cast<uint64_t>(rate)));
  }
  return kExitOk;
}

int runDecompress(const DecompressOptions &o, const Verbosity &v) {
  // A path ending in '/' asks for a directory: say what is wrong with it, as for one archive.
  if (o.inputs.size() > 1 && !o.output.empty() && o.output.back() == '/' && !fs::is_directory(o.output))
    return fail(notADirectory(o.output, withoutTrailingSlashes(o.output).first));
  if (o.inputs.size() > 1 && !o.output.empty() && o.output != "-" && !fs::is_directory(o.output))
    return usageError("-o names one output; with several archives, give a directory or leave it out (each is written "
                      "beside its archive)");
  if (std::count(o.inputs.begin(), o.inputs.end(), "-") > 1) return usageError("standard input (-) can be read only once");
  const auto writesStandardOutput = [&](const std::string &input) { return toStandardOutput(o, input); };
  if (o.json && std::any_of(o.inputs.begin(), o.inputs.end(), writesStandardOutput))
    return usageError("--json and the decompressed bytes cannot both go to standard output");
  if (o.toStdout && !o.output.empty() && o.output != "-")
    return usageError("-c writes to standard output; -o names another output: give one of them");
  // Before the first archive's bytes go out: any of the inputs may be the file standard output
  // writes (`decompress -c a.brv b.brv 1<> b.brv`).
  if (std::any_of(o.inputs.begin(), o.inputs.end(), writesStandardOutput))
    for (const std::string &input : o.inputs)
      if (auto refused = refuseOwnInput("-", {input})) return *refused;
  int status = kExitOk;
  for (const std::string &input : o.inputs)
    if (int s = decompressOne(o, input, v); s != kExitOk) status = s;
  return status;
}

} // namespace

void registerDecompress(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<DecompressOptions>();
  auto *cmd = app.add_subcommand("decompress", "Rebuild the original file or directory from a .brv archive, verified");
  cmd->add_option("archives", o->inputs,
                  ".brv files, each decompressed in turn; - is standard input (read whole into memory)")
      ->required();
  cmd->add_option("-o,--output", o->output,
                  "file or directory to write; - is standard output (default: the file name recorded in the archive, "
                  "beside it; for a directory archive, ARCHIVE without .brv; standard output when the archive is read "
                  "from standard input). A directory archive goes into an "
                  "existing directory only if it is empty, or with -f, as tar -x does: each file replaced by itself, "
                  "nothing else touched. A file archive given an existing directory (or DIR/) goes into it; with "
                  "several archives, -o names an existing directory, and a directory archive goes into DIR/ARCHIVE "
                  "without .brv");
  cmd->add_flag("-c,--stdout", o->toStdout,
                "write to standard output (file archives). Bytes go out as they are decoded, after the whole archive's "
                "checksum: a damaged archive fails with exit status 1 before any byte is written (with "
                "--no-archive-check, bytes go out as they are decoded, wrong ones and those after them included, "
                "and the exit status is 1)");
  addThreadsOption(cmd, o->threads, "decoding threads (default 0: all cores)");
  cmd->add_flag("-k,--keep")->description(
      "keep the input, as always: brevisc never removes it (accepted as zstd accepts it)")
      ->disable_flag_override();
  cmd->add_flag("--jit", o->jit, "decode with native code compiled by LLVM instead of the interpreter (kept across runs in $BREVIS_JIT_CACHE, by default $XDG_CACHE_HOME/brevis/jit or ~/.cache/brevis/jit; off: not kept)");
  cmd->add_flag("-f,--force", o->force, "overwrite existing files (and write into a non-empty directory)");
  cmd->add_option("--max-output", o->maxOutput, kMaxOutputHelp)->check(validateSize);
  cmd->add_flag("--no-archive-check", o->skipArchiveChecksum,
                "skip the checksum of the whole archive (payload bytes that no decoded region reads are then not "
                "checked); every decoded region is still verified");
  cmd->add_flag("--json", o->json, "print the summary as JSON on stdout");
  cmd->callback([o, &ctx] { ctx.exitCode = runDecompress(*o, ctx.verbosity); });
}

} // namespace brevis::cli
