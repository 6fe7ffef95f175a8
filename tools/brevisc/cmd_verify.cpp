// brevisc verify ARCHIVE [ORIGINAL] [--jit] [-T N]: decode an archive without writing anything and
// check its archive checksum, every region's digest and, when given, every byte against the
// original file or directory.
#include "tools/brevisc/Commands.h"

#include "runtime/containers/FileIO.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <cstring>
#include <iostream>

namespace brevis::cli {

namespace {

struct VerifyOptions {
  std::string input;
  std::string original;
  std::string maxOutput = "16T";
  unsigned threads = 0;
  bool jit = false;
  bool json = false;
};

/// Compares positional writes with a file's bytes; a difference names the region holding it.
class CompareSink final : public PositionalSink {
public:
  CompareSink(ByteSpan expected, const Checkpoint &checkpoint) : expected_(expected), checkpoint_(checkpoint) {}
  Result<void> writeAt(uint64_t offset, const uint8_t *data, size_t size) override {
    if (offset > expected_.size() || size > expected_.size() - offset)
      return Error{fmt::format("the decoded file is longer than the original ({} bytes)", expected_.size())};
    if (std::memcmp(data, expected_.data() + offset, size) != 0) {
      uint64_t i = 0;
      while (data[i] == expected_[offset + i]) ++i;
      return Error{fmt::format("{}the decoded file differs from the original at byte {}", regionAt(offset + i),
                               offset + i)};
    }
    return {};
  }

private:
  /// "tensor NAME: " for the region holding byte `at` (regions are in file order).
  std::string regionAt(uint64_t at) const {
    const auto &regions = checkpoint_.regions;
    auto after = std::upper_bound(regions.begin(), regions.end(), at,
                                  [](uint64_t x, const Region &r) { return x < r.bytes.offset; });
    if (after == regions.begin()) return {};
    const Region &r = *std::prev(after);
    return at - r.bytes.offset < r.bytes.size ? regionLabel(r) + ": " : std::string();
  }
  ByteSpan expected_;
  const Checkpoint &checkpoint_;
};

int runVerify(const VerifyOptions &o, const Verbosity &v) {
  if (auto refused = refuseOwnInput("-", {o.input, o.original})) return *refused; // its summary line goes there
  auto archive = loadArchive(o.input, ArchiveReadOptions{.verifyWholeFile = true});
  if (!archive) return fail(archive.error().message);
  const Archive &a = archive->contents();
  if (auto limited = checkOutputLimit(o.input, archive->originalSize(), *parseSize(o.maxOutput)); !limited)
    return fail(limited.error().message);
  const std::string name = shownName(o.input);
  auto start = std::chrono::steady_clock::now();
  if (a.directory && !o.original.empty()) {
    // Identical means the same files: none missing (found below), none extra.
    auto present = listFiles(o.original);
    if (!present) return fail(present.error().message);
    std::set<std::string> members;
    for (const ArchiveMember &m : a.members) members.insert(m.path);
    for (const std::string &f : *present)
      if (!members.count(f))
        return fail(fmt::format("{}: {} has a file the archive does not: {}", name, o.original, f));
  }
  std::vector<std::shared_ptr<const MappedFile>> originals;
  std::vector<std::unique_ptr<PositionalSink>> sinks;
  std::vector<DecodeJob> jobs;
  for (size_t i = 0; i < archive->memberCount(); ++i) {
    const ArchiveMember &m = a.members[i];
    if (!o.original.empty()) {
      std::string path = a.directory ? o.original + "/" + m.path : o.original;
      auto file = MappedFile::open(path);
      if (!file) return fail(file.error().message);
      if ((*file)->bytes().size() != m.sourceSize)
        return fail(fmt::format("{}: {} has {} bytes, but the archive holds {}", o.input, path, (*file)->bytes().size(),
                                m.sourceSize));
      sinks.push_back(std::make_unique<CompareSink>((*file)->bytes(), archive->checkpoint(i)));
      originals.push_back(std::move(*file));
    } else {
      sinks.push_back(std::make_unique<DiscardPositionalSink>());
    }
    jobs.push_back(DecodeJob{&archive->checkpoint(i), &archive->payload(i), archive->digests(i), sinks.back().get(),
                             a.directory ? o.input + ":" + m.path : o.input, {}});
  }
  // Not only the bytes: the names that reading a tensor by name goes by too.
  for (size_t i = 0; i < archive->memberCount(); ++i)
    if (auto held = archive->declarationsHold(i); !held) return fail(held.error().message);
  const DecodeOptions options = decodeOptions(o.jit, resolveThreads(o.threads), v.verbose);
  if (auto done = runDecodeJobs(jobs, options, "verify " + baseName(o.input), !v.quiet && !o.json && stderrIsTerminal());
      !done) return fail(done.error().message);
  size_t regions = 0;
  for (size_t i = 0; i < archive->memberCount(); ++i) regions += archive->checkpoint(i).regions.size();
  if (o.json) {
    printJson({{"command", "verify"},
               {"input", name},
               {"original", o.original},
               {"archive_bytes", a.fileSize},
               {"original_bytes", archive->originalSize()},
               {"ratio", ratioJson(a.fileSize, archive->originalSize())},
               {"files", archive->memberCount()},
               {"regions", regions},
               {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()},
               {"threads", options.threads},
               {"decoder", o.jit ? "jit" : "interpreter"},
               {"verified", true}});
  } else if (!v.quiet) {
    std::cout << fmt::format("{}: ok, {} decoded{}, {} region checksums match{}\n", name,
                             humanBytes(archive->originalSize()),
                             a.directory ? fmt::format(" in {} files", archive->memberCount()) : "", regions,
                             o.original.empty() ? "" : ", identical to " + o.original);
  }
  return kExitOk;
}

} // namespace

void registerVerify(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<VerifyOptions>();
  auto *cmd = app.add_subcommand("verify", "Decode an archive without writing it and check it (and against ORIGINAL)");
  cmd->add_option("archive", o->input, ".brv file")->required();
  cmd->add_option("original", o->original, "the original file or directory, compared byte for byte");
  addThreadsOption(cmd, o->threads, "decoding threads (default 0: all cores)");
  cmd->add_flag("--jit", o->jit, "decode with native code compiled by LLVM instead of the interpreter (kept across runs in $BREVIS_JIT_CACHE, by default $XDG_CACHE_HOME/brevis/jit or ~/.cache/brevis/jit; off: not kept)");
  cmd->add_option("--max-output", o->maxOutput, kMaxOutputHelp)->check(validateSize);
  cmd->add_flag("--json", o->json, "print the result as JSON on stdout");
  cmd->callback([o, &ctx] { ctx.exitCode = runVerify(*o, ctx.verbosity); });
}

} // namespace brevis::cli
