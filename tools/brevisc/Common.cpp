#include "tools/brevisc/Common.h"

#include "tools/brevisc/Progress.h"

#include "lang/Diagnostics.h"
#include "lang/Printer.h"
#include "runtime/containers/FileIO.h"
#include "runtime/common/Utf8.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <thread>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace brevis::cli {

std::optional<Module> loadProgram(const std::string &name, std::string text, bool requireRunnable) {
  std::string diagnostics;
  auto module = parseProgram(name, std::move(text), requireRunnable, diagnostics);
  std::cerr << diagnostics;
  return module;
}

Result<std::shared_ptr<const MappedFile>> openInput(const std::string &path, ByteSpan prefix) {
  if (path == "-") return MappedFile::openStandardInput(prefix);
  return MappedFile::open(path, prefix);
}

Result<std::string> programText(const MappedFile &file) {
  ByteSpan b = file.bytes();
  const std::string name = shownName(file.path());
  if (looksLikeArchive(b))
    return Error{fmt::format("{} is a brevis archive, not program text (brevisc unpack writes its programs)", name)};
  // An empty file named as an archive is read as decompress and info read it.
  if (b.empty() && name.ends_with(".brv")) return Error{fmt::format("{} is empty, not a brevis archive", name)};
  const size_t bad = firstNonUtf8(b);
  if ((!b.empty() && std::memchr(b.data(), 0, b.size())) || (bad < b.size() && bad < 8)) { // what program text cannot be
    bool safetensors = b.size() > 9 && b[8] == '{';
    return Error{fmt::format("{} is a binary file{}, not program text", name,
                             safetensors ? " (a safetensors checkpoint? brevisc synth writes its program)" : "")};
  }
  if (bad < b.size()) { // text, but not UTF-8 (Latin-1, say): say where
    const size_t lineStart = [&] {
      for (size_t i = bad; i > 0; --i)
        if (b[i - 1] == '\n') return i;
      return size_t{0};
    }();
    const size_t line = 1 + static_cast<size_t>(std::count(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(bad), '\n'));
    return Error{fmt::format("{}:{}:{}: byte 0x{:02x} is not UTF-8; program text is UTF-8 (write other bytes "
                             "in strings and text as \\xNN)",
                             name, line, bad - lineStart + 1, b[bad])};
  }
  // A byte-order mark some editors write first: not part of the program (columns count without it).
  constexpr std::string_view kByteOrderMark = "\xef\xbb\xbf";
  std::string text(b.begin(), b.end());
  if (text.starts_with(kByteOrderMark)) text.erase(0, kByteOrderMark.size());
  return text;
}

Result<std::string> readProgramText(const std::string &path) {
  auto file = openInput(path);
  if (!file) return file.error();
  return programText(**file);
}

Result<ArchiveReader> loadArchive(const std::string &path, ArchiveReadOptions options,
                                  std::shared_ptr<const MappedFile> *opened) {
  auto file = openInput(path, archiveMagic());
  if (!file) return file.error();
  if (opened) *opened = *file;
  return loadArchive(*file, shownName(path), options);
}

Result<ArchiveReader> loadArchive(std::shared_ptr<const MappedFile> file, const std::string &name,
                                  ArchiveReadOptions options) {
  std::string diagnostics;
  auto reader = ArchiveReader::open(std::move(file), name, options, &diagnostics);
  std::cerr << diagnostics;
  return reader;
}

DecodeOptions decodeOptions(bool jit, unsigned threads, bool verbose) {
  DecodeOptions options;
  options.jit = jit;
  options.threads = threads;
  options.notice = [](const std::string &notice) { printNotice("note: " + notice); };
  if (verbose) options.summary = printNotice;
  return options;
}

namespace {
std::atomic<bool> noticesSilenced{false};
} // namespace

void silenceNotices() { noticesSilenced = true; }

void printNotice(const std::string &notice) {
  if (!noticesSilenced) std::cerr << "brevisc: " << notice << "\n";
}

