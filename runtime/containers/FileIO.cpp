#include "runtime/containers/FileIO.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <atomic>
#include <csignal>
#include <mutex>
#include <random>
#include <sys/mman.h>
#include <unistd.h>

namespace brevis {

namespace {
std::string systemError() { return std::strerror(errno); }

// Temporaries being written, so that SIGINT, SIGTERM or SIGHUP can remove them: fixed tables of
// paths (copies owned by the tables) that the handler reads without allocating; unlink and
// rmdir are async-signal-safe. Directories are removed last and in reverse order of creation,
// so that a temporary tree goes once its files are gone.
constexpr size_t kMaxLiveTemps = 4096, kMaxLiveDirectories = 4096;
std::atomic<char *> liveTemps[kMaxLiveTemps];
std::atomic<char *> liveDirectories[kMaxLiveDirectories];
std::atomic<size_t> directoriesUsed{0};

extern "C" void removeTempsAndDie(int sig) {
  for (auto &slot : liveTemps)
    if (const char *p = slot.load()) ::unlink(p);
  for (size_t i = std::min(directoriesUsed.load(), kMaxLiveDirectories); i-- > 0;)
    if (const char *p = liveDirectories[i].load()) ::rmdir(p);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void track(std::atomic<char *> &slot, const std::string &path) { slot.store(::strdup(path.c_str())); }

void untrack(std::atomic<char *> *slots, size_t count, const std::string &path) {
  for (size_t i = 0; i < count; ++i) {
    char *p = slots[i].load();
    if (p && path == p && slots[i].compare_exchange_strong(p, nullptr)) {
      std::free(p);
      return;
    }
  }
}

void trackTemp(const std::string &path) {
  installCleanupHandlers();
  for (auto &slot : liveTemps) {
    char *expected = nullptr;
    char *copy = ::strdup(path.c_str());
    if (slot.compare_exchange_strong(expected, copy)) return;
    std::free(copy);
  }
}

void untrackTemp(const std::string &path) { untrack(liveTemps, kMaxLiveTemps, path); }

void trackDirectory(const std::string &path) {
  installCleanupHandlers();
  size_t i = directoriesUsed.fetch_add(1);
  if (i < kMaxLiveDirectories) track(liveDirectories[i], path);
}

void untrackDirectory(const std::string &path) {
  untrack(liveDirectories, std::min(directoriesUsed.load(), kMaxLiveDirectories), path);
}

mode_t currentUmask() {
  mode_t m = ::umask(0);
  ::umask(m);
  return m;
}

// Mapped input files, so that a SIGBUS from reading past the end of one that another process
// truncated can be told from a real fault: the handler maps a page of zeros over the missing
// page, marks the mapping, and lets the read go on; MappedFile::checkIntact() reports it. The
// handler reads this table only (no allocation, no locks).
struct GuardedMapping {
  std::atomic<uintptr_t> begin{0};
  std::atomic<size_t> size{0};
  std::atomic<bool> truncated{false};
};
constexpr size_t kMaxGuarded = 1024;
GuardedMapping guarded[kMaxGuarded];
std::mutex guardedLock; // serializes claiming and releasing slots (never taken by the handler)
size_t pageSize = 4096;

extern "C" void onBusError(int sig, siginfo_t *info, void *) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(info->si_addr);
  for (GuardedMapping &g : guarded) {
    const uintptr_t begin = g.begin.load(std::memory_order_acquire);
    if (begin == 0 || at < begin || at - begin >= g.size.load(std::memory_order_acquire)) continue;
    void *page = reinterpret_cast<void *>(at & ~(pageSize - 1));
    if (::mmap(page, pageSize, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
      g.truncated.store(true);
      return; // the faulting read runs again and finds zeros
    }
  }
  // Not a mapping of ours: the default action, when the faulting instruction runs again.
  std::signal(sig, SIG_DFL);
}

/// Maps a file read-only, advised for huge pages: its pages that are read from disk through the
/// mapping then come into the page cache in folios of 2 MiB, which this mapping and later ones map
/// with one fault each (the kernel places large file mappings on a 2 MiB boundary). Read in
/// small folios, each first touch of a 4 KiB page costs about a microsecond on a virtual machine:
/// decoding a 1 GiB archive read so took 0.91 s, against 0.47 s (docs/benchmarks.md). Files
/// written in large aligned blocks (kFileWriteBlock) are kept in large folios already.
void *mapForReading(int fd, size_t size) {
  void *p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p != MAP_FAILED) ::madvise(p, size, MADV_HUGEPAGE); // advice: without it, mapped as before
  return p;
}

int guardMapping(const void *data, size_t size) {
  static std::once_flag installed;
  std::call_once(installed, [] {
    pageSize = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    struct sigaction sa = {};
    sa.sa_sigaction = onBusError;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, nullptr);
  });
  std::lock_guard lock(guardedLock);
  for (size_t i = 0; i < kMaxGuarded; ++i) {
    if (guarded[i].begin.load() != 0) continue;
    guarded[i].truncated.store(false);
    guarded[i].size.store(size, std::memory_order_release);
    guarded[i].begin.store(reinterpret_cast<uintptr_t>(data), std::memory_order_release);
    return static_cast<int>(i);
  }
  return -1; // unguarded: a truncation then ends the process as before
}

void releaseMapping(int slot) {
  if (slot < 0) return;
  std::lock_guard lock(guardedLock);
  guarded[slot].begin.store(0, std::memory_order_release);
}

/// Reads a pipe or socket to its end, refusing more than streamInputLimit() bytes; stops early
/// once the bytes read differ from `prefix`.
Result<Bytes> readStream(int fd, const std::string &name, ByteSpan prefix) {
  const uint64_t limit = streamInputLimit();
  Bytes data;
  uint8_t buffer[1 << 16];
  while (true) {
    // The prefix is read on its own first, so that a stream of something else is left at once.
    size_t want = data.size() < prefix.size() ? prefix.size() - data.size() : sizeof buffer;
    ssize_t n = ::read(fd, buffer, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error{fmt::format("cannot read {}: {}", name, systemError())};
    if (n == 0) return data;
    if (data.size() < prefix.size() &&
        std::memcmp(buffer, prefix.data() + data.size(), static_cast<size_t>(n)) != 0) {
      data.insert(data.end(), buffer, buffer + n);
      return data;
    }
    if (static_cast<uint64_t>(n) > limit - data.size())
      return Error{fmt::format("{} is a stream of more than {} bytes, more than brevisc keeps in memory; give it "
                               "as a file",
                               name, limit)};
    data.insert(data.end(), buffer, buffer + n);
  }
}

/// Why an input of this type cannot be read, or empty if it can.
std::string unreadableKind(const struct stat &st) {
  if (S_ISDIR(st.st_mode)) return "it is a directory";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "it is a device, not a file";
  return {};
}

/// Creates `prefix` + 6 random characters with `make` (which returns a descriptor, 0, or
/// -errno), registered with `track` before it exists, so that a signal arriving at any moment
/// finds it; retried on a name already taken. Returns what `make` returned; `name` is set.
template <typename Make>
int createTracked(const std::string &prefix, Make make, void (*track)(const std::string &),
                  void (*untrack)(const std::string &), std::string &name) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 random(std::random_device{}() ^ static_cast<uint64_t>(::getpid()));
  for (int attempt = 0; attempt < 100; ++attempt) {
    name = prefix;
    for (int i = 0; i < 6; ++i) name += alphabet[random() % (sizeof alphabet - 1)];
    track(name);
    int result = make(name);
    if (result >= 0) return result;
    untrack(name);
    if (result != -EEXIST) return result;
  }
  return -EEXIST;
}

std::string tempPrefix(const std::string &target) {
  return target + ".brevisc-tmp-" + std::to_string(::getpid()) + "-";
}
} // namespace

