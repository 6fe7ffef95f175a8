#include "runtime/FileIO.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace brevis {

namespace {
std::string systemError() { return std::strerror(errno); }
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

Result<std::unique_ptr<OutputFile>> OutputFile::create(const std::string &path, bool overwrite) {
  std::error_code ec;
  if (!overwrite && std::filesystem::exists(path, ec))
    return Error{fmt::format("{} already exists; use -f to overwrite it", path)};
  std::string temp = path + ".tmp-XXXXXX";
  int fd = mkstemp(temp.data());
  if (fd < 0) return Error{fmt::format("cannot create {}: {}", path, systemError())};
  std::FILE *f = fdopen(fd, "wb");
  if (!f) {
    ::close(fd);
    ::unlink(temp.c_str());
    return Error{fmt::format("cannot create {}: {}", path, systemError())};
  }
  return std::unique_ptr<OutputFile>(new OutputFile(path, temp, f));
}

OutputFile::~OutputFile() {
  if (file_) std::fclose(file_);
  if (!committed_) ::unlink(tempPath_.c_str());
}

Result<void> OutputFile::write(const uint8_t *data, size_t size) {
  if (size && std::fwrite(data, 1, size, file_) != size)
    return Error{fmt::format("cannot write {}: {}", path_, systemError())};
  written_ += size;
  return {};
}

Result<void> OutputFile::commit() {
  bool ok = std::fflush(file_) == 0 && fsync(fileno(file_)) == 0;
  ok = std::fclose(file_) == 0 && ok;
  file_ = nullptr;
  if (!ok) return Error{fmt::format("cannot write {}: {}", path_, systemError())};
  ::chmod(tempPath_.c_str(), 0644);
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