Result<void> runDecodeJobs(std::span<const DecodeJob> jobs, DecodeOptions options, const std::string &label,
                           bool showProgress) {
  std::atomic<uint64_t> done{0};
  uint64_t total = 0;
  for (const DecodeJob &j : jobs) {
    if (j.onlyRegions.empty()) total += j.checkpoint->source.size;
    else
      for (size_t r : j.onlyRegions) total += j.checkpoint->regions[r].bytes.size;
  }
  ProgressBar bar(label, total, done, showProgress);
  options.progress = &done;
  return decodeJobs(jobs, options);
}

Result<void> SequentialPositionalSink::writeAt(uint64_t offset, const uint8_t *data, size_t size) {
  if (offset != next_) return Error{"internal error: out-of-order write to a sequential output"};
  next_ += size;
  return out_.write(data, size);
}

namespace {

/// parseSize, which also tells a size past 2^64 - 1 bytes (`tooLarge`) from text that is no size.
std::optional<uint64_t> readSize(const std::string &text, bool &tooLarge) {
  // DIGITS[.DIGITS][UNIT], UNIT one of K M G T P E (powers of 1024), optionally followed by
  // "iB" or "B", or B alone; a fraction of a byte is dropped.
  tooLarge = false;
  size_t at = 0;
  auto digits = [&] {
    size_t start = at;
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) ++at;
    return at > start;
  };
  if (!digits()) return std::nullopt;
  if (at < text.size() && text[at] == '.') {
    ++at;
    if (!digits()) return std::nullopt;
  }
  std::string number = text.substr(0, at), unit = text.substr(at);
  static const std::string units = "KMGTPE";
  int shift = 0;
  if (!unit.empty()) {
    size_t u = units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0]))));
    if (u != std::string::npos) {
      shift = 10 * static_cast<int>(u + 1);
      unit.erase(0, 1);
    }
    if (!(unit.empty() || unit == "B" || unit == "b" || (shift && unit == "iB"))) return std::nullopt;
  }
  long double bytes = std::strtold(number.c_str(), nullptr) * std::ldexp(1.0L, shift);
  tooLarge = bytes >= 18446744073709551616.0L;
  if (tooLarge) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

} // namespace

std::optional<uint64_t> parseSize(const std::string &text) {
  bool tooLarge;
  return readSize(text, tooLarge);
}

std::string validateSize(const std::string &text) {
  bool tooLarge;
  if (readSize(text, tooLarge)) return std::string();
  if (tooLarge) return "sizes go up to 16E less a byte (2^64 - 1 bytes), got " + text;
  if (text.empty()) return "needs a size such as 4096, 512M or 2T";
  return "expected a size such as 4096, 512M or 2T, got " + text;
}

Result<void> checkOutputLimit(const std::string &what, uint64_t bytes, uint64_t limit) {
  if (bytes <= limit) return {};
  return Error{fmt::format("{} decodes to {} bytes, more than the limit of {} (--max-output)", what, bytes, limit)};
}

unsigned resolveThreads(unsigned requested) {
  if (requested) return requested;
  return std::max(1u, std::thread::hardware_concurrency());
}

bool stderrIsTerminal() { return ::isatty(STDERR_FILENO) == 1; }

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

void printJson(const nlohmann::json &result) {
  // Names come from file systems and archives, which need not hold UTF-8: such bytes show as
  // U+FFFD rather than stopping the program (nlohmann's default throws).
  std::cout << result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n" << std::flush;
}

nlohmann::json ratioJson(uint64_t archive, uint64_t original) {
  return original ? nlohmann::json(sizeRatio(archive, original)) : nlohmann::json(nullptr);
}

double sizeRatio(uint64_t archive, uint64_t original) {
  return original ? static_cast<double>(archive) / static_cast<double>(original) : 0.0;
}

std::string sizeChange(uint64_t original, uint64_t archive) {
  if (archive > original)
    return fmt::format("{} -> {} (+{}, larger than the input)", humanBytes(original), humanBytes(archive),
                       humanBytes(archive - original));
  return fmt::format("{} -> {} ({:.2f}%, saved {})", humanBytes(original), humanBytes(archive),
                     100.0 * (original ? sizeRatio(archive, original) : 1.0), humanBytes(original - archive));
}

