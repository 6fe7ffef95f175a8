// brevisc unpack ARCHIVE [-o PROGRAM.bdsl]: an archive as editable text (program + payload
// sidecar; for a directory archive, a directory with one program and sidecar per member file,
// laid out as the original tree). brevisc pack PROGRAM.bdsl|DIR [-o ARCHIVE.brv]: back again,
// after checking that every program still rebuilds its source exactly. Unpacking and packing
// again gives back the same archive, byte for byte.
#include "tools/brevisc/Commands.h"

#include "lang/Printer.h"
#include "runtime/containers/FileIO.h"

#include <algorithm>
#include <variant>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

namespace brevis::cli {

namespace {

namespace fs = std::filesystem;

struct PackOptions {
  std::string input;
  std::string output;
  std::string payload;
  bool force = false;
  bool json = false;
  unsigned threads = 0;
};

/// `dir/name` relative paths ('/'-separated; `dir` may be empty).
std::string joinRelative(const std::string &dir, const std::string &name) { return dir.empty() ? name : dir + "/" + name; }

/// What packing changed in a program before archiving it.
struct Preparation {
  size_t holesFilled = 0;
  uint64_t bytesDropped = 0;
};

/// Makes an edited program ready to archive: its holes (`?`, `lit auto`) filled as `synth`
/// fills them, from the original file, which must then be beside it; and the payload bytes no
/// literal reads any more dropped, so that an edit can make the archive smaller. A program with
/// neither keeps its payload as it is.
std::variant<Preparation, int> prepareForPacking(const std::string &file, Checkpoint &c, Payload &payload,
                                                 const MappedFile *original) {
  if (payload.size() != c.payloadSize)
    return failIn(file, Error{fmt::format("payload {} has {} bytes, but the program declares {}", c.payloadFile,
                                          payload.size(), c.payloadSize),
                              c.payloadLoc});
  // `fmt --annotate` notes are derived from the program as it was; an archive does not keep
  // them, to go stale (unpack and fmt --annotate write them again).
  for (Region &r : c.regions)
    std::erase_if(r.comments, [](const std::string &comment) { return comment.starts_with(kAnnotationPrefix); });
  Preparation done;
  Bytes bytes(payload.data(), payload.data() + payload.size());
  if (hasHoles(c)) {
    if (!original)
      return fail(fmt::format("{} has holes, which pack fills from the file the program rebuilds; {} is not beside it",
                              file, quoteString(c.source.fileName)));
    if (original->bytes().size() != c.source.size || xxh64(original->bytes()) != c.source.xxh64)
      return fail(fmt::format("{} has holes, which pack fills from the file the program rebuilds; the {} beside it is "
                              "not that file (its size or checksum differs from the source line's)",
                              file, quoteString(c.source.fileName)));
    auto filled = fillCheckpointHoles(c, original->bytes(), bytes, kDefaultLevel);
    if (auto *error = std::get_if<CheckpointFillError>(&filled)) return failToFill(file, c, *error);
    done.holesFilled = std::get<size_t>(filled);
  }
  Bytes compacted = compactPayload(c, bytes);
  done.bytesDropped = bytes.size() - compacted.size();
  if (done.holesFilled || done.bytesDropped) payload = Payload(std::move(compacted));
  return done;
}

/// What a summary adds for a prepared program: "; 2 holes filled, 1.20 KB no literal read dropped".
std::string preparationNote(const Preparation &p) {
  std::string note;
  if (p.holesFilled) note += fmt::format("; {} hole{} filled", p.holesFilled, p.holesFilled == 1 ? "" : "s");
  if (p.bytesDropped) note += fmt::format("; {} of payload no literal read dropped", humanBytes(p.bytesDropped));
  return note;
}

/// The program as text shows it: each region with its digest from the archive's index, so that
/// an edit that breaks a region is reported at that region when the text is run or packed.
void withDigests(Checkpoint &c, const std::vector<uint64_t> &digests) {
  for (size_t i = 0; i < c.regions.size() && i < digests.size(); ++i) c.regions[i].digest = digests[i];
}

/// A directory archive as a tree of programs: member `d/x.safetensors` becomes `d/x.bdsl` with
/// its payload `d/x.bdsl.bin`; when that name is taken (`a.json` and `a.safetensors`, or a
/// member's directory), the later one keeps its whole file name (`a.safetensors.bdsl`). Pack
/// stores every payload name as compress does (archivedPayloadName), so the names chosen here
/// do not change the archive.
int unpackDirectory(ArchiveReader &archive, const PackOptions &o, const Verbosity &v, const std::string &output) {
  auto tree = DirectoryOutput::open(output, o.force);
  if (!tree) return fail(tree.error().message);
  // Every member's directories are taken before any program is named.
  std::set<std::string> taken;
  for (size_t i = 0; i < archive.memberCount(); ++i) {
    const std::string &member = archive.member(i).path;
    for (size_t slash = member.find('/'); slash != std::string::npos; slash = member.find('/', slash + 1))
      taken.insert(member.substr(0, slash));
  }
  for (size_t i = 0; i < archive.memberCount(); ++i) {
    const std::string &member = archive.member(i).path;
    size_t slash = member.rfind('/');
    std::string dir = slash == std::string::npos ? "" : member.substr(0, slash);
    std::string name = member.substr(slash == std::string::npos ? 0 : slash + 1);
    std::string program = joinRelative(dir, withExtension(name, ".bdsl"));
    for (unsigned k = 1; taken.count(program) || taken.count(program + ".bin"); ++k)
      program = joinRelative(dir, k == 1 ? name + ".bdsl" : fmt::format("{}.{}.bdsl", name, k));
    // (A program name ends in .bdsl; a member's directory may end in .bdsl.bin.)
    taken.insert(program);
    taken.insert(program + ".bin");
    Checkpoint &c = archive.checkpoint(i);
    c.payloadFile = baseName(program) + ".bin";
    withDigests(c, archive.digests(i));
    const Payload &payload = archive.payload(i);
    const std::string text = printCheckpoint(c);
    for (const std::string &written : {program, program + ".bin"})
      if (auto refused = refuseOwnInput(output + "/" + written, {o.input})) return *refused;
    auto programFile = (*tree)->createFile(program);
    if (!programFile) return fail(programFile.error().message);
    if (auto w = (*programFile)->write(reinterpret_cast<const uint8_t *>(text.data()), text.size()); !w)
      return fail(w.error().message);
    auto payloadFile = (*tree)->createFile(program + ".bin");
    if (!payloadFile) return fail(payloadFile.error().message);
    if (auto w = (*payloadFile)->write(payload.data(), payload.size()); !w) return fail(w.error().message);
    if (v.verbose) std::cerr << fmt::format("  {} -> {}\n", member, program);
  }
  if (auto committed = (*tree)->commit(); !committed) return fail(committed.error().message);
  if (o.json)
    printJson({{"command", "unpack"}, {"input", shownName(o.input)}, {"output", output}, {"files", archive.memberCount()}});
  else if (!v.quiet)
    std::cerr << fmt::format("{}: -> {}/ ({} programs with their payloads)\n", shownName(o.input), output,
                             archive.memberCount());
  return kExitOk;
}

int runUnpack(const PackOptions &o, const Verbosity &v) {
  // A program and its payload are two files named after the archive: standard input has no name.
  if (o.input == "-" && o.output.empty()) return usageError("unpack of standard input needs -o PROGRAM.bdsl");
  if (o.output == "-")
    return usageError("unpack writes a program and its payload, two files: -o names the program (brevisc run -o - "
                      "ARCHIVE writes the decoded bytes to standard output)");
  std::shared_ptr<const MappedFile> file;
  auto archive = loadArchive(o.input, {}, &file);
  if (!archive) return fail(archive.error().message);
  // The program and payload written are the archive's: a damaged archive is found before they are.
  if (auto checked = checkArchiveChecksum(file->bytes(), shownName(o.input)); !checked)
    return fail(checked.error().message + "; nothing was written");
  std::string output = o.output;
  if (output.empty()) {
    const std::string suffix = ".brv";
    std::string base = o.input.size() > suffix.size() && o.input.ends_with(suffix)
                           ? o.input.substr(0, o.input.size() - suffix.size())
                           : o.input;
    output = withExtension(base, ".bdsl");
  }
  if (archive->isDirectory()) return unpackDirectory(*archive, o, v, output);
  std::string payloadPath = output + ".bin";
  for (const std::string &written : {output, payloadPath})
    if (auto refused = refuseOwnInput(written, {o.input})) return *refused;
  // The program names its payload file: point it at the sidecar written beside it.
  Checkpoint &c = archive->checkpoint(0);
  c.payloadFile = baseName(payloadPath);
  withDigests(c, archive->digests(0));
  const Payload &payload = archive->payload(0);
  auto written = writeProgramFiles(output, printCheckpoint(c), payloadPath, ByteSpan(payload.data(), payload.size()),
                                   o.force);
  if (!written) return fail(written.error().message);
  if (o.json)
    printJson({{"command", "unpack"}, {"input", shownName(o.input)}, {"output", output}, {"payload", payloadPath}, {"files", 1}});
  else if (!v.quiet)
    std::cerr << fmt::format("{}: -> {} + {}\n", shownName(o.input), output, payloadPath);
  return kExitOk;
}

int packDirectory(const PackOptions &o, const Verbosity &v) {
  if (!o.payload.empty()) return fail("--payload names one program's payload; a directory's programs name their own");
  std::string input = o.input;
  while (input.size() > 1 && input.back() == '/') input.pop_back();
  auto tree = readProgramTree(input, "packed");
  if (auto *failed = std::get_if<int>(&tree)) return *failed;
  std::vector<TreeProgram> &programs = std::get<std::vector<TreeProgram>>(tree);

  std::string output = o.output.empty() ? withExtension(input, ".brv") : o.output;
  auto builder = ArchiveBuilder::create(output, o.force);
  if (!builder) return fail(builder.error().message);
  const DecodeOptions options = decodeOptions(/*jit=*/false, resolveThreads(o.threads));
  uint64_t originalSize = 0;
  Preparation total;
  for (TreeProgram &p : programs) {
    // One member's payload in memory at a time; each is verified before it is written.
    auto payload = readPayload(p.checkpoint, directoryOf(p.file) + "/" + baseName(p.checkpoint.payloadFile));
    if (!payload) return failIn(p.file, payload.error());
    auto original = originalBeside(p.file, p.checkpoint);
    auto prepared = prepareForPacking(p.file, p.checkpoint, *payload, original.get());
    if (auto *failed = std::get_if<int>(&prepared)) return *failed;
    const Preparation &done = std::get<Preparation>(prepared);
    total.holesFilled += done.holesFilled;
    total.bytesDropped += done.bytesDropped;
    if (v.verbose && (done.holesFilled || done.bytesDropped))
      std::cerr << fmt::format("  {}{}\n", p.file, preparationNote(done));
    auto digests = regionDigestsByDecoding(p.checkpoint, *payload, original ? original->bytes() : ByteSpan{});
    if (!digests) return failIn(p.file, digests.error());
    originalSize += p.checkpoint.source.size;
    p.checkpoint.payloadFile = archivedPayloadName(p.checkpoint.source.fileName);
    MemberSource member{p.memberPath, std::move(p.checkpoint), std::move(*payload), std::move(*digests)};
    auto added = (*builder)->add(member, options);
    if (!added) return fail(p.file + ": " + added.error().message);
    if (v.verbose) std::cerr << fmt::format("  {} -> {}\n", p.file, p.memberPath);
  }
  auto size = (*builder)->finish(/*directory=*/true);
  if (!size) return fail(size.error().message);
  if (o.json)
    printJson({{"command", "pack"},
               {"input", input},
               {"output", output},
               {"original_bytes", originalSize},
               {"archive_bytes", *size},
               {"ratio", ratioJson(*size, originalSize)},
               {"files", programs.size()},
               {"holes_filled", total.holesFilled},
               {"payload_bytes_dropped", total.bytesDropped},
               {"verified", true}});
  else if (!v.quiet)
    std::cerr << fmt::format("{}: -> {} ({}, {} files, each verified{})\n", input, output,
                             sizeChange(originalSize, *size), programs.size(), preparationNote(total));
  return kExitOk;
}

int runPack(const PackOptions &o, const Verbosity &v) {
  if (o.output == "-")
    return usageError("pack writes an archive file (its index goes last, with seeks): use -o FILE, not -o -");
  std::error_code ec;
  if (!o.output.empty()) {
    // The archive never replaces what it is made from: the program, or anything in its directory.
    const fs::path in = fs::weakly_canonical(o.input, ec), out = fs::weakly_canonical(o.output, ec);
    const std::string inside = in.string() + "/";
    if (sameFile(o.input, o.output) || in == out ||
        (fs::is_directory(o.input, ec) && out.string().compare(0, inside.size(), inside) == 0))
      return usageError(fmt::format("the archive {} would replace what it is packed from", o.output));
  }
  if (fs::is_directory(o.input, ec)) return packDirectory(o, v);
  auto text = readProgramText(o.input);
  if (!text) return fail(text.error().message);
  auto module = loadProgram(o.input, *text, /*requireRunnable=*/false);
  if (!module) return kExitFailure;
  if (!module->isCheckpoint()) return fail(o.input + " is a single expression; only checkpoint programs are packed");
  Checkpoint &c = module->checkpoint();
  std::string payloadPath = o.payload.empty() ? directoryOf(o.input) + "/" + baseName(c.payloadFile) : o.payload;
  auto payload = readPayload(c, payloadPath);
  if (!payload) return o.payload.empty() ? failIn(o.input, payload.error()) : fail(payload.error().message);
  auto original = originalBeside(o.input, c);
  auto prepared = prepareForPacking(o.input, c, *payload, original.get());
  if (auto *failed = std::get_if<int>(&prepared)) return *failed;
  std::string output = o.output.empty() ? withExtension(o.input, ".brv") : o.output;
  if (sameFile(output, payloadPath) ||
      sameFile(output, directoryOf(o.input) + "/" + baseName(c.source.fileName)))
    return usageError(fmt::format("the archive {} would replace the program's payload or the file it rebuilds", output));
  auto builder = ArchiveBuilder::create(output, o.force);
  if (!builder) return fail(builder.error().message);

  // Bit-exact or nothing: the program must rebuild the file its source line describes.
  auto digests = regionDigestsByDecoding(c, *payload, original ? original->bytes() : ByteSpan{});
  if (!digests) return failIn(o.input, digests.error());
  c.payloadFile = archivedPayloadName(c.source.fileName);
  MemberSource member{baseName(c.source.fileName), std::move(c), std::move(*payload), std::move(*digests)};
  if (!isValidMemberPath(member.path))
    return fail(fmt::format("{} names an unusable source file {}", o.input, quoteString(member.checkpoint.source.fileName)));
  auto added = (*builder)->add(member, decodeOptions(/*jit=*/false, resolveThreads(o.threads)));
  if (!added) return fail(o.input + ": " + added.error().message);
  auto size = (*builder)->finish(/*directory=*/false);
  if (!size) return fail(size.error().message);
  if (o.json)
    printJson({{"command", "pack"},
               {"input", shownName(o.input)},
               {"output", output},
               {"original_bytes", member.checkpoint.source.size},
               {"archive_bytes", *size},
               {"ratio", ratioJson(*size, member.checkpoint.source.size)},
               {"files", 1},
               {"holes_filled", std::get<Preparation>(prepared).holesFilled},
               {"payload_bytes_dropped", std::get<Preparation>(prepared).bytesDropped},
               {"verified", true}});
  else if (!v.quiet)
    std::cerr << fmt::format("{}: -> {} ({}, verified against the checksum of {}{})\n", shownName(o.input),
                             output, sizeChange(member.checkpoint.source.size, *size),
                             quoteString(member.checkpoint.source.fileName),
                             preparationNote(std::get<Preparation>(prepared)));
  return kExitOk;
}

} // namespace

void registerPack(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<PackOptions>();
  auto *cmd = app.add_subcommand("pack", "Pack checkpoint programs and their payloads into an archive, verified");
  cmd->footer("Holes ('?', and literals without their payload range such as 'lit auto u8[N]') are filled from the "
              "original file beside the program, as synth fills them; payload bytes no literal reads are dropped.\n"
              "Exit status: 0 on success, 1 when an input is invalid or corrupt or a result fails verification, 2 on a "
              "usage error.");
  cmd->add_option("program", o->input,
                  ".bdsl checkpoint program, or a directory of them (as unpack writes a directory archive): "
                  "each rebuilds the file its source line names, in the program's own subdirectory")
      ->required();
  cmd->add_option("-o,--output", o->output, "archive to write (default: PROGRAM or DIR with extension .brv)")
      ->check(CLI::Validator([](std::string &s) { return s.empty() ? "needs a file name" : ""; }, ""))
      ->type_name("FILE");
  cmd->add_option("--payload", o->payload, "payload file (default: the one the program names, beside it)");
  cmd->add_flag("-f,--force", o->force, "overwrite an existing archive");
  addThreadsOption(cmd, o->threads, "threads for verifying what is packed (default 0: all cores)");
  cmd->add_flag("--json", o->json, "print the result as JSON on stdout (docs/cli.md)");
  cmd->callback([o, &ctx] { ctx.exitCode = runPack(*o, ctx.verbosity); });

  auto u = std::make_shared<PackOptions>();
  auto *unpack = app.add_subcommand("unpack", "Write an archive's programs as text, with their payloads beside them");
  unpack->add_option("archive", u->input, ".brv file")->required();
  unpack->add_option("-o,--output", u->output,
                     "program file to write (default: ARCHIVE without .brv, extension .bdsl); the payload goes to "
                     "OUTPUT.bin. A directory archive becomes the directory OUTPUT, one program and payload per file");
  unpack->add_flag("-f,--force", u->force, "overwrite existing files (and write into a non-empty directory)");
  unpack->add_flag("--json", u->json, "print the result as JSON on stdout (docs/cli.md)");
  unpack->callback([u, &ctx] { ctx.exitCode = runUnpack(*u, ctx.verbosity); });
}

} // namespace brevis::cli
