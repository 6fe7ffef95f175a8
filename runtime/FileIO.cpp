#include "runtime/FileIO.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <atomic>
#include <csignal>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

namespace brevis {

namespace {
std::string systemError() { return std::strerror(errno); }

// Temporary files being written, so that SIGINT or SIGTERM can remove them: a fixed table of
// paths the handler may read without allocating (unlink is async-signal-safe).
constexpr size_t kMaxLiveTemps = 16;
std::atomic<const char *> liveTemps[kMaxLiveTemps];

extern "C" void removeTempsAndDie(int sig) {
  for (auto &slot : liveTemps)
    if (const char *p = slot.load()) ::unlink(p);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void trackTemp(const char *path) {
  static std::once_flag handlers;
  std::call_once(handlers, [] {
    std::signal(SIGINT, removeTempsAndDie);
    std::signal(SIGTERM, removeTempsAndDie);
    std::signal(SIGHUP, removeTempsAndDie);
  });
  for (auto &slot : liveTemps) {
    const char *expected = nullptr;
    if (slot.compare_exchange_strong(expected, path)) return;
  }
}

void untrackTemp(const char *path) {
  for (auto &slot : liveTemps) {
    const char *expected = path;
    if (slot.compare_exchange_strong(expected, nullptr)) return;
  }
}

mode_t currentUmask() {
  mode_t m = ::umask(0);
  ::umask(m);
  return m;
}
} // namespace

Result<Bytes> readFile(const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) return Error{fmt::format("cannot open {}: {}", path, systemError())};
  Bytes data;
  uint8_t buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) data.insert(data.end(), buffer, buffer + n);
  bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) return Error{fmt::format("cannot read {}: {}", path, systemError())};
  return data;
}

Result<std::string> readTextFile(const std::string &path) {
  auto bytes = readFile(path);
  if (!bytes) return bytes.error();
  return std::string(bytes->begin(), bytes->end());
}

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{fmt::format("cannot open {}: {}", path, systemError())};
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    std::string why = systemError();
    ::close(fd);
    return Error{fmt::format("cannot read {}: {}", path, why)};
  }
  std::shared_ptr<MappedFile> m(new MappedFile());
  m->path_ = path;
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Error{fmt::format("cannot read {}: it is a directory", path)};
  }
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    void *p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      ::close(fd);
      m->map_ = p;
      m->data_ = static_cast<const uint8_t *>(p);
      m->size_ = static_cast<size_t>(st.st_size);
      return std::shared_ptr<const MappedFile>(std::move(m));
    }
  }
  ::close(fd);
  auto bytes = readFile(path); // pipes, and files that cannot be mapped
  if (!bytes) return bytes.error();
  return fromBytes(std::move(*bytes), path);
}

std::shared_ptr<const MappedFile> MappedFile::fromBytes(Bytes bytes, std::string name) {
  std::shared_ptr<MappedFile> m(new MappedFile());
  m->path_ = std::move(name);
  m->copy_ = std::move(bytes);
  m->data_ = m->copy_.data();
  m->size_ = m->copy_.size();
  return m;
}

MappedFile::~MappedFile() {
  if (map_) ::munmap(map_, size_);
}

OutputFile::OutputFile(std::string path, std::string tempPath, std::FILE *f)
    : path_(std::move(path)), tempPath_(std::move(tempPath)), file_(f) {
  positional_ = ::lseek(fileno(file_), 0, SEEK_CUR) >= 0;
}

Result<std::unique_ptr<OutputFile>> OutputFile::create(const std::string &path, bool overwrite) {
  struct stat st;
  bool exists = ::stat(path.c_str(), &st) == 0;
  if (!overwrite && exists && S_ISREG(st.st_mode))
    return Error{fmt::format("{} already exists; use -f to overwrite it", path)};
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or a pipe (-o /dev/null): written in place; there is nothing to rename over.
    std::FILE *f = std::fopen(path.c_str(), "wb");
    if (!f) return Error{fmt::format("cannot open {}: {}", path, systemError())};
    return std::unique_ptr<OutputFile>(new OutputFile(path, "", f));
  }
  std::string temp = path + ".tmp-XXXXXX";
  int fd = mkstemp(temp.data());
  if (fd < 0) return Error{fmt::format("cannot create {}: {}", path, systemError())};
  std::FILE *f = fdopen(fd, "wb");
  if (!f) {
    ::close(fd);
    ::unlink(temp.c_str());
    return Error{fmt::format("cannot create {}: {}", path, systemError())};
  }
  auto out = std::unique_ptr<OutputFile>(new OutputFile(path, temp, f));
  trackTemp(out->tempPath_.c_str());
  return out;
}

OutputFile::~OutputFile() {
  if (file_) std::fclose(file_);
  if (!tempPath_.empty()) {
    if (!committed_) ::unlink(tempPath_.c_str());
    untrackTemp(tempPath_.c_str());
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
  if (::fallocate(fileno(file_), 0, 0, static_cast<off_t>(bytes)) != 0 && errno == ENOSPC)
    return Error{fmt::format("{} needs {} bytes, but its file system has no room for them", path_, bytes)};
  return {};
}

Result<void> OutputFile::write(const uint8_t *data, size_t size) {
  if (size && std::fwrite(data, 1, size, file_) != size)
    return Error{fmt::format("cannot write {}: {}", path_, systemError())};
  written_ += size;
  return {};
}

Result<void> OutputFile::writeAt(uint64_t offset, const uint8_t *data, size_t size) {
  int fd = fileno(file_);
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

Result<void> OutputFile::commit() {
  bool ok = std::fflush(file_) == 0;
  ok = std::fclose(file_) == 0 && ok;
  file_ = nullptr;
  if (!ok) return Error{fmt::format("cannot write {}: {}", path_, systemError())};
  if (tempPath_.empty()) {
    committed_ = true;
    return {};
  }
  // A replaced file keeps its permissions; a new one gets the usual 0666 less the umask.
  struct stat st;
  ::chmod(tempPath_.c_str(), ::stat(path_.c_str(), &st) == 0 ? (st.st_mode & 07777) : (0666 & ~currentUmask()));
  if (std::rename(tempPath_.c_str(), path_.c_str()) != 0)
    return Error{fmt::format("cannot rename the output to {}: {}", path_, systemError())};
  committed_ = true;
  return {};
}

Result<void> writeFile(const std::string &path, ByteSpan data, bool overwrite) {
  auto out = OutputFile::create(path, overwrite);
  if (!out) return out.error();
  BREVIS_TRY((*out)->write(data.data(), data.size()));
  return (*out)->commit();
}

} // namespace brevis