int usageError(const std::string &message) {
  fail(message);
  return kExitUsage;
}

int fail(const std::string &message) {
  // Messages name files, members and tensors an archive may have been crafted to hold.
  std::cerr << "brevisc: error: " << withControlsEscaped(message) << "\n";
  return kExitFailure;
}

int failIn(const std::string &file, const Error &error) {
  if (!error.loc.valid()) return fail(file + ": " + error.message);
  std::cerr << withControlsEscaped(
      fmt::format("{}:{}:{}: error: {}\n", file, error.loc.line, error.loc.column, error.message));
  return kExitFailure;
}

Result<Payload> readPayload(const Checkpoint &c, const std::string &path) {
  std::error_code ec;
  if (c.payloadSize == 0 && !std::filesystem::exists(path, ec)) return Payload();
  auto payload = Payload::readFile(path);
  if (!payload) return Error{payload.error().message, c.payloadLoc}; // at the line that names it
  return payload;
}

const Lit *firstPayloadLit(const Expr &e) {
  if (const Lit *l = dynAs<Lit>(e)) return l->isInline() ? nullptr : l;
  const Lit *found = nullptr;
  forEachChild(e, [&](const Expr &c) {
    if (!found) found = firstPayloadLit(c);
  });
  return found;
}

std::variant<std::vector<TreeProgram>, int> readProgramTree(const std::string &dir, const char *what) {
  auto files = listFiles(dir);
  if (!files) return fail(files.error().message);
  std::vector<TreeProgram> programs;
  for (const std::string &rel : *files) {
    if (!rel.ends_with(".bdsl")) continue;
    std::string file = dir + "/" + rel;
    auto text = readProgramText(file);
    if (!text) return fail(text.error().message);
    auto module = loadProgram(file, *text, /*requireRunnable=*/false);
    if (!module) return kExitFailure;
    if (!module->isCheckpoint())
      return fail(fmt::format("{} is a single expression; only checkpoint programs are {}", file, what));
    size_t slash = rel.rfind('/');
    std::string memberPath = (slash == std::string::npos ? "" : rel.substr(0, slash + 1)) +
                             module->checkpoint().source.fileName;
    if (!isValidMemberPath(memberPath))
      return fail(fmt::format("{} names an unusable source file {}", file,
                              quoteString(module->checkpoint().source.fileName)));
    programs.push_back({file, memberPath, std::move(module->checkpoint())});
  }
  if (programs.empty()) return fail(fmt::format("{} holds no .bdsl programs", dir));
  // Members in path order, as compress writes them.
  std::stable_sort(programs.begin(), programs.end(),
                   [](const TreeProgram &a, const TreeProgram &b) { return a.memberPath < b.memberPath; });
  for (size_t i = 1; i < programs.size(); ++i)
    if (programs[i].memberPath == programs[i - 1].memberPath)
      return fail(fmt::format("{} and {} both rebuild {}", programs[i - 1].file, programs[i].file,
                              programs[i].memberPath));
  // A member cannot also be the directory of another (`sub` and `sub/vocab.txt`).
  std::map<std::string, const TreeProgram *> byPath;
  for (const TreeProgram &p : programs) byPath.emplace(p.memberPath, &p);
  for (const TreeProgram &p : programs)
    for (size_t slash = p.memberPath.find('/'); slash != std::string::npos; slash = p.memberPath.find('/', slash + 1))
      if (auto it = byPath.find(p.memberPath.substr(0, slash)); it != byPath.end())
        return fail(fmt::format("{} rebuilds the file {}, which {} needs as a directory", it->second->file,
                                it->first, p.file));
  return programs;
}

Result<std::string> besideProgram(const std::string &program, const std::string &name, const char *what) {
  std::string base = baseName(name);
  if (base.empty() || base == "." || base == "..")
    return Error{fmt::format("{} names no usable {} file ({})", program, what, quoteString(name))};
  return directoryOf(program) + "/" + base;
}