void installCleanupHandlers() {
  static std::once_flag handlers;
  std::call_once(handlers, [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      // A signal the caller ignores (nohup, trap '' INT) stays ignored.
      struct sigaction old = {};
      if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
      std::signal(sig, removeTempsAndDie);
    }
  });
}

uint64_t streamInputLimit() {
  static const uint64_t limit = [] {
    long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(size) / 2
                                 : uint64_t{4} << 30;
  }();
  return limit;
}

Result<Bytes> readFile(const std::string &path) {
  auto file = MappedFile::open(path);
  if (!file) return file.error();
  ByteSpan b = (*file)->bytes();
  Bytes data(b.begin(), b.end());
  BREVIS_TRY((*file)->checkIntact());
  return data;
}

Result<std::string> readTextFile(const std::string &path) {
  auto bytes = readFile(path);
  if (!bytes) return bytes.error();
  return std::string(bytes->begin(), bytes->end());
}

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::string &path, ByteSpan prefix) {
  // A named pipe is opened as cat or zstd open one: the open waits for its writer, which may
  // well start after the reader (`brevisc decompress fifo & producer > fifo`).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    struct stat st;
    if (errno == EISDIR || (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)))
      return Error{fmt::format("cannot read {}: it is a directory", path)};
    return Error{fmt::format("cannot open {}: {}", path, systemError())};
  }
  auto file = openDescriptor(fd, path, prefix, path);
  ::close(fd);
  return file;
}

