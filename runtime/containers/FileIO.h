#pragma once
// Whole-file reads and crash-safe writes.
//
// Inputs: regular files are memory-mapped (only the pages used are read, nothing is copied);
// pipes and sockets are read into memory up to a bound (streamInputLimit()); devices such as
// /dev/zero and terminals are refused, since reading them never ends. A mapped file that
// another process truncates no longer kills the process with SIGBUS: the missing pages read as
// zeros, and checkIntact() reports the truncation, which callers check before they trust what
// they read.
//
// Outputs go to a temporary file beside the target, named `TARGET.brevisc-tmp-PID-XXXXXX`, and
// are renamed into place only by commit(), so a failed run never leaves a partial file; the
// temporary file is removed on failure, on exit, and on SIGINT, SIGTERM and SIGHUP. A process
// killed outright (SIGKILL, power loss) leaves its temporary file behind; the next run writing
// the same target removes those whose process is gone. Without overwriting, the rename is
// atomic and refuses a target that appeared meanwhile (RENAME_NOREPLACE). Devices and pipes
// (-o /dev/null, standard output) are written in place. Like zstd and gzip, commit() does not
// fsync: the rename makes a complete, verified file visible; surviving power loss is left to
// the file system (an fsync of a multi-gigabyte output costs more than decoding it).
#include "lang/Result.h"
#include "runtime/execution/ByteSink.h"
#include "runtime/common/Bytes.h"

#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace brevis {

/// Installs the handlers that remove temporaries on SIGINT, SIGTERM and SIGHUP (signals the
/// caller ignores stay ignored). Done on the first temporary; a program may call it at start.
void installCleanupHandlers();

/// The most bytes read from an input that cannot be mapped (a pipe): half the physical memory.
uint64_t streamInputLimit();

/// Reads a whole file (a regular file, or a pipe up to streamInputLimit()).
Result<Bytes> readFile(const std::string &path);
Result<std::string> readTextFile(const std::string &path);

/// A whole input file, memory-mapped read-only when it is a regular file, read into memory
/// when it is a pipe.
class MappedFile {
public:
  /// With `prefix`, a stream whose first bytes differ from it is not read on (a pipe of
  /// something else is not read to its end): the bytes read so far are returned, and the
  /// caller's own check of them fails.
  static Result<std::shared_ptr<const MappedFile>> open(const std::string &path, ByteSpan prefix = {});
  /// Standard input: mapped if it is a regular file, read if it is a pipe; `name` in messages.
  static Result<std::shared_ptr<const MappedFile>> openStandardInput(ByteSpan prefix = {},
                                                                     std::string name = "standard input");
  /// Bytes already in memory, behaving as a file (tests, pipes).
  static std::shared_ptr<const MappedFile> fromBytes(Bytes bytes, std::string name = "<memory>");
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ByteSpan bytes() const { return ByteSpan(data_, size_); }
  const std::string &path() const { return path_; }
  /// Fails if the file was truncated or modified since it was opened (a mapped file changes
  /// under us when another process writes it): its size, modification time or identity
  /// differ, or a read past its new end was caught.
  Result<void> checkIntact() const;

private:
  MappedFile() = default;
  /// `statPath` names the file again for checkIntact().
  static Result<std::shared_ptr<const MappedFile>> openDescriptor(int fd, std::string path, ByteSpan prefix,
                                                                  std::string statPath);
  std::string path_;
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
  void *map_ = nullptr;
  int guardSlot_ = -1; ///< the mapping's entry in the SIGBUS guard table, or -1
  std::string statPath_; ///< where checkIntact() looks at the file again
  struct timespec mtime_ = {};
  uint64_t inode_ = 0, device_ = 0;
  Bytes copy_;
};

/// The descriptor, standard output or standard error, whose file the symbolic link `path` names
/// (/dev/stdout, /proc/self/fd/2, or any link to the file the shell redirected one to); none
/// where `path` is no link or names another file.
std::optional<int> standardStreamOf(const std::string &path);

/// write() hands a file it creates to the kernel in blocks of this many bytes at offsets that
/// are multiples of it, as checkpoint writers and downloaders do: Linux keeps such a file in
/// page-cache folios of that size, which whoever maps it next (brevisc compressing it, a loader
/// of the checkpoint) maps with a fault each, where a file written a few KiB at a time is kept in
/// 4 KiB pages, each first touch of which costs microseconds on a virtual machine.
inline constexpr size_t kFileWriteBlock = size_t{2} << 20;

