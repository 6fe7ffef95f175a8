// brevisc compress PATH [-o OUT] [-T N] [-f] [--json]: synthesize, verify and pack a checkpoint
// file, or a checkpoint directory (shards, index and the files beside them), into one archive.
#include "tools/brevisc/Commands.h"

#include "tools/brevisc/Progress.h"

#include "runtime/containers/Checksum.h"
#include "runtime/containers/FileIO.h"
#include "synth/Driver.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <unistd.h>
#include <chrono>
#include <filesystem>
#include <iostream>

namespace brevis::cli {

namespace {

namespace fs = std::filesystem;

struct CompressOptions {
  std::vector<std::string> inputs;
  std::string output;
  unsigned threads = 0;
  int level = kDefaultLevel;
  std::string prior;
  bool toStdout = false;
  bool force = false;
  bool json = false;
};

int compressOne(const CompressOptions &o, const std::string &given, const Verbosity &v) {
  auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  // Standard input, or a pipe given by name (`<(cat x)`, a FIFO): no name of its own to record
  // or to name the archive after.
  const bool fromStdin = given == "-" || (fs::exists(given, ec) && !fs::is_regular_file(given, ec) &&
                                          !fs::is_directory(given, ec));
  const bool directory = !fromStdin && fs::is_directory(given, ec);
  const std::string input = withoutTrailingSlashes(given).first;
  const std::string shownInput = shownName(given);

  // Where the archive goes: -o (an existing directory, or DIR/, receives INPUT.brv), standard
  // output, or INPUT.brv beside the input.
  bool toStdout = o.toStdout || o.output == "-";
  std::string output;
  if (!toStdout) {
    if (o.output.empty()) {
      if (fromStdin) return usageError(fmt::format("an archive of {} needs a name: use -o FILE (or -c)", shownInput));
      output = input + ".brv";
    } else {
      auto [path, slash] = withoutTrailingSlashes(o.output);
      output = path;
      if (slash || fs::is_directory(output, ec)) {
        if (!fs::is_directory(output, ec)) return fail(notADirectory(o.output, output));
        if (fromStdin) return usageError(fmt::format("an archive of {} needs a file name: use -o FILE", shownInput));
        output += "/" + baseName(input) + ".brv";
      }
    }
  }
  if (!toStdout && !fromStdin) {
    if (sameFile(input, output))
      return usageError(fmt::format("{} would replace its own input; choose another output with -o PATH", output));
    if (directory) {
      auto inside = fs::weakly_canonical(output, ec).lexically_relative(fs::canonical(input, ec));
      if (!ec && !inside.empty() && *inside.begin() != "..")
        return usageError(fmt::format("the archive {} would be inside the directory it archives; use -o PATH", output));
    }
  }
  if (!toStdout)
    if (auto refused = refuseOutputOfEarlierInput(output, given)) return *refused;
  // The name recorded for the source: what decompress writes by default.
  std::string sourceName = baseName(input);
  if (fromStdin) {
    sourceName = toStdout ? "stdin" : baseName(output);
    if (sourceName.size() > 4 && sourceName.ends_with(".brv")) sourceName.resize(sourceName.size() - 4);
  }

  std::vector<std::string> files;
  if (directory) {
    std::vector<std::string> empty;
    auto listed = listFiles(input, &empty);
    if (!listed) return fail(listed.error().message);
    files = std::move(*listed);
    // An archive holds files: an empty directory is not rebuilt, which is said rather than left
    // to be found missing.
    if (!empty.empty() && !v.quiet && !o.json)
      std::cerr << fmt::format("brevisc: note: {}: {} empty director{} not archived: {}{}\n", shownInput, empty.size(),
                               empty.size() == 1 ? "y is" : "ies are", empty.front(),
                               empty.size() > 1 ? fmt::format(" and {} more", empty.size() - 1) : "");
  } else {
    files.push_back(sourceName);
  }
  if (toStdout) // standard output may be the input, or a file of the directory (`1<> IN`)
    for (const std::string &file : files)
      if (auto refused = refuseOwnInput("-", {directory ? input + "/" + file : given})) return *refused;
  if (toStdout && ::isatty(STDOUT_FILENO))
    return fail("refusing to write an archive to a terminal; use -o FILE or redirect standard output");
  auto builder = [&]() -> Result<std::unique_ptr<ArchiveBuilder>> {
    if (!toStdout) return ArchiveBuilder::create(output, o.force); // refuses a named pipe before its open
    auto sink = OutputFile::standardOutput();
    if (!sink) return sink.error();
    return ArchiveBuilder::create(std::move(*sink));
  }();
  if (!builder) return fail(builder.error().message);

  const DecodeOptions options = decodeOptions(/*jit=*/false, resolveThreads(o.threads));
  const bool showProgress = !v.quiet && stderrIsTerminal();
  uint64_t originalSize = 0, regions = 0;
  nlohmann::json members = nlohmann::json::array();
  for (const std::string &file : files) {
    std::string path = directory ? input + "/" + file : input;
    auto mapped = openInput(directory ? path : given);
    if (!mapped) return fail(mapped.error().message);
    ByteSpan bytes = (*mapped)->bytes();
    std::string name = baseName(file);
    const std::string shown = directory ? path : shownInput;
    auto strategyOptions = strategyOptionsFor(o.level, o.prior);
    if (!strategyOptions) return fail(strategyOptions.error().message);
    std::atomic<uint64_t> synthesized{0}, verified{0};
    const CompressSettings settings{*strategyOptions, options.threads, &synthesized, &verified};
    const std::string shownName = directory ? file : baseName(shownInput);
    std::optional<std::string> notSafetensorsReason;
    Result<MemberSource> member = Error{};
    {
      ProgressBar bar("synthesize " + shownName, bytes.size(), synthesized, showProgress);
      member = synthesizeMember(file, bytes, settings, &notSafetensorsReason, builder->get());
    }
    if (!member) return fail(shown + ": " + member.error().message);
    if (notSafetensorsReason && !v.quiet && (!directory || name.ends_with(".safetensors")))
      std::cerr << "brevisc: note: " << shown << " is not valid safetensors (" << *notSafetensorsReason
                << "); compressing it as one byte stream\n";
    Result<void> added;
    {
      ProgressBar bar("verify " + shownName, bytes.size(), verified, showProgress);
      DecodeOptions verifying = options;
      verifying.progress = &verified;
      added = (*builder)->add(*member, verifying);
    }
    // An input that changed while it was read explains any failure (and must fail a success).
    if (auto intact = (*mapped)->checkIntact(); !intact) return fail(intact.error().message + "; nothing was written");
    if (!added) return fail(shown + ": " + added.error().message);
    originalSize += bytes.size();
    regions += member->checkpoint.regions.size();
    members.push_back({{"path", file},
                       {"original_bytes", bytes.size()},
                       {"payload_bytes", member->checkpoint.payloadSize},
                       {"safetensors", !notSafetensorsReason},
                       {"regions", member->checkpoint.regions.size()}});
    if (notSafetensorsReason) members.back()["not_safetensors_reason"] = *notSafetensorsReason;
    if (v.verbose && directory)
      std::cerr << fmt::format("  {}: {} -> {} payload\n", file, humanBytes(bytes.size()),
                               humanBytes(member->checkpoint.payloadSize));
  }
  auto size = (*builder)->finish(directory);
  if (!size) return fail(size.error().message);
  if (!toStdout) rememberOutput(output, given);

  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double rate = seconds > 0 ? static_cast<double>(originalSize) / seconds : 0;
  const std::string shownOutput = toStdout ? "standard output" : output;
  if (o.json) {
    printJson({{"command", "compress"},
               {"input", shownInput},
               {"output", shownOutput},
               {"original_bytes", originalSize},
               {"archive_bytes", *size},
               {"ratio", ratioJson(*size, originalSize)},
               {"seconds", seconds},
               {"peak_memory_bytes", peakMemoryBytes()},
               {"threads", options.threads},
               {"level", o.level},
               {"files", files.size()},
               {"regions", regions},
               {"members", members}});
  } else if (!v.quiet) {
    std::cerr << fmt::format("{}: {}, {}{} regions, {:.2f} s, {}/s, {}\n", shownInput, sizeChange(originalSize, *size),
                             directory ? fmt::format("{} files, ", files.size()) : "", regions, seconds,
                             humanBytes(static_cast<uint64_t>(rate)), shownOutput);
  }
  return kExitOk;
}

int runCompress(const CompressOptions &o, const Verbosity &v) {
  if (o.inputs.size() > 1 && !o.output.empty() && !std::filesystem::is_directory(o.output))
    return usageError("-o names one archive; with several inputs, give a directory or leave it out (each archive is written "
                "beside its input)");
  if (o.inputs.size() > 1 && (o.toStdout || o.output == "-")) return usageError("standard output takes one archive");
  if (std::count(o.inputs.begin(), o.inputs.end(), "-") > 1) return usageError("standard input (-) can be read only once");
  if (o.json && (o.toStdout || o.output == "-")) return usageError("--json and the archive cannot both go to standard output");
  if (o.toStdout && !o.output.empty() && o.output != "-")
    return usageError("-c writes to standard output; -o names another output: give one of them");
  int status = kExitOk;
  for (const std::string &input : o.inputs)
    if (int s = compressOne(o, input, v); s != kExitOk) status = s;
  return status;
}

} // namespace

void registerCompress(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<CompressOptions>();
  auto *cmd = app.add_subcommand("compress", "Compress a checkpoint file or directory into a verified .brv archive");
  cmd->add_option("inputs", o->inputs,
                  "safetensors files (any other file is stored as one byte stream), each compressed to its own "
                  "archive, or a directory such as a sharded checkpoint: every file in it, recursively, symbolic links "
                  "to files followed; - is standard input (read whole into memory)")
      ->required();
  cmd->add_option("-o,--output", o->output,
                  "archive to write (default: INPUT.brv); an existing directory, or DIR/, receives INPUT.brv. An "
                  "archive is written with seeks (its header last): - (standard output) works only when it is "
                  "redirected to a file, not a pipe");
  cmd->add_flag("-c,--stdout", o->toStdout, "write the archive to standard output (a file, not a pipe; see -o)");
  cmd->add_flag("-k,--keep")->description(
      "keep the input, as always: brevisc never removes it (accepted as zstd accepts it)")
      ->disable_flag_override();
  addThreadsOption(cmd, o->threads,
                  "threads for synthesis (tensors side by side, and a large tensor's fields) and verification; the "
                  "archive is the same for any number (default 0: all cores)");
  cmd->add_option("-l,--level", o->level,
                  "1-9: how long the search for each tensor's program runs (1: none, the template's program; 5: 64 "
                  "candidates; 9: 512) and how much smaller a slower-decoding literal encoding must be to be chosen "
                  "(1: 5%, the fastest decoding; 5: 1%; 9: any gain, the smallest archives (the search chooses by "
                  "estimates: on a file, a lower level can come out smaller, by up to about half a percent); the "
                  "`context` encoding, ten times slower to decode than any other, five times that and 1% at least; "
                  "neither it nor `rans_o1` is tried at level 1)")
      ->transform(wholeNumberIn(1, 9))
      ->capture_default_str();
  addPriorOption(cmd, o->prior);
  cmd->add_flag("-f,--force", o->force, "overwrite an existing archive");
  cmd->add_flag("--json", o->json, "print the summary as JSON on stdout");
  cmd->callback([o, &ctx] { ctx.exitCode = runCompress(*o, ctx.verbosity); });
}

} // namespace brevis::cli
