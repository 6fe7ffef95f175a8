#pragma once
// Pieces every brevisc subcommand shares: loading and checking program text and archives,
// decoding with the chosen executor on several threads, building archives, and reporting.
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/containers/Archive.h"
#include "runtime/execution/ByteSink.h"
#include "runtime/execution/ParallelDecode.h"
#include "runtime/containers/Payload.h"
#include "synth/Driver.h"
#include "tools/api/ArchiveBuilder.h"
#include "tools/api/ArchiveReader.h"
#include "tools/api/Compression.h"
#include "tools/api/Decoding.h"
#include "tools/api/DecoderFactory.h"
#include "tools/api/ProgramText.h"
#include "synth/Strategy.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <initializer_list>
#include <optional>
#include <string>
#include <variant>
#include <vector>

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

/// An input file: `-` is standard input; pipes are read into memory (bounded), files mapped.
/// A pipe whose start differs from `prefix` is not read on (MappedFile::open).
Result<std::shared_ptr<const MappedFile>> openInput(const std::string &path, ByteSpan prefix = {});

/// The text of a program file; an archive, a safetensors file or any other binary file is
/// refused in one line (its bytes are never echoed to the terminal).
Result<std::string> programText(const MappedFile &file);
/// programText of openInput(path).
Result<std::string> readProgramText(const std::string &path);

/// ArchiveReader::open of openInput(path), with the diagnostics of a program that does not
/// check on stderr.
/// With `file`, the opened input is returned there (to check it is intact after decoding).
Result<ArchiveReader> loadArchive(const std::string &path, ArchiveReadOptions options = {},
                                  std::shared_ptr<const MappedFile> *file = nullptr);
/// The same for an input already open.
Result<ArchiveReader> loadArchive(std::shared_ptr<const MappedFile> file, const std::string &name,
                                  ArchiveReadOptions options = {});

/// The most bytes a decoding command writes unless --max-output says otherwise: more than any
/// published checkpoint, far less than what a crafted archive can declare (a `const` of 2^62
/// words takes a few bytes to write and forever to decode).
inline constexpr uint64_t kDefaultMaxOutput = uint64_t{16} << 40;
inline constexpr const char *kMaxOutputHelp =
    "refuse archives and programs that decode to more than SIZE bytes, before decoding (a number with an "
    "optional suffix K, M, G, T, P or E: powers of 1024; default 16T)";
/// "123", "4K", "1.5G", "2TiB": bytes (rounded down); nullopt if malformed or too large.
std::optional<uint64_t> parseSize(const std::string &text);
/// CLI11 validator for SIZE options.
std::string validateSize(const std::string &text);
/// An error if `bytes` exceed `limit`, naming `what`.
Result<void> checkOutputLimit(const std::string &what, uint64_t bytes, uint64_t limit);

/// The decoding options of a command's flags: the JIT's notices go to stderr (printNotice).
DecodeOptions decodeOptions(bool jit, unsigned threads, bool verbose = false);
/// `brevisc: NOTICE` on stderr (the JIT's and other notes), unless -q silenced them.
void printNotice(const std::string &notice);
void silenceNotices();

/// decodeJobs with the options' executor and, if `showProgress`, a progress bar labelled `label`
/// on stderr.
Result<void> runDecodeJobs(std::span<const DecodeJob> jobs, DecodeOptions options, const std::string &label,
                           bool showProgress);

/// Writes a program's text and its payload sidecar, both or neither.
Result<void> writeProgramFiles(const std::string &programPath, const std::string &text, const std::string &payloadPath,
                               ByteSpan payload, bool overwrite);

/// Positional writes to a sequential sink: only in increasing, gapless order (one thread).
class SequentialPositionalSink final : public PositionalSink {
public:
  SequentialPositionalSink(ByteSink &out, uint64_t base) : out_(out), next_(base) {}
  Result<void> writeAt(uint64_t offset, const uint8_t *data, size_t size) override;

private:
  ByteSink &out_;
  uint64_t next_;
};

/// The files of a directory, recursively, as sorted '/'-separated relative paths. Symbolic
/// links to files are followed (model caches link shards to blobs); anything else that is not
/// a regular file or a directory is refused, so that an archive never silently drops a file.
/// With `emptyDirectories`, the directories that hold nothing are listed there (as relative paths).
Result<std::vector<std::string>> listFiles(const std::string &dir,
                                          std::vector<std::string> *emptyDirectories = nullptr);

/// `fmt --annotate` comments start so: --annotate replaces those it wrote before, and pack
/// leaves them out of archives (they describe the program as it was annotated).
inline constexpr std::string_view kAnnotationPrefix = "#: ";

/// Threads to use for `-T N`: N, or every hardware thread for 0.
unsigned resolveThreads(unsigned requested);

/// Whether stderr is a terminal (progress bars go there only then).
bool stderrIsTerminal();

/// One JSON result on stdout, on one line (several results are JSON Lines); docs/cli.md has the
/// schema.
void printJson(const nlohmann::json &result);
/// archive bytes / original bytes (0 for an empty original).
double sizeRatio(uint64_t archive, uint64_t original);
/// JSON's `ratio`: sizeRatio, or null for an empty original (no ratio to a size of 0).
nlohmann::json ratioJson(uint64_t archive, uint64_t original);
/// "533.48 KB -> 300.00 KB (56.23%, saved 233.48 KB)", or "(+295 B)" when it grew.
std::string sizeChange(uint64_t original, uint64_t archive);

