#include "tools/brevisc/Common.h"

#include "codegen/JitDecoder.h"
#include "frontend/Parser.h"
#include "lang/Diagnostics.h"
#include "lang/Printer.h"
#include "lang/TypeChecker.h"
#include "runtime/Archive.h"
#include "runtime/CheckpointRunner.h"
#include "runtime/FileIO.h"
#include "runtime/Interpreter.h"

#include <filesystem>
#include <iostream>

namespace brevis::cli {

std::optional<Module> loadProgram(const std::string &name, std::string text, bool requireRunnable) {
  Diagnostics diags(name, std::move(text));
  auto module = parseModule(diags);
  if (module) {
    TypeChecker checker(diags);
    checker.checkModule(*module);
    if (!diags.hasErrors() && requireRunnable && checker.sawHole())
      diags.error(SourceLoc{}, "the program has holes ('?'); fill them before running it");
  }
  std::cerr << diags.render();
  if (diags.hasErrors()) return std::nullopt;
  return module;
}

Result<LoadedArchive> loadArchive(const std::string &path) {
  auto bytes = readFile(path);
  if (!bytes) return bytes.error();
  auto archive = readArchive(*bytes, path);
  if (!archive) return archive.error();
  auto module = loadProgram(path + ":program", std::move(archive->programText), /*requireRunnable=*/true);
  if (!module) return Error{path + " holds a program that does not check"};
  if (!module->isCheckpoint()) return Error{path + " holds a single expression, not a checkpoint program"};
  const Checkpoint &c = module->checkpoint();
  if (c.source.size != archive->sourceSize || c.source.xxh64 != archive->sourceXxh64)
    return Error{path + " is corrupt: its program and its header describe different source files"};
  LoadedArchive loaded{std::move(*module), Payload::fromBytes(archive->payload), bytes->size()};
  return loaded;
}

namespace {
/// The interpreter, or the JIT reporting its interpreter fallbacks on stderr.
Result<std::unique_ptr<RegionDecoder>> makeDecoder(bool jit) {
  if (!jit) return std::unique_ptr<RegionDecoder>(std::make_unique<Interpreter>());
  auto decoder = JitDecoder::create([](const std::string &notice) { std::cerr << "brevisc: " << notice << "\n"; });
  if (!decoder) return decoder.error();
  return std::unique_ptr<RegionDecoder>(std::move(*decoder));
}
} // namespace

Result<void> decodeCheckpoint(const Checkpoint &c, const Payload &payload, bool jit, ByteSink &sink) {
  auto decoder = makeDecoder(jit);
  if (!decoder) return decoder.error();
  return runCheckpoint(c, payload, **decoder, sink);
}

Result<void> decodeRegion(const Region &region, const Payload &payload, bool jit, ByteSink &sink) {
  BREVIS_TRY(validateForExecution(*region.program, payload));
  auto decoder = makeDecoder(jit);
  if (!decoder) return decoder.error();
  return (*decoder)->decode(region, payload, sink);
}

Result<void> writeProgramFiles(const std::string &programPath, const std::string &text, const std::string &payloadPath,
                               ByteSpan payload, bool overwrite) {
  auto textFile = OutputFile::create(programPath, overwrite);
  if (!textFile) return textFile.error();
  auto payloadFile = OutputFile::create(payloadPath, overwrite);
  if (!payloadFile) return payloadFile.error();
  BREVIS_TRY((*textFile)->write(reinterpret_cast<const uint8_t *>(text.data()), text.size()));
  BREVIS_TRY((*payloadFile)->write(payload.data(), payload.size()));
  BREVIS_TRY((*payloadFile)->commit());
  return (*textFile)->commit();
}

Bytes archiveOf(const Checkpoint &c, ByteSpan payload) {
  ArchiveContents contents;
  contents.programText = printCheckpoint(c);
  contents.payload.assign(payload.begin(), payload.end());
  contents.sourceSize = c.source.size;
  contents.sourceXxh64 = c.source.xxh64;
  return writeArchive(contents);
}

int fail(const std::string &message) {
  std::cerr << "brevisc: error: " << message << "\n";
  return kExitFailure;
}

std::string withExtension(const std::string &path, const std::string &extension) {
  return std::filesystem::path(path).replace_extension(extension).string();
}

std::string directoryOf(const std::string &path) {
  auto parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

std::string baseName(const std::string &path) { return std::filesystem::path(path).filename().string(); }

std::string humanBytes(uint64_t bytes) {
  const char *units[] = {"B", "KB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", v, units[u]);
}

} // namespace brevis::cli