std::optional<std::string> regularFileBeside(const std::string &program, const std::string &name) {
  auto path = besideProgram(program, name, "");
  std::error_code ec;
  if (!path || !std::filesystem::is_regular_file(*path, ec)) return std::nullopt;
  return *path;
}

std::shared_ptr<const MappedFile> originalBeside(const std::string &program, const Checkpoint &c) {
  auto path = regularFileBeside(program, c.source.fileName);
  if (!path) return nullptr;
  auto mapped = MappedFile::open(*path);
  return mapped ? *mapped : nullptr;
}

namespace {
bool hasHole(const Expr &e) {
  if (e.kind == NodeKind::Hole) return true;
  bool found = false;
  forEachChild(e, [&](const Expr &child) { found = found || hasHole(child); });
  return found;
}
} // namespace

bool hasHoles(const Checkpoint &c) {
  return std::any_of(c.regions.begin(), c.regions.end(), [](const Region &r) { return hasHole(*r.program); });
}

int failToFill(const std::string &file, const Checkpoint &c, const CheckpointFillError &e) {
  const Region &r = c.regions[e.region];
  return failIn(file, Error{fmt::format("cannot fill the holes of {}: {}",
                                        r.kind == RegionKind::Tensor ? "tensor " + quoteString(r.name)
                                                                     : std::string(regionKindName(r.kind)),
                                        e.error.message),
                            e.error.loc});
}

std::string withExtension(const std::string &path, const std::string &extension) {
  return std::filesystem::path(path).replace_extension(extension).string();
}

std::string directoryOf(const std::string &path) {
  auto parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

Result<std::vector<std::string>> listFiles(const std::string &dir, std::vector<std::string> *emptyDirectories) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, ec), end;
  if (ec) return Error{fmt::format("cannot read directory {}: {}", dir, ec.message())};
  for (; it != end; it.increment(ec)) {
    if (ec) return Error{fmt::format("cannot read directory {}: {}", dir, ec.message())};
    const fs::directory_entry &e = *it;
    const bool link = e.is_symlink(ec);
    const fs::file_status target = e.status(ec); // through a link, to what it names
    if (ec || !fs::exists(target))
      return Error{fmt::format("cannot use {}: {}{}", e.path().string(),
                               link ? "a symbolic link that leads nowhere: " : "",
                               (ec ? ec : std::make_error_code(std::errc::no_such_file_or_directory)).message())};
    // The walk does not enter a symbolic link to a directory (a link may loop back to its own
    // parent); leaving its files out without a word would lose them, and `verify DIR` walks the
    // same way and would not miss them either.
    if (link && fs::is_directory(target))
      return Error{fmt::format("cannot use {}: a symbolic link to a directory (give the directory it points to, or "
                               "copy it in)", e.path().string())};
    if (fs::is_directory(target)) {
      if (emptyDirectories && fs::is_empty(e.path(), ec) && !ec)
        emptyDirectories->push_back(e.path().lexically_relative(dir).generic_string());
      continue;
    }
    // Lexically: fs::relative would resolve a symbolic link to wherever its target lies.
    std::string rel = e.path().lexically_relative(dir).generic_string();
    if (!fs::is_regular_file(target)) return Error{fmt::format("cannot use {}: not a regular file", e.path().string())};
    if (!isValidMemberPath(rel))
      return Error{fmt::format("cannot use {}: unusable file name", e.path().string())};
    files.push_back(rel);
  }
  std::sort(files.begin(), files.end());
  if (emptyDirectories) std::sort(emptyDirectories->begin(), emptyDirectories->end());
  if (files.empty()) return Error{fmt::format("{} holds no files", dir)};
  return files;
}

std::pair<std::string, bool> withoutTrailingSlashes(std::string path) {
  bool had = false;
  while (path.size() > 1 && path.back() == '/') {
    path.pop_back();
    had = true;
  }
  return {std::move(path), had};
}

