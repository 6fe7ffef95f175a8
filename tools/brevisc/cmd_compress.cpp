// brevisc compress PATH [-o OUT] [-T N] [-f] [--json]: synthesize, verify and pack a checkpoint
// file, or a checkpoint directory (shards, index and the files beside them), into one archive.
#include "tools/brevisc/Commands.h"

#include "runtime/Checksum.h"
#include "runtime/FileIO.h"
#include "synth/TemplateSynth.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

namespace brevis::cli {

namespace {

namespace fs = std::filesystem;

struct CompressOptions {
  std::string input;
  std::string output;
  unsigned threads = 0;
  int level = kDefaultLevel;
  bool force = false;
  bool json = false;
};

int runCompress(const CompressOptions &o, const Verbosity &v) {
  auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  const bool directory = fs::is_directory(o.input, ec);
  std::string input = o.input;
  while (directory && input.size() > 1 && input.back() == '/') input.pop_back();
  std::string output = o.output.empty() ? input + ".brv" : o.output;

  std::vector<std::string> files;
  if (directory) {
    auto listed = listFiles(input);
    if (!listed) return fail(listed.error().message);
    files = std::move(*listed);
  } else {
    files.push_back(baseName(input));
  }
  auto builder = ArchiveBuilder::create(output, o.force);
  if (!builder) return fail(builder.error().message);

  DecodeSettings settings;
  settings.threads = resolveThreads(o.threads);
  settings.progress = !v.quiet && stderrIsTerminal();
  uint64_t originalSize = 0, regions = 0;
  nlohmann::json members = nlohmann::json::array();
  for (const std::string &file : files) {
    std::string path = directory ? input + "/" + file : input;
    auto mapped = MappedFile::open(path);
    if (!mapped) return fail(mapped.error().message);
    ByteSpan bytes = (*mapped)->bytes();
    std::string name = baseName(file);
    settings.progressLabel = "verify " + file;
    // The names `synth` and `unpack` use, so that unpack and pack give back this very archive.
    SynthOutput synth = synthesizeTemplate(bytes, name, archivedPayloadName(name),
                                           SynthOptions{settings.threads, policyForLevel(o.level)});
    if (synth.notSafetensorsReason && !v.quiet && !directory)
      std::cerr << "brevisc: note: " << o.input << " is not valid safetensors (" << *synth.notSafetensorsReason
                << "); compressing it as one byte stream\n";
    MemberSource member{file, std::move(synth.checkpoint), Payload(std::move(synth.payload)), {}};
    for (const Region &r : member.checkpoint.regions)
      member.digests.push_back(regionDigest(bytes.subspan(r.bytes.offset, r.bytes.size)));
    if (auto added = (*builder)->add(member, settings); !added) return fail(path + ": " + added.error().message);
    originalSize += bytes.size();
    regions += member.checkpoint.regions.size();
    members.push_back({{"path", file},
                       {"bytes", bytes.size()},
                       {"payload_bytes", member.payload.size()},
                       {"safetensors", !synth.notSafetensorsReason},
                       {"regions", member.checkpoint.regions.size()}});
    if (v.verbose && directory)
      std::cerr << fmt::format("  {}: {} -> {} payload\n", file, humanBytes(bytes.size()),
                               humanBytes(member.payload.size()));
  }
  auto size = (*builder)->commit(directory);
  if (!size) return fail(size.error().message);

  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double pct = originalSize == 0 ? 100.0 : 100.0 * static_cast<double>(*size) / static_cast<double>(originalSize);
  double rate = seconds > 0 ? static_cast<double>(originalSize) / seconds : 0;
  if (o.json) {
    nlohmann::json j = {{"input", o.input},       {"output", output},       {"original_bytes", originalSize},
                        {"archive_bytes", *size}, {"ratio_percent", pct},   {"seconds", seconds},
                        {"threads", settings.threads}, {"level", o.level}, {"files", files.size()}, {"regions", regions},
                        {"members", members}};
    std::cout << j.dump(2) << "\n";
  } else if (!v.quiet) {
    std::cerr << fmt::format("{}: {} -> {} ({:.2f}%, saved {}), {}{} regions, {:.2f} s, {}/s, {}\n", o.input,
                             humanBytes(originalSize), humanBytes(*size), pct,
                             humanBytes(originalSize > *size ? originalSize - *size : 0),
                             directory ? fmt::format("{} files, ", files.size()) : "", regions, seconds,
                             humanBytes(static_cast<uint64_t>(rate)), output);
  }
  return kExitOk;
}

} // namespace

void registerCompress(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<CompressOptions>();
  auto *cmd = app.add_subcommand("compress", "Compress a checkpoint file or directory into a verified .brv archive");
  cmd->add_option("input", o->input,
                  "safetensors file (any other file is stored as one byte stream), or a directory such as a sharded "
                  "checkpoint: every file in it, recursively, symbolic links to files followed")
      ->required();
  cmd->add_option("-o,--output", o->output, "archive to write (default: INPUT.brv)");
  cmd->add_option("-T,--threads", o->threads, "threads for synthesis and verification (default 0: all cores)");
  cmd->add_option("-l,--level", o->level,
                  "1-9: how much smaller a slower-decoding literal encoding must be to be chosen (9: any gain, the "
                  "smallest archive; 5: 1%; 1: 5%, the fastest decoding)")
      ->check(CLI::Range(1, 9))
      ->capture_default_str();
  cmd->add_flag("-f,--force", o->force, "overwrite an existing archive");
  cmd->add_flag("--json", o->json, "print the summary as JSON on stdout");
  cmd->callback([o, &ctx] { ctx.exitCode = runCompress(*o, ctx.verbosity); });
}

} // namespace brevis::cli