Result<std::shared_ptr<const MappedFile>> MappedFile::openStandardInput(ByteSpan prefix, std::string name) {
  if (::isatty(STDIN_FILENO)) return Error{fmt::format("cannot read {}: it is a terminal", name)};
  return openDescriptor(STDIN_FILENO, std::move(name), prefix, "/proc/self/fd/0");
}

Result<std::shared_ptr<const MappedFile>> MappedFile::openDescriptor(int fd, std::string path, ByteSpan prefix,
                                                                     std::string statPath) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Error{fmt::format("cannot read {}: {}", path, systemError())};
  if (std::string why = unreadableKind(st); !why.empty()) return Error{fmt::format("cannot read {}: {}", path, why)};
  std::shared_ptr<MappedFile> m(new MappedFile());
  m->statPath_ = std::move(statPath);
  m->path_ = std::move(path);
  if (S_ISREG(st.st_mode)) {
    m->mtime_ = st.st_mtim;
    m->inode_ = st.st_ino;
    m->device_ = st.st_dev;
    if (st.st_size == 0) return std::shared_ptr<const MappedFile>(std::move(m));
    void *p = mapForReading(fd, static_cast<size_t>(st.st_size));
    if (p != MAP_FAILED) {
      m->map_ = p;
      m->data_ = static_cast<const uint8_t *>(p);
      m->size_ = static_cast<size_t>(st.st_size);
      m->guardSlot_ = guardMapping(p, m->size_);
      return std::shared_ptr<const MappedFile>(std::move(m));
    }
    // A regular file that cannot be mapped: read it, with a bound like a pipe.
  }
  auto bytes = readStream(fd, m->path_, prefix);
  if (!bytes) return bytes.error();
  m->copy_ = std::move(*bytes);
  m->data_ = m->copy_.data();
  m->size_ = m->copy_.size();
  m->inode_ = 0; // nothing to check: the bytes are ours
  return std::shared_ptr<const MappedFile>(std::move(m));
}

std::shared_ptr<const MappedFile> MappedFile::fromBytes(Bytes bytes, std::string name) {
  std::shared_ptr<MappedFile> m(new MappedFile());
  m->path_ = std::move(name);
  m->copy_ = std::move(bytes);
  m->data_ = m->copy_.data();
  m->size_ = m->copy_.size();
  return m;
}

Result<void> MappedFile::checkIntact() const {
  if (guardSlot_ >= 0 && guarded[guardSlot_].truncated.load())
    return Error{fmt::format("{} was truncated while it was being read", path_)};
  if (inode_ == 0) return {};
  struct stat st;
  bool same = ::stat(statPath_.c_str(), &st) == 0 && st.st_ino == inode_ && st.st_dev == device_ &&
              static_cast<uint64_t>(st.st_size) == size_ && st.st_mtim.tv_sec == mtime_.tv_sec &&
              st.st_mtim.tv_nsec == mtime_.tv_nsec;
  if (!same) return Error{fmt::format("{} changed while it was being read", path_)};
  return {};
}

