// brevisc run PROGRAM.bdsl [-o OUT] [--jit [--emit-llvm FILE]]: execute a program. A checkpoint
// program rebuilds its source file (verified against the program's checksum); a single
// expression writes its words, little-endian.
#include "tools/brevisc/Commands.h"

#include "lang/Printer.h"
#include "runtime/containers/Archive.h"
#include "runtime/containers/FileIO.h"
#include "runtime/execution/Interpreter.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <optional>

namespace brevis::cli {

namespace {

struct RunOptions {
  std::string input;
  std::string output;
  std::string payload;
  std::optional<std::string> tensor; ///< --tensor NAME (a name may be empty: safetensors allows it)
  std::optional<std::string> file;   ///< --file PATH: the member file of a directory archive that has it
  unsigned threads = 0;
  std::string maxOutput = "16T";
  bool jit = false;
  std::string emitLlvm;
  std::string emitLlvmTarget; ///< where emitLlvm, a temporary file, goes in the end (runRun)
  bool force = false;
  bool noVerify = false;

  DecodeOptions decoding(unsigned threads, bool verbose) const {
    DecodeOptions options = decodeOptions(jit, threads, verbose);
    options.emitLlvm = emitLlvm;
    return options;
  }
};

/// A single expression: its words, as one region, through the interpreter or the JIT.
Result<void> runExpression(ExprPtr e, const Payload &payload, const RunOptions &o, bool verbose, ByteSink &sink) {
  if (!o.jit) return evaluateTo(*e, payload, sink);
  BREVIS_TRY(validateForExecution(*e, payload));
  const StreamType t = streamTypeOf(*e);
  Region region;
  region.kind = RegionKind::Bytes;
  region.bytes = ByteRange{0, t.length * containerBytes(t.width)}; // within --max-output: checked
  region.program = std::move(e);
  const DecodeOptions options = o.decoding(1, verbose);
  auto decoder = makeRegionDecoder(true, options.notice, options.emitLlvm);
  if (!decoder) return decoder.error();
  BREVIS_TRY((*decoder)->decode(region, payload, sink));
  if (options.summary) options.summary((*decoder)->summary());
  return {};
}

constexpr const char *kIrNotOutput = "--emit-llvm FILE must not be the program or the output";

/// Whether paths `a` (non-empty) and `b` name one file, whether or not it exists yet: the IR
/// file --emit-llvm names and the output a checkpoint program's source name gives by default.
bool namesOneFile(const std::string &a, const std::string &b) {
  if (a.empty()) return false;
  if (a == b || sameFile(a, b)) return true;
  std::error_code ec, ed;
  namespace fs = std::filesystem;
  const fs::path x = fs::weakly_canonical(fs::absolute(a, ec), ec), y = fs::weakly_canonical(fs::absolute(b, ed), ed);
  return !ec && !ed && x == y;
}

/// Whether `path` names standard output: `-`, or a link to it (/dev/stdout).
bool toStandardOutput(const std::string &path) {
  return path == "-" || standardStreamOf(path) == STDOUT_FILENO;
}

/// The output file, or standard output for `-` (never a terminal).
Result<std::unique_ptr<OutputFile>> openOutput(const std::string &path, bool force) {
  if (path != "-") return OutputFile::create(path, force);
  if (::isatty(STDOUT_FILENO)) return Error{"refusing to write binary data to a terminal; use -o FILE or redirect standard output"};
  return OutputFile::standardOutput();
}

/// Decodes one tensor of a checkpoint program into -o (its raw bytes, as the safetensors file
/// holds them).
int runProgramTensor(const RunOptions &o, const Module &module, const Payload &payload, const std::string &payloadPath,
                     bool verbose, bool quiet) {
  if (!module.isCheckpoint()) return fail("--tensor needs a checkpoint program or an archive");
  const Region *region = nullptr;
  for (const Region &r : module.checkpoint().regions)
    if (r.kind == RegionKind::Tensor && r.name == *o.tensor) region = &r;
  if (!region) return fail(fmt::format("{} has no tensor {}", o.input, quoteString(*o.tensor)));
  if (o.output.empty()) return usageError("--tensor needs an output file: use -o FILE");
  if (auto refused = refuseOwnInput(o.output, {o.input, payloadPath})) return *refused;
  auto out = openOutput(o.output, o.force);
  if (!out) return fail(out.error().message);
  const DecodeOptions options = o.decoding(1, verbose);
  auto decoder = makeRegionDecoder(o.jit, options.notice, options.emitLlvm);
  if (!decoder) return fail(decoder.error().message);
  // Checked against its digest (the original beside the program locating a difference).
  auto original = originalBeside(o.input, module.checkpoint());
  const CheckpointCheck check{!o.noVerify, original ? original->bytes() : ByteSpan{}};
  auto done = runRegion(module.checkpoint(), *region, payload, **decoder, **out, check);
  if (options.summary) options.summary((*decoder)->summary());
  if (done && (*out)->bytesWritten() != region->bytes.size)
    done = Error{fmt::format("tensor {} produced {} bytes instead of {}", quoteString(*o.tensor), (*out)->bytesWritten(),
                             region->bytes.size)};
  if (done) done = (*out)->commit();
  if (!done) return failIn(o.input, done.error());
  if ((o.noVerify || !region->digest) && !quiet)
    std::cerr << fmt::format("brevisc: note: {} was written without checking it{}\n", o.output,
                             o.noVerify ? "" : ": the program gives the tensor no digest");
  return kExitOk;
}

/// Decodes one tensor of an archive (`file`'s bytes): the index locates it, only its payload
/// bytes are read, and its digest is checked.
int runArchiveTensor(const RunOptions &o, const ArchiveReader &archive, ByteSpan file, bool verbose) {
  if (o.output.empty()) return usageError("--tensor needs an output file: use -o FILE");
  auto tensor = archive.findTensor(*o.tensor, o.file);
  if (!tensor && archive.isDirectory() && !o.file && tensor.error().message.find(" in both ") != std::string::npos)
    return fail(tensor.error().message + "; --file names the one to read");
  if (!tensor) return fail(tensor.error().message);
  if (auto refused = refuseOwnInput(o.output, {o.input})) return *refused;
  // Standard output cannot be taken back, and the tensor's digest is checked only once its
  // bytes are out: there the whole archive's checksum goes first, so that a damaged archive
  // writes nothing (a file that fails its digest is not kept).
  const bool toStdout = toStandardOutput(o.output);
  if (toStdout)
    if (auto checked = checkArchiveChecksum(file, o.input); !checked) return fail(checked.error().message);
  auto out = openOutput(o.output, o.force);
  if (!out) return fail(out.error().message);
  const bool inPlace = decodesInPlace(**out, toStdout);
  DecodeOptions options = o.decoding(inPlace ? resolveThreads(o.threads) : 1, verbose);
  SequentialPositionalSink sequential(**out, 0);
  PositionalSink &sink = inPlace ? static_cast<PositionalSink &>(**out) : sequential;
  auto done = archive.readTensor(*tensor, sink, options);
  if (done) done = (*out)->commit();
  return done ? kExitOk : fail(done.error().message);
}

/// A directory of programs (as unpack writes a directory archive): every program rebuilds its
/// file into one output tree, each verified, none renamed into place unless all are.
int runDirectory(const RunOptions &o, const Verbosity &v) {
  if (o.tensor) return usageError("--tensor takes one program or an archive, not a directory");
  if (!o.payload.empty()) return usageError("--payload names one program's payload; a directory's programs name their own");
  if (!o.emitLlvm.empty()) return usageError("--emit-llvm takes one program, not a directory");
  std::string input = o.input;
  while (input.size() > 1 && input.back() == '/') input.pop_back();
  std::string output = o.output;
  if (output.empty()) {
    if (input.size() <= 5 || !input.ends_with(".bdsl"))
      return usageError(fmt::format("cannot derive an output directory from {} (it does not end in .bdsl); use -o DIR",
                                    o.input));
    output = input.substr(0, input.size() - 5);
  }
  auto tree = readProgramTree(input, "run");
  if (auto *failed = std::get_if<int>(&tree)) return *failed;
  const auto &programs = std::get<std::vector<TreeProgram>>(tree);
  for (const TreeProgram &p : programs)
    if (hasHoles(p.checkpoint))
      return fail(fmt::format("{} has holes ('?', or a literal without its payload range); fill them first: brevisc "
                              "synth PROGRAM fills them from the original file",
                              p.file));
  auto out = DirectoryOutput::open(output, o.force);
  if (!out) return fail(out.error().message);
  uint64_t written = 0;
  for (const TreeProgram &p : programs) {
    auto payload = readPayload(p.checkpoint, directoryOf(p.file) + "/" + baseName(p.checkpoint.payloadFile));
    if (!payload) return failIn(p.file, payload.error());
    auto original = originalBeside(p.file, p.checkpoint);
    auto file = (*out)->createFile(p.memberPath);
    if (!file) return fail(file.error().message);
    const CheckpointCheck check{!o.noVerify, original ? original->bytes() : ByteSpan{}};
    auto done = decodeCheckpoint(p.checkpoint, *payload, o.decoding(1, v.verbose), **file, nullptr, check);
    if (!done) return failIn(p.file, done.error());
    written += p.checkpoint.source.size;
    if (v.verbose) std::cerr << fmt::format("  {} -> {}/{}\n", p.file, output, p.memberPath);
  }
  if (auto committed = (*out)->commit(); !committed) return fail(committed.error().message);
  if (o.noVerify && !v.quiet)
    std::cerr << fmt::format("brevisc: note: {}/ was written without checking it against the programs' sources\n",
                             output);
  else if (v.verbose)
    std::cerr << fmt::format("{}: wrote {}/ ({} files, {})\n", o.input, output, programs.size(), humanBytes(written));
  return kExitOk;
}

int runProgram(const RunOptions &o, const Verbosity &v) {
  if (std::error_code ec; std::filesystem::is_directory(o.input, ec)) return runDirectory(o, v);
  auto input = openInput(o.input);
  if (!input) return fail(input.error().message);
  if (looksLikeArchive((*input)->bytes())) {
    if (o.noVerify) return usageError("--no-verify is for program text: an archive's regions are always verified");
    auto archive = loadArchive(*input, o.input);
    if (!archive) return fail(archive.error().message);
    if (auto limited = checkOutputLimit(o.input, archive->originalSize(), *parseSize(o.maxOutput)); !limited)
      return fail(limited.error().message);
    if (o.tensor) return runArchiveTensor(o, *archive, (*input)->bytes(), v.verbose);
    if (archive->contents().directory)
      return usageError(fmt::format("{} holds a directory; use brevisc decompress, or run --tensor NAME", o.input));
    std::string output = o.output;
    if (output.empty()) {
      auto beside = besideProgram(o.input, archive->checkpoint(0).source.fileName, "source");
      if (!beside) return fail(beside.error().message);
      output = *beside;
    }
    if (auto refused = refuseOwnInput(output, {o.input})) return *refused;
    if (namesOneFile(o.emitLlvmTarget, output)) return usageError(kIrNotOutput);
    auto out = openOutput(output, o.force);
    if (!out) return fail(out.error().message);
    if (auto room = (*out)->checkRoom(archive->originalSize()); !room) return fail(room.error().message);
    if (auto room = (*out)->preallocate(archive->checkpoint(0).source.size); !room) return fail(room.error().message);
    const bool toStdout = toStandardOutput(output);
    const bool inPlace = decodesInPlace(**out, toStdout);
    DecodeOptions options = o.decoding(inPlace ? resolveThreads(o.threads) : 1, v.verbose);
    SequentialPositionalSink sequential(**out, 0);
    PositionalSink &sink = inPlace ? static_cast<PositionalSink &>(**out) : sequential;
    DecodeJob job{&archive->checkpoint(0), &archive->payload(0), archive->digests(0), &sink, o.input, {}};
    // The whole archive's checksum too, as decompress checks it: damage outside what the regions
    // read is damage all the same. (--tensor reads one tensor's bytes, checked by their digests,
    // and only those.) Standard output cannot be taken back, so there it goes first: a damaged
    // archive writes nothing; a file is kept only once everything is checked, so there it runs
    // beside the decoding.
    if (toStdout) {
      if (auto checked = checkArchiveChecksum((*input)->bytes(), o.input); !checked) return fail(checked.error().message);
    } else {
      options.alongside = [&] { return checkArchiveChecksum((*input)->bytes(), o.input); };
    }
    auto done = decodeJobs(std::span(&job, 1), options);
    if (done) done = (*out)->commit();
    if (!done) return fail(done.error().message);
    if (v.verbose) std::cerr << fmt::format("{}: wrote {} ({})\n", o.input, output, humanBytes(archive->originalSize()));
    return kExitOk;
  }

  auto text = programText(**input);
  if (!text) return fail(text.error().message);
  auto module = loadProgram(o.input, std::move(*text), /*requireRunnable=*/true);
  if (!module) return kExitFailure;
  // Words are written in containers of 1, 2, 4 or 8 bytes; a checkpoint writes its source.
  uint64_t outputBytes = 0;
  {
    StreamType t = module->isCheckpoint() ? StreamType{} : streamTypeOf(module->expr());
    unsigned __int128 bytes = module->isCheckpoint() ? module->checkpoint().source.size
                                                     : static_cast<unsigned __int128>(t.length) * containerBytes(t.width);
    if (bytes > ~uint64_t{0})
      return fail(fmt::format("{} decodes to 2^64 bytes or more, more than the limit of {} (--max-output)", o.input,
                              *parseSize(o.maxOutput)));
    outputBytes = static_cast<uint64_t>(bytes);
    if (auto limited = checkOutputLimit(o.input, outputBytes, *parseSize(o.maxOutput)); !limited)
      return fail(limited.error().message);
  }
  if (!module->isCheckpoint() && o.payload.empty())
    if (const Lit *reads = firstPayloadLit(module->expr()))
      return usageError(fmt::format("{}:{}:{}: this literal reads payload bytes, and a single expression names no "
                                    "payload: give it with --payload FILE",
                                    o.input, reads->loc.line, reads->loc.column));
  Payload payload;
  std::string payloadPath = o.payload;
  if (payloadPath.empty() && module->isCheckpoint()) {
    auto beside = besideProgram(o.input, module->checkpoint().payloadFile, "payload");
    if (!beside) return fail(beside.error().message);
    payloadPath = *beside;
  }
  if (!payloadPath.empty()) {
    auto loaded = module->isCheckpoint() ? readPayload(module->checkpoint(), payloadPath) : Payload::readFile(payloadPath);
    if (!loaded) return o.payload.empty() ? failIn(o.input, loaded.error()) : fail(loaded.error().message);
    payload = std::move(*loaded);
    // A payload given with --payload is named as given, not as the program's payload line names it.
    if (!o.payload.empty() && module->isCheckpoint() && payload.size() != module->checkpoint().payloadSize)
      return fail(fmt::format("{}: payload {} has {} bytes, but the program declares {}", o.input, payloadPath,
                              payload.size(), module->checkpoint().payloadSize));
  }
  if (o.file) return usageError("--file is for a directory archive; a program rebuilds one file");
  if (o.tensor) return runProgramTensor(o, *module, payload, payloadPath, v.verbose, v.quiet);

  std::string output = o.output;
  if (output.empty()) {
    if (!module->isCheckpoint()) return usageError("a single expression needs an output file: use -o FILE");
    auto beside = besideProgram(o.input, module->checkpoint().source.fileName, "source");
    if (!beside) return fail(beside.error().message);
    output = *beside;
  }
  if (namesOneFile(o.emitLlvmTarget, output)) return usageError(kIrNotOutput);
  // The original, where it lies beside the program, locates a region that does not rebuild it
  // (read only then, and used only if it is the file the program describes).
  std::shared_ptr<const MappedFile> original;
  if (module->isCheckpoint())
    if (auto beside = regularFileBeside(o.input, module->checkpoint().source.fileName)) {
      if (o.noVerify && sameFile(*beside, output))
        return fail(fmt::format("{} is the program's source file; --no-verify does not replace it with unchecked "
                                "bytes (use -o to write elsewhere)",
                                output));
      if (auto mapped = MappedFile::open(*beside)) original = std::move(*mapped);
    }
  if (!payloadPath.empty() && sameFile(output, payloadPath))
    return usageError(fmt::format("{} is the program's payload; write the output elsewhere", output));
  if (auto refused = refuseOwnInput(output, {o.input, payloadPath})) return *refused;
  auto out = openOutput(output, o.force);
  if (!out) return fail(out.error().message);
  if (auto room = (*out)->checkRoom(outputBytes); !room) return fail(room.error().message);
  const CheckpointCheck check{!o.noVerify, original ? original->bytes() : ByteSpan{}};
  auto done = module->isCheckpoint()
                  ? decodeCheckpoint(module->checkpoint(), payload, o.decoding(1, v.verbose), **out, nullptr, check)
                  : runExpression(std::move(std::get<ExprPtr>(module->body)), payload, o, v.verbose, **out);
  if (done) done = (*out)->commit();
  if (!done) return failIn(o.input, done.error());
  if (o.noVerify && module->isCheckpoint() && !v.quiet)
    std::cerr << fmt::format("brevisc: note: {} was written without checking it against {}\n", output,
                             quoteString(module->checkpoint().source.fileName));
  if (v.verbose) std::cerr << fmt::format("{}: wrote {} ({})\n", o.input, output, humanBytes((*out)->bytesWritten()));
  return kExitOk;
}

/// Whether `path` holds what --emit-llvm writes (or nothing): the only file -f lets it replace.
bool holdsEmittedIr(const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  char head[20] = {};
  const size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  return n == 0 || std::string_view(head, n).starts_with("; ---- brevis");
}

int runRun(const RunOptions &o, const Verbosity &v) {
  if (o.file && !o.tensor)
    return usageError("--file goes with --tensor: it names the file of a directory archive that holds the tensor");
  if (o.emitLlvm.empty()) return runProgram(o, v);
  if (!o.jit) return usageError("--emit-llvm needs --jit");
  std::error_code ec;
  if (std::filesystem::is_directory(o.input, ec)) return usageError("--emit-llvm takes one program, not a directory");
  if (toStandardOutput(o.emitLlvm)) {
    if (toStandardOutput(o.output)) return usageError("--emit-llvm and -o cannot both go to standard output");
    RunOptions direct = o;
    direct.emitLlvm = "-"; // LLVM's output stream takes "-" for standard output
    return runProgram(direct, v);
  }
  if (namesOneFile(o.emitLlvm, o.input) || (!o.output.empty() && namesOneFile(o.emitLlvm, o.output)))
    return usageError(kIrNotOutput);
  struct stat st, entry;
  // A link is neither followed nor replaced: the IR file is named as itself.
  if (::lstat(o.emitLlvm.c_str(), &entry) == 0 && S_ISLNK(entry.st_mode))
    return fail(fmt::format("{} is a symbolic link; name the file itself (or - for standard output)", o.emitLlvm));
  if (::stat(o.emitLlvm.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return fail(fmt::format("{} is a directory", o.emitLlvm));
    // A device or a pipe (/dev/null, a named pipe) is written in place, as -o writes one:
    // nothing there to replace or to read first.
    if (!S_ISREG(st.st_mode)) return runProgram(o, v);
    if (!o.force) return fail(fmt::format("{} already exists; use -f to overwrite it", o.emitLlvm));
    // -f is for the output; the IR file may be any path, so only a file of IR is replaced.
    if (!holdsEmittedIr(o.emitLlvm))
      return fail(fmt::format("{} exists and is not LLVM IR that --emit-llvm wrote; it is left alone", o.emitLlvm));
  }
  // The IR goes to a temporary file beside FILE (named as removeStaleTemps finds what a killed
  // run left), renamed into place only when the run succeeds.
  removeStaleTemps(o.emitLlvm);
  RunOptions staged = o;
  staged.emitLlvm = fmt::format("{}.brevisc-tmp-{}-ir", o.emitLlvm, ::getpid());
  staged.emitLlvmTarget = o.emitLlvm;
  int status = runProgram(staged, v);
  if (status == kExitOk && std::rename(staged.emitLlvm.c_str(), o.emitLlvm.c_str()) != 0)
    status = fail(fmt::format("cannot write {}: {}", o.emitLlvm, std::strerror(errno)));
  if (status != kExitOk) std::remove(staged.emitLlvm.c_str());
  return status;
}

} // namespace

void registerRun(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<RunOptions>();
  auto *cmd = app.add_subcommand("run", "Execute a program and write the bytes it produces");
  cmd->add_option("program", o->input,
                  ".bdsl file, a .brv archive, or a directory of programs (as unpack writes a directory archive; "
                  "written to -o DIR, by default DIR without .bdsl)")
      ->required();
  cmd->add_option("--tensor", o->tensor, "decode only this tensor, writing its raw bytes to -o");
  cmd->add_option("--file", o->file,
                  "with --tensor, in a directory archive: the file that holds the tensor (as `info -v` lists it)");
  cmd->add_option("-o,--output", o->output,
                  "file to write, - for standard output (default for a checkpoint: its source file name, beside the "
                  "program; for a directory of programs: DIR without .bdsl)")
      ->check(CLI::Validator([](std::string &s) { return s.empty() ? "needs a file name" : ""; }, ""))
      ->type_name("FILE");
  cmd->add_option("--payload", o->payload, "payload file (default: the one the program names, beside it)");
  cmd->add_flag("--jit", o->jit, "decode with native code compiled by LLVM instead of the interpreter (kept across runs in $BREVIS_JIT_CACHE, by default $XDG_CACHE_HOME/brevis/jit or ~/.cache/brevis/jit; off: not kept)");
  cmd->add_option("--emit-llvm", o->emitLlvm, "with --jit, write the LLVM IR of every decoder to FILE, as generated "
                                              "and as optimized")
      ->option_text("FILE");
  addThreadsOption(cmd, o->threads, "decoding threads for archives (default 0: all cores)");
  cmd->add_flag("-f,--force", o->force, "overwrite the output file (and the --emit-llvm file)");
  cmd->add_flag("--no-verify", o->noVerify,
                "write a checkpoint program's output without checking it (source checksum, region digests, "
                "declarations against the header, comparison with the original): to inspect what an edited program "
                "produces; never over the original itself");
  cmd->add_option("--max-output", o->maxOutput, kMaxOutputHelp)->check(validateSize);
  cmd->callback([o, &ctx] { ctx.exitCode = runRun(*o, ctx.verbosity); });
}

} // namespace brevis::cli