/// The synthesis options of `level` with the search's prior from `--prior`: empty (learn one
/// from the checkpoint), "uniform" (none: candidates in a fixed order) or a prior file.
Result<StrategyOptions> strategyOptionsFor(int level, const std::string &prior);
inline constexpr const char *kPriorHelp =
    "the search's prior over candidates: a file from `brevisc prior learn` (reused across a model family), "
    "or \"uniform\" for a fixed order; default: learned from a sample of the checkpoint's tensors at levels 2-4 "
    "(from level 5 on, the search tries nearly every candidate and the order hardly matters)";

/// `brevisc: error: message` on stderr; returns kExitFailure.
int fail(const std::string &message);
/// An error about the program `file`: `file:line:col: error: message` where the error has a
/// location (as the checker's diagnostics read), else `brevisc: error: file: message`; returns
/// kExitFailure.
int failIn(const std::string &file, const Error &error);
/// A program whose holes cannot be filled: `file:line:col: cannot fill the holes of …`.
/// The payload of checkpoint program `c` from `path`; a program whose payload is declared empty
/// (`payload "…" size 0`: every region structural or inline) needs no file.
Result<Payload> readPayload(const Checkpoint &c, const std::string &path);
/// The first literal of `e` (depth first) that reads payload bytes, if any.
const Lit *firstPayloadLit(const Expr &e);
/// A program of a directory of programs (as `unpack` writes a directory archive), read and
/// checked (holes allowed), its payload not yet loaded.
struct TreeProgram {
  std::string file;       ///< the program's path
  std::string memberPath; ///< the file it rebuilds, relative: its directory + its source name
  Checkpoint checkpoint;
};

/// Every .bdsl checkpoint program under `dir`, in member path order, each rebuilding its own
/// file: no two the same file, none a file that another needs as a directory. `what` says
/// what is done with them in messages ("packed"). An error is printed; its exit status returned.
std::variant<std::vector<TreeProgram>, int> readProgramTree(const std::string &dir, const char *what);

/// A file name from a program, used beside the program: only its last component, so that a
/// program cannot direct reads or writes elsewhere ("../../x"). `what` names it in the error.
Result<std::string> besideProgram(const std::string &program, const std::string &name, const char *what);
/// besideProgram's path where a regular file lies there (never a pipe or device to block on).
std::optional<std::string> regularFileBeside(const std::string &program, const std::string &name);

/// The file a checkpoint program rebuilds, where it lies beside the program (null if not): it
/// locates a region that does not rebuild it.
std::shared_ptr<const MappedFile> originalBeside(const std::string &program, const Checkpoint &c);

/// Whether any region of `c` has a hole (`?`, or a literal without its payload range).
bool hasHoles(const Checkpoint &c);
int failToFill(const std::string &file, const Checkpoint &c, const CheckpointFillError &error);
/// The same for a command line that cannot work (exit status 2).
int usageError(const std::string &message);

/// Replaces a path's extension (or appends one if it has none).
std::string withExtension(const std::string &path, const std::string &extension);
/// The directory part of a path ("." if none).
std::string directoryOf(const std::string &path);
/// `path` without trailing slashes ("/" stays "/"), and whether it had any.
std::pair<std::string, bool> withoutTrailingSlashes(std::string path);
/// Whether two paths name the same existing file.
bool sameFile(const std::string &a, const std::string &b);
/// Whether standard output is the regular file `input` names (`-`: standard input's file).
bool standardOutputIsInput(const std::string &input);
/// Whether standard error writes to standard output's regular file (`> out 2>&1`).
bool standardErrorIsStandardOutput();
/// Whether decoding may write `out` at explicit offsets, from several threads: a file that takes
/// them, unless it is standard output sharing its file with standard error (`> out 2>&1`), where
/// positional writes leave the shared offset at the start and notes would land over the first
/// bytes written.
bool decodesInPlace(const OutputFile &out, bool toStandardOutput);
/// Where `output` names the same existing file as one of `inputs`, or is `-` and standard output
/// is one of them, the usage error that says so (no command writes over what it reads: with -f
/// it would lose the input); else nullopt.
std::optional<int> refuseOwnInput(const std::string &output, std::initializer_list<std::string> inputs);
/// Where `output` is a file (or directory) this process wrote for an earlier input, the error
/// that says so: two inputs of one name compressed into one directory would otherwise leave
/// only the last one's output, even with -f; else nullopt.
std::optional<int> refuseOutputOfEarlierInput(const std::string &output, const std::string &input);
/// Records `output` as written for `input`, for refuseOutputOfEarlierInput.
void rememberOutput(const std::string &output, const std::string &input);
/// The last component of a path.
std::string baseName(const std::string &path);
/// Why `path` (given as `given`, with its trailing slashes) cannot take an output into it: a
/// file is "not a directory", a missing path "not an existing directory".
std::string notADirectory(const std::string &given, const std::string &path);
/// How an input is named in messages: standard input for "-", else as given.
std::string shownName(const std::string &input);

/// "1.23 MB" style sizes for people.
std::string humanBytes(uint64_t bytes);
/// The process's largest resident set so far, in bytes (`peak_memory_bytes` in JSON).
uint64_t peakMemoryBytes();

} // namespace brevis::cli