MappedFile::~MappedFile() {
  releaseMapping(guardSlot_);
  if (map_) ::munmap(map_, size_);
}

int renameNoReplace(const std::string &from, const std::string &to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return errno;
  // A file system without RENAME_NOREPLACE: link() refuses an existing target atomically.
  struct stat st;
  if (::lstat(from.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    if (::link(from.c_str(), to.c_str()) != 0) return errno;
    ::unlink(from.c_str());
    return 0;
  }
  if (::lstat(to.c_str(), &st) == 0) return EEXIST; // a directory: the best that can be done
  return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

void removeStaleTemps(const std::string &target) {
  namespace fs = std::filesystem;
  fs::path t(target);
  std::string prefix = t.filename().string() + ".brevisc-tmp-";
  fs::path dir = t.parent_path().empty() ? fs::path(".") : t.parent_path();
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const char *digits = name.c_str() + prefix.size();
    char *after = nullptr;
    long pid = std::strtol(digits, &after, 10);
    if (after == digits || *after != '-' || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue; // still running
    std::error_code removed;
    fs::remove_all(it->path(), removed);
  }
}

OutputFile::OutputFile(std::string path, std::string tempPath, std::FILE *f, bool overwrite)
    : path_(std::move(path)), tempPath_(std::move(tempPath)), file_(f), overwrite_(overwrite) {
  struct stat st;
  positional_ = ::fstat(fileno(file_), &st) == 0 && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode) &&
                ::lseek(fileno(file_), 0, SEEK_CUR) >= 0;
}

std::optional<int> standardStreamOf(const std::string &path) {
  struct stat link, named, stream;
  if (::lstat(path.c_str(), &link) != 0 || !S_ISLNK(link.st_mode) || ::stat(path.c_str(), &named) != 0)
    return std::nullopt;
  for (int fd : {STDOUT_FILENO, STDERR_FILENO})
    if (::fstat(fd, &stream) == 0 && stream.st_dev == named.st_dev && stream.st_ino == named.st_ino) return fd;
  return std::nullopt;
}

Result<std::unique_ptr<OutputFile>> OutputFile::create(const std::string &path, bool overwrite) {
  // A link to this process's standard output or error (/dev/stdout, /proc/self/fd/1) is written
  // through the descriptor, as `-o -` is: where the shell points it at a file (`> f`, `>> f`,
  // a group's redirection), renaming a new file over its name would lose what the shell writes
  // there before and after, or replace /dev/stdout itself.
  if (const std::optional<int> fd = standardStreamOf(path))
    return inherited(*fd == STDOUT_FILENO ? stdout : stderr, path);
  struct stat st;
  bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) return Error{fmt::format("{} is a directory", path)};
  // A link to nothing is there as much as a file is (the rename would replace it).
  struct stat entry;
  const bool dangling = !exists && ::lstat(path.c_str(), &entry) == 0;
  if (!overwrite && ((exists && S_ISREG(st.st_mode)) || dangling))
    return Error{fmt::format("{} already exists; use -f to overwrite it", path)};
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or a pipe (-o /dev/null): written in place; there is nothing to rename over. A
    // named pipe's open waits for its reader, which may start after the writer.
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return Error{fmt::format("cannot open {}: {}", path, systemError())};
    std::FILE *f = fdopen(fd, "wb");
    if (!f) {
      ::close(fd);
      return Error{fmt::format("cannot open {}: {}", path, systemError())};
    }
    return std::unique_ptr<OutputFile>(new OutputFile(path, "", f, overwrite));
  }
  removeStaleTemps(path);
  std::string temp;
  int fd = createTracked(tempPrefix(path), [](const std::string &name) {
    int made = ::open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    return made >= 0 ? made : -errno;
  }, trackTemp, untrackTemp, temp);
  if (fd < 0) return Error{fmt::format("cannot create {}: {}", path, std::strerror(-fd))};
  std::FILE *f = fdopen(fd, "wb");
  if (!f) {
    ::close(fd);
    ::unlink(temp.c_str());
    untrackTemp(temp);
    return Error{fmt::format("cannot create {}: {}", path, systemError())};
  }
  return std::unique_ptr<OutputFile>(new OutputFile(path, temp, f, overwrite));
}