class OutputFile final : public ByteSink, public PositionalSink {
public:
  /// Opens a temporary file next to `path`. With overwrite false, fails if `path` exists (a
  /// link to nothing included; commit() fails if it appeared meanwhile). A device or a pipe is
  /// written in place, as is a link to standard output or error (standardStreamOf).
  static Result<std::unique_ptr<OutputFile>> create(const std::string &path, bool overwrite);
  /// Standard output, written in place (`name` in messages).
  static Result<std::unique_ptr<OutputFile>> standardOutput(std::string name = "standard output");
  /// An open stream of the process (standard output or error), written in place and not closed.
  static std::unique_ptr<OutputFile> inherited(std::FILE *stream, std::string name);
  ~OutputFile() override; ///< removes the temporary file unless committed

  Result<void> write(const uint8_t *data, size_t size) override;
  using ByteSink::commit; // commit(size) of decoding in place, beside commit() of the file
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
  /// A file it created (a temporary file renamed by commit()) is mapped to be read back;
  /// standard output and devices are not.
  bool canReadBack() const override { return !tempPath_.empty() && file_ != nullptr; }
  Result<WrittenBytes> readBack(uint64_t offset, uint64_t size) override;
  /// Flushes, closes and renames the temporary file to the target path.
  Result<void> commit();
  uint64_t bytesWritten() const { return written_; }
  const std::string &path() const { return path_; }

private:
  OutputFile(std::string path, std::string tempPath, std::FILE *f, bool overwrite);
  std::string path_, tempPath_;
  std::FILE *file_;
  /// The stream's buffer where write() goes to a file this creates: whole blocks of
  /// kFileWriteBlock reach the file in one write each (see there).
  std::unique_ptr<char[]> streamBuffer_;
  uint64_t written_ = 0;
  /// The end of the furthest writeAt(): pwrite leaves the file offset where it was, so standard
  /// output's is moved there by commit(), for whatever is written to it next.
  std::atomic<uint64_t> positionalEnd_{0};
  bool committed_ = false;
  bool positional_ = false;
  bool overwrite_ = false;
  bool ownsFile_ = true; ///< false for standard output, which is flushed but not closed
};

/// A directory built beside its final name (`TARGET.brevisc-tmp-PID-XXXXXX`), removed unless
/// committed. commit() renames it into place only if the target does not exist by then.
class TempDirectory {
public:
  static Result<TempDirectory> create(const std::string &target);
  TempDirectory(TempDirectory &&o) noexcept : target_(std::move(o.target_)), path_(std::move(o.path_)) { o.path_.clear(); }
  TempDirectory(const TempDirectory &) = delete;
  ~TempDirectory();
  const std::string &path() const { return path_; }
  /// Moves the directory to its target, which must not exist.
  Result<void> commit();

private:
  TempDirectory(std::string target, std::string path) : target_(std::move(target)), path_(std::move(path)) {}
  std::string target_, path_;
};

/// Where the files of a directory output go. A new directory is built beside its name and
/// renamed into place whole when every file is complete. An existing directory (one that is
/// empty, or any with overwrite) receives each file by its own atomic rename, as `tar -x` does:
/// files of the same names are replaced, and nothing else in it is touched, moved or
/// re-permissioned. Without overwrite, a non-empty existing directory is refused at once.
class DirectoryOutput {
public:
  static Result<std::unique_ptr<DirectoryOutput>> open(const std::string &target, bool overwrite);
  ~DirectoryOutput(); ///< uncommitted: removes the files' temporaries and the directories it made
  DirectoryOutput(const DirectoryOutput &) = delete;
  DirectoryOutput &operator=(const DirectoryOutput &) = delete;
  /// Creates the output for `relative` ('/'-separated, already validated), making its parent
  /// directories; the file is owned by this and committed by commit().
  Result<OutputFile *> createFile(const std::string &relative);
  /// Renames every file into place, then the directory if it is new.
  Result<void> commit();

private:
  DirectoryOutput(std::string target, bool overwrite) : target_(std::move(target)), overwrite_(overwrite) {}
  std::string target_;
  bool overwrite_;
  std::unique_ptr<TempDirectory> fresh_; ///< set when the target did not exist
  std::vector<std::string> madeDirectories_; ///< inside an existing target, in creation order
  std::vector<std::string> freshDirectories_; ///< inside the new tree (removed with it)
  std::vector<std::unique_ptr<OutputFile>> files_;
};

/// Renames `from` to `to` atomically, failing (EEXIST) if `to` exists; where the file system has
/// no RENAME_NOREPLACE, a file is linked and unlinked instead (still atomic). Returns 0 or errno.
int renameNoReplace(const std::string &from, const std::string &to);

/// Removes what earlier runs writing `target` left behind when killed outright: entries named
/// `TARGET.brevisc-tmp-PID-*` beside it whose process no longer exists.
void removeStaleTemps(const std::string &target);

/// Writes a whole buffer to `path` through OutputFile.
Result<void> writeFile(const std::string &path, ByteSpan data, bool overwrite);

} // namespace brevis