bool sameFile(const std::string &a, const std::string &b) {
  struct stat x, y;
  return ::stat(a.c_str(), &x) == 0 && ::stat(b.c_str(), &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

namespace {
/// Whether open file descriptor `fd` is a regular file with `st`'s identity.
bool descriptorIs(int fd, const struct stat &st) {
  struct stat d;
  return ::fstat(fd, &d) == 0 && S_ISREG(d.st_mode) && d.st_dev == st.st_dev && d.st_ino == st.st_ino;
}
} // namespace

bool standardOutputIsInput(const std::string &input) {
  struct stat in;
  if (input == "-") return ::fstat(STDIN_FILENO, &in) == 0 && descriptorIs(STDOUT_FILENO, in);
  return ::stat(input.c_str(), &in) == 0 && descriptorIs(STDOUT_FILENO, in);
}

bool standardErrorIsStandardOutput() {
  struct stat err;
  return ::fstat(STDERR_FILENO, &err) == 0 && descriptorIs(STDOUT_FILENO, err);
}

bool decodesInPlace(const OutputFile &out, bool toStandardOutput) {
  return out.isPositional() && !(toStandardOutput && standardErrorIsStandardOutput());
}

std::optional<int> refuseOwnInput(const std::string &output, std::initializer_list<std::string> inputs) {
  for (const std::string &input : inputs) {
    if (input.empty()) continue;
    // `brevisc … -c IN 1<> IN` (or `>> IN`): the shell opened the input as standard output.
    if (output == "-" && standardOutputIsInput(input))
      return usageError(fmt::format("{}, which would be written over; choose another output with -o PATH",
                                    input == "-" ? "standard output and standard input are one file"
                                                 : fmt::format("standard output is {} itself", input)));
    if (input != "-" && output != "-" && sameFile(input, output))
      return usageError(
          fmt::format("{} would replace its own input {}; choose another output with -o PATH", output, input));
  }
  return std::nullopt;
}

namespace {
/// The outputs written so far, by file identity (device, inode), and the input each came from.
std::map<std::pair<dev_t, ino_t>, std::string> &writtenOutputs() {
  static std::map<std::pair<dev_t, ino_t>, std::string> written;
  return written;
}
} // namespace

std::optional<int> refuseOutputOfEarlierInput(const std::string &output, const std::string &input) {
  struct stat st;
  if (output == "-" || ::stat(output.c_str(), &st) != 0) return std::nullopt;
  const auto earlier = writtenOutputs().find({st.st_dev, st.st_ino});
  if (earlier == writtenOutputs().end()) return std::nullopt;
  return fail(fmt::format("{} was written for {} by this command; not replacing it with the output of {}", output,
                          shownName(earlier->second), shownName(input)));
}

void rememberOutput(const std::string &output, const std::string &input) {
  struct stat st;
  if (output != "-" && ::stat(output.c_str(), &st) == 0) writtenOutputs()[{st.st_dev, st.st_ino}] = input;
}

std::string baseName(const std::string &path) { return std::filesystem::path(path).filename().string(); }

std::string notADirectory(const std::string &given, const std::string &path) {
  std::error_code ec;
  return given + (std::filesystem::exists(path, ec) ? " is not a directory" : " is not an existing directory");
}

std::string shownName(const std::string &input) { return input == "-" ? "standard input" : input; }

uint64_t peakMemoryBytes() {
  struct rusage usage {};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024; // kilobytes on Linux
}

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

Result<StrategyOptions> strategyOptionsFor(int level, const std::string &prior) {
  StrategyOptions options = strategyOptionsForLevel(level);
  if (prior.empty()) return options;
  options.learnPrior = false;
  if (prior == "uniform") return options;
  auto text = readFile(prior);
  if (!text) return text.error();
  auto parsed = ProductionPrior::fromJson(std::string_view(reinterpret_cast<const char *>(text->data()), text->size()));
  if (!parsed) return Error{prior + ": " + parsed.error().message};
  options.prior = std::make_shared<const ProductionPrior>(std::move(*parsed));
  return options;
}

} // namespace brevis::cli