Result<std::unique_ptr<OutputFile>> OutputFile::standardOutput(std::string name) {
  return inherited(stdout, std::move(name));
}

std::unique_ptr<OutputFile> OutputFile::inherited(std::FILE *stream, std::string name) {
  auto out = std::unique_ptr<OutputFile>(new OutputFile(std::move(name), "", stream, false));
  out->ownsFile_ = false;
  // Positional writes only into a regular file opened at its start without O_APPEND (`> file`),
  // or a device such as /dev/null; a pipe, or a file the shell wrote to before us or opened for
  // appending, takes the bytes in order.
  const int fd = fileno(stream);
  struct stat st;
  int flags = ::fcntl(fd, F_GETFL);
  bool ok = ::fstat(fd, &st) == 0 && flags >= 0 && !(flags & O_APPEND);
  out->positional_ = ok && ((S_ISREG(st.st_mode) && ::lseek(fd, 0, SEEK_CUR) == 0) ||
                            (S_ISCHR(st.st_mode) && !::isatty(fd))); // > /dev/null
  return out;
}

OutputFile::~OutputFile() {
  if (file_ && ownsFile_) std::fclose(file_);
  if (!tempPath_.empty()) {
    if (!committed_) ::unlink(tempPath_.c_str());
    untrackTemp(tempPath_);
  }
}

Result<void> OutputFile::checkRoom(uint64_t bytes) const {
  struct statvfs fs;
  std::string dir = std::filesystem::path(path_).parent_path().string();
  if (::statvfs(dir.empty() ? "." : dir.c_str(), &fs) != 0) return {}; // unknown: let writes report it
  unsigned __int128 available = static_cast<unsigned __int128>(fs.f_bavail) * fs.f_frsize;
  if (!tempPath_.empty() && bytes > available)
    return Error{fmt::format("{} needs {} bytes, but its file system has only {} free", path_, bytes,
                             static_cast<uint64_t>(available))};
  return {};
}

Result<void> OutputFile::preallocate(uint64_t bytes) {
  if (tempPath_.empty() || bytes == 0) return {};
  // fallocate, not posix_fallocate: where the file system cannot allocate, the latter writes
  // zeros over the whole file.
  if (::fallocate(fileno(file_), 0, 0, static_cast<off_t>(bytes)) != 0) {
    if (errno == ENOSPC)
      return Error{fmt::format("{} needs {} bytes, but its file system has no room for them", path_, bytes)};
    if (errno == EFBIG) // the process's file size limit, or the file system's largest file
      return Error{fmt::format("{} needs {} bytes, more than a file may hold here (see ulimit -f)", path_, bytes)};
  }
  return {};
}

Result<void> OutputFile::write(const uint8_t *data, size_t size) {
  if (written_ == 0 && !streamBuffer_ && !tempPath_.empty()) {
    // Before the stream's first operation, as setvbuf requires (writeAt() bypasses the stream).
    streamBuffer_ = std::make_unique_for_overwrite<char[]>(kFileWriteBlock);
    std::setvbuf(file_, streamBuffer_.get(), _IOFBF, kFileWriteBlock);
  }
  if (size && std::fwrite(data, 1, size, file_) != size)
    return Error{fmt::format("cannot write {}: {}", path_, systemError())};
  written_ += size;
  return {};
}

