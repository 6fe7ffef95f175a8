#pragma once
// Whole-file reads and crash-safe writes: output goes to a temporary file beside the target
// and is renamed into place only by commit(), so a failed run never leaves a partial file; the
// temporary file is removed on failure, on exit, and on SIGINT, SIGTERM and SIGHUP. Devices and
// pipes (-o /dev/null) are written in place. Like zstd and gzip, commit() does not fsync: the
// rename makes a complete, verified file visible; surviving power loss is left to the file
// system (an fsync of a multi-gigabyte output costs more than decoding it).
#include "lang/Result.h"
#include "runtime/ByteSink.h"
#include "runtime/Bytes.h"

#include <cstdio>
#include <memory>
#include <string>

namespace brevis {

Result<Bytes> readFile(const std::string &path);
Result<std::string> readTextFile(const std::string &path);

/// A whole input file, memory-mapped read-only when it is a regular file (so that only the
/// pages used are read, and nothing is copied), read into memory otherwise (pipes). The file
/// must not be truncated while mapped.
class MappedFile {
public:
  static Result<std::shared_ptr<const MappedFile>> open(const std::string &path);
  /// Bytes already in memory, behaving as a file (tests, pipes).
  static std::shared_ptr<const MappedFile> fromBytes(Bytes bytes, std::string name = "<memory>");
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ByteSpan bytes() const { return ByteSpan(data_, size_); }
  const std::string &path() const { return path_; }

private:
  MappedFile() = default;
  std::string path_;
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
  void *map_ = nullptr;
  Bytes copy_;
};

class OutputFile final : public ByteSink, public PositionalSink {
public:
  /// Opens a temporary file next to `path`. With overwrite false, fails if `path` exists.
  static Result<std::unique_ptr<OutputFile>> create(const std::string &path, bool overwrite);
  ~OutputFile() override; ///< removes the temporary file unless committed

  Result<void> write(const uint8_t *data, size_t size) override;
  /// Whether writeAt() works: the target is a regular file or a device like /dev/null, not a pipe.
  bool isPositional() const { return positional_; }
  /// Writes at an absolute offset; safe to call from several threads at once. Do not mix with
  /// write() on one file.
  Result<void> writeAt(uint64_t offset, const uint8_t *data, size_t size) override;
  /// Fails if the target's file system has fewer than `bytes` free: checked before a long
  /// decode, so that a checkpoint too large for the disk (or an archive claiming a huge one)
  /// fails at once instead of after filling it.
  Result<void> checkRoom(uint64_t bytes) const;
  /// Allocates the temporary file's `bytes` up front (fallocate) when it will be written with
  /// writeAt() to exactly that size: the kernel then copies writes into blocks already
  /// allocated (on ext4, a fifth less system time per gigabyte), and a full disk fails here.
  /// A file system without fallocate is not an error.
  Result<void> preallocate(uint64_t bytes);
  /// Flushes, closes and renames the temporary file to the target path.
  Result<void> commit();
  uint64_t bytesWritten() const { return written_; }

private:
  OutputFile(std::string path, std::string tempPath, std::FILE *f);
  std::string path_, tempPath_;
  std::FILE *file_;
  uint64_t written_ = 0;
  bool committed_ = false;
  bool positional_ = false;
};

/// Writes a whole buffer to `path` through OutputFile.
Result<void> writeFile(const std::string &path, ByteSpan data, bool overwrite);

} // namespace brevis
