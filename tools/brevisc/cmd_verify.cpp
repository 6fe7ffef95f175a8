// brevisc verify ARCHIVE [ORIGINAL] [--jit]: decode an archive without writing anything and
// check it against its recorded checksum and, when given, byte for byte against the original.
#include "tools/brevisc/Commands.h"

#include "runtime/FileIO.h"

#include <cstring>
#include <iostream>

namespace brevis::cli {

namespace {

struct VerifyOptions {
  std::string input;
  std::string original;
  bool jit = false;
};

/// Compares what is written with a file's bytes, and remembers the first difference.
class CompareSink final : public ByteSink {
public:
  explicit CompareSink(const Bytes *expected) : expected_(expected) {}
  Result<void> write(const uint8_t *data, size_t size) override {
    if (expected_) {
      if (size > expected_->size() - std::min<uint64_t>(at_, expected_->size()))
        return Error{fmt::format("the decoded file is longer than the original ({} bytes)", expected_->size())};
      if (std::memcmp(data, expected_->data() + at_, size) != 0) {
        uint64_t i = 0;
        while (data[i] == (*expected_)[at_ + i]) ++i;
        return Error{fmt::format("the decoded file differs from the original at byte {}", at_ + i)};
      }
    }
    at_ += size;
    return {};
  }
  uint64_t written() const { return at_; }

private:
  const Bytes *expected_;
  uint64_t at_ = 0;
};

int runVerify(const VerifyOptions &o, const Verbosity &v) {
  auto archive = loadArchive(o.input);
  if (!archive) return fail(archive.error().message);
  std::optional<Bytes> original;
  if (!o.original.empty()) {
    auto bytes = readFile(o.original);
    if (!bytes) return fail(bytes.error().message);
    original = std::move(*bytes);
  }
  const Checkpoint &c = archive->checkpoint();
  CompareSink sink(original ? &*original : nullptr);
  auto done = decodeCheckpoint(c, archive->payload, o.jit, sink);
  if (!done) return fail(o.input + ": " + done.error().message);
  if (original && sink.written() != original->size())
    return fail(fmt::format("{}: the decoded file has {} bytes, the original {}", o.input, sink.written(),
                            original->size()));
  if (!v.quiet)
    std::cout << fmt::format("{}: ok, {} decoded, xxh64 {:016x} matches{}\n", o.input, humanBytes(c.source.size),
                             c.source.xxh64, original ? ", identical to " + o.original : "");
  return kExitOk;
}

} // namespace

void registerVerify(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<VerifyOptions>();
  auto *cmd = app.add_subcommand("verify", "Decode an archive without writing it and check it (and against ORIGINAL)");
  cmd->add_option("archive", o->input, ".brv file")->required();
  cmd->add_option("original", o->original, "the original file, compared byte for byte");
  cmd->add_flag("--jit", o->jit, "decode with native code compiled by LLVM instead of the interpreter");
  cmd->callback([o, &ctx] { ctx.exitCode = runVerify(*o, ctx.verbosity); });
}

} // namespace brevis::cli