Result<void> OutputFile::writeAt(uint64_t offset, const uint8_t *data, size_t size) {
  int fd = fileno(file_);
  for (uint64_t end = offset + size, known = positionalEnd_.load(std::memory_order_relaxed);
       end > known && !positionalEnd_.compare_exchange_weak(known, end, std::memory_order_relaxed);) {
  }
  while (size) {
    ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error{fmt::format("cannot write {}: {}", path_, n < 0 ? systemError() : "no progress")};
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return {};
}

Result<PositionalSink::WrittenBytes> OutputFile::readBack(uint64_t offset, uint64_t size) {
  if (!canReadBack()) return PositionalSink::readBack(offset, size);
  if (size == 0) return WrittenBytes{};
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = offset / page * page;
  const uint64_t length = offset - start + size;
  void *p = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fileno(file_), static_cast<off_t>(start));
  if (p == MAP_FAILED) return Error{fmt::format("cannot read back {}: {}", path_, systemError())};
  std::shared_ptr<const void> owner(p, [length](const void *q) { ::munmap(const_cast<void *>(q), length); });
  return WrittenBytes{ByteSpan(static_cast<const uint8_t *>(p) + (offset - start), size), std::move(owner)};
}

Result<void> OutputFile::commit() {
  bool ok = std::fflush(file_) == 0;
  // Standard output written with pwrite: its offset still at the start, where a second archive
  // decompressed to it, or the shell's next command, would write over this one's bytes.
  if (!ownsFile_ && positional_ && positionalEnd_ > 0)
    ok = ::lseek(fileno(file_), static_cast<off_t>(positionalEnd_.load()), SEEK_SET) >= 0 && ok;
  // Standard output on a regular file that held more before (`1<> FILE`, not truncated as `>`
  // does): the bytes past what was written are not part of the output, and an archive followed
  // by them would not read.
  if (struct stat st; ok && !ownsFile_ && positional_ && ::fstat(fileno(file_), &st) == 0 && S_ISREG(st.st_mode))
    if (const off_t end = ::lseek(fileno(file_), 0, SEEK_CUR); end >= 0 && st.st_size > end)
      ok = ::ftruncate(fileno(file_), end) == 0;
  if (ownsFile_) ok = std::fclose(file_) == 0 && ok;
  file_ = nullptr;
  if (!ok) return Error{fmt::format("cannot write {}: {}", path_, systemError())};
  if (tempPath_.empty()) {
    committed_ = true;
    return {};
  }
  // A replaced file keeps its permissions; a new one gets the usual 0666 less the umask.
  struct stat st;
  ::chmod(tempPath_.c_str(), ::stat(path_.c_str(), &st) == 0 ? (st.st_mode & 07777) : (0666 & ~currentUmask()));
  if (overwrite_) {
    if (std::rename(tempPath_.c_str(), path_.c_str()) != 0)
      return Error{fmt::format("cannot rename the output to {}: {}", path_, systemError())};
  } else if (int err = renameNoReplace(tempPath_, path_); err != 0) {
    if (err == EEXIST)
      return Error{fmt::format("{} appeared while it was being written and was left alone; use -f to overwrite it",
                               path_)};
    return Error{fmt::format("cannot rename the output to {}: {}", path_, std::strerror(err))};
  }
  committed_ = true;
  return {};
}

Result<TempDirectory> TempDirectory::create(const std::string &target) {
  removeStaleTemps(target);
  std::string path;
  int made = createTracked(tempPrefix(target), [](const std::string &name) {
    return ::mkdir(name.c_str(), 0700) == 0 ? 0 : -errno;
  }, trackDirectory, untrackDirectory, path);
  if (made < 0)
    return Error{fmt::format("cannot create a directory beside {}: {}", target, std::strerror(-made))};
  return TempDirectory(target, path);
}

TempDirectory::~TempDirectory() {
  std::error_code ec;
  if (path_.empty()) return;
  std::filesystem::remove_all(path_, ec);
  untrackDirectory(path_);
}

