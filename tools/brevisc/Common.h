#pragma once
// Pieces every brevisc subcommand shares: loading and checking program text, decoding a
// checkpoint with the chosen executor, and reporting.
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/ByteSink.h"
#include "runtime/Payload.h"

#include <fmt/format.h>

#include <optional>
#include <string>

namespace brevis::cli {

/// Exit statuses, as documented in `brevisc --help`.
enum ExitCode : int { kExitOk = 0, kExitFailure = 1, kExitUsage = 2 };

/// Output verbosity shared by all subcommands.
struct Verbosity {
  bool quiet = false;
  bool verbose = false;
};

/// Parses and type-checks program text, printing diagnostics to stderr. With
/// `requireRunnable`, a program with holes is refused.
std::optional<Module> loadProgram(const std::string &name, std::string text, bool requireRunnable);

/// An archive read, verified and parsed: its checkpoint program (checked, runnable) and payload.
struct LoadedArchive {
  Module module;
  Payload payload;
  uint64_t archiveSize = 0;
  const Checkpoint &checkpoint() const { return module.checkpoint(); }
};

/// Reads an archive and checks it as far as can be done without decoding: its framing and
/// checksum, its program (diagnostics go to stderr), and that both describe the same source.
Result<LoadedArchive> loadArchive(const std::string &path);

/// Decodes a checkpoint with the interpreter or the JIT into `sink`, verified against the
/// program's source checksum.
Result<void> decodeCheckpoint(const Checkpoint &c, const Payload &payload, bool jit, ByteSink &sink);

/// Decodes one region of a checkpoint alone (its literals validated first).
Result<void> decodeRegion(const Region &region, const Payload &payload, bool jit, ByteSink &sink);

/// Writes a program's text and its payload sidecar, both or neither.
Result<void> writeProgramFiles(const std::string &programPath, const std::string &text, const std::string &payloadPath,
                               ByteSpan payload, bool overwrite);

/// The `.brv` archive of a checkpoint program and its payload.
Bytes archiveOf(const Checkpoint &c, ByteSpan payload);

/// `brevisc: error: message` on stderr; returns kExitFailure.
int fail(const std::string &message);

/// Replaces a path's extension (or appends one if it has none).
std::string withExtension(const std::string &path, const std::string &extension);
/// The directory part of a path ("." if none).
std::string directoryOf(const std::string &path);
/// The last component of a path.
std::string baseName(const std::string &path);

/// "1.23 MB" style sizes for people.
std::string humanBytes(uint64_t bytes);

} // namespace brevis::cli