Result<void> TempDirectory::commit() {
  // mkdtemp made it private (0700); the directory people get has the usual mode.
  ::chmod(path_.c_str(), 0777 & ~currentUmask());
  if (int err = renameNoReplace(path_, target_); err != 0) {
    if (err == EEXIST || err == ENOTEMPTY)
      return Error{fmt::format("{} appeared while it was being written and was left alone", target_)};
    return Error{fmt::format("cannot rename the output to {}: {}", target_, std::strerror(err))};
  }
  untrackDirectory(path_);
  path_.clear();
  return {};
}

Result<std::unique_ptr<DirectoryOutput>> DirectoryOutput::open(const std::string &given, bool overwrite) {
  namespace fs = std::filesystem;
  // "out/" names the directory out: its temporary is made beside it, not inside it.
  std::string target = given;
  while (target.size() > 1 && target.back() == '/') target.pop_back();
  std::unique_ptr<DirectoryOutput> out(new DirectoryOutput(target, overwrite));
  struct stat st;
  if (::stat(target.c_str(), &st) != 0) {
    if (errno != ENOENT) return Error{fmt::format("cannot use {}: {}", target, systemError())};
    auto made = TempDirectory::create(target);
    if (!made) return made.error();
    out->fresh_ = std::make_unique<TempDirectory>(std::move(*made));
    return out;
  }
  if (!S_ISDIR(st.st_mode)) return Error{fmt::format("{} exists and is not a directory", target)};
  std::error_code ec;
  if (!overwrite && !fs::is_empty(target, ec))
    return Error{fmt::format("{} already exists and is not empty; use -f to write into it", target)};
  if (ec) return Error{fmt::format("cannot read directory {}: {}", target, ec.message())};
  return out;
}

DirectoryOutput::~DirectoryOutput() {
  files_.clear(); // their temporaries first, then the directories that held them
  for (auto it = madeDirectories_.rbegin(); it != madeDirectories_.rend(); ++it) {
    ::rmdir(it->c_str());
    untrackDirectory(*it);
  }
  for (const std::string &d : freshDirectories_) untrackDirectory(d);
}

Result<OutputFile *> DirectoryOutput::createFile(const std::string &relative) {
  const std::string root = fresh_ ? fresh_->path() : target_;
  // Each missing directory on the way, made (and remembered) one by one.
  for (size_t slash = relative.find('/'); slash != std::string::npos; slash = relative.find('/', slash + 1)) {
    std::string dir = root + "/" + relative.substr(0, slash);
    trackDirectory(dir); // before it exists: an interrupted run removes it (once empty)
    if (::mkdir(dir.c_str(), 0777) == 0) {
      (fresh_ ? freshDirectories_ : madeDirectories_).push_back(dir);
      continue;
    }
    int err = errno;
    untrackDirectory(dir);
    errno = err;
    struct stat st;
    if (errno == EEXIST && ::lstat(dir.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) continue;
      // A link there would put the file outside the directory written into (as tar refuses).
      if (S_ISLNK(st.st_mode))
        return Error{fmt::format("cannot write {}: {} is a symbolic link, which is not followed inside the output "
                                 "directory",
                                 root + "/" + relative, dir)};
    }
    return Error{fmt::format("cannot create directory {}: {}", dir, errno == EEXIST ? "a file has its name" : systemError())};
  }
  auto file = OutputFile::create(root + "/" + relative, overwrite_ && !fresh_);
  if (!file) return file.error();
  files_.push_back(std::move(*file));
  return files_.back().get();
}

Result<void> DirectoryOutput::commit() {
  for (auto &f : files_) BREVIS_TRY(f->commit());
  if (fresh_) BREVIS_TRY(fresh_->commit());
  for (const std::string &d : madeDirectories_) untrackDirectory(d);
  for (const std::string &d : freshDirectories_) untrackDirectory(d);
  madeDirectories_.clear();
  freshDirectories_.clear();
  return {};
}

Result<void> writeFile(const std::string &path, ByteSpan data, bool overwrite) {
  auto out = OutputFile::create(path, overwrite);
  if (!out) return out.error();
  BREVIS_TRY((*out)->write(data.data(), data.size()));
  return (*out)->commit();
}

} // namespace brevis
