// Inputs and outputs under change and failure: truncated mapped files, targets that appear
// during a write, directories written into, streams and devices.
#include "runtime/containers/Archive.h"
#include "runtime/containers/FileIO.h"
#include "ProcessMappings.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace brevis {
namespace {

namespace fs = std::filesystem;

class FileIOTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "brevis-fileio-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string &name) const { return dir_ + "/" + name; }
  static void put(const std::string &p, const std::string &text) { std::ofstream(p, std::ios::binary) << text; }
  static std::string get(const std::string &p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  /// Names in the directory (temporaries included).
  std::vector<std::string> listing(const std::string &d) const {
    std::vector<std::string> names;
    for (const auto &e : fs::directory_iterator(d)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  std::string dir_;
};

TEST_F(FileIOTest, TruncatedMappedFileReadsZerosAndIsReported) {
  const std::string p = path("input.bin");
  put(p, std::string(1 << 16, 'a'));
  auto file = MappedFile::open(p);
  ASSERT_TRUE(file) << file.error().message;
  ASSERT_TRUE((*file)->checkIntact());
  ASSERT_EQ(::truncate(p.c_str(), 4096), 0);
  ByteSpan bytes = (*file)->bytes();
  ASSERT_EQ(bytes.size(), size_t{1} << 16);
  EXPECT_EQ(bytes[100], 'a');
  EXPECT_EQ(bytes[40000], 0); // past the new end: a SIGBUS without the guard
  auto intact = (*file)->checkIntact();
  ASSERT_FALSE(intact);
  EXPECT_EQ(intact.error().message, p + " was truncated while it was being read");
}

TEST_F(FileIOTest, TruncatedLargeMappedFileReadsZerosAndIsReported) {
  // Mapped with the advice for huge pages and read from disk, so that its pages may lie in 2 MiB
  // folios when it is cut short under the mapping.
  const std::string p = path("input.bin");
  const size_t size = size_t{6} << 20;
  put(p, std::string(size, 'a'));
  {
    const int fd = ::open(p.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
  auto file = MappedFile::open(p);
  ASSERT_TRUE(file) << file.error().message;
  ByteSpan bytes = (*file)->bytes();
  ASSERT_EQ(bytes.size(), size);
  size_t as = 0;
  for (size_t i = 0; i < size; i += 4096) as += bytes[i] == 'a';
  EXPECT_EQ(as, size / 4096);
  if (test_support::filePmdMappedKbAt(bytes.data()) == 0)
    GTEST_SKIP() << "the file system did not give the file huge pages (tmpfs, or no large folios)";
  ASSERT_EQ(::truncate(p.c_str(), 1 << 20), 0);
  EXPECT_EQ(bytes[100], 'a');
  EXPECT_EQ(bytes[(size_t{5} << 20) + 7], 0); // past the new end: a SIGBUS without the guard
  auto intact = (*file)->checkIntact();
  ASSERT_FALSE(intact);
  EXPECT_EQ(intact.error().message, p + " was truncated while it was being read");
}

TEST_F(FileIOTest, AMappedFileIsAdvisedForHugePages) {
  // Its pages read from disk then come in 2 MiB folios, mapped with one fault each.
  if (!fs::exists("/sys/kernel/mm/transparent_hugepage")) GTEST_SKIP() << "no transparent huge pages";
  const std::string p = path("input.bin");
  put(p, std::string(size_t{3} << 20, 'a'));
  auto file = MappedFile::open(p);
  ASSERT_TRUE(file) << file.error().message;
  const std::string flags = test_support::flagsOfMappingAt((*file)->bytes().data());
  ASSERT_FALSE(flags.empty()) << "no mapping found for the file";
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
}

TEST_F(FileIOTest, ModifiedMappedFileIsReported) {
  const std::string p = path("input.bin");
  put(p, "0123456789");
  auto file = MappedFile::open(p);
  ASSERT_TRUE(file);
  struct timespec times[2] = {{0, UTIME_OMIT}, {12345, 0}}; // a write moves the modification time
  ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), times, 0), 0);
  auto intact = (*file)->checkIntact();
  ASSERT_FALSE(intact);
  EXPECT_EQ(intact.error().message, p + " changed while it was being read");
}

TEST_F(FileIOTest, AFileBeingWrittenIsReadBackAsWritten) {
  auto out = OutputFile::create(path("out.bin"), /*overwrite=*/false);
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_TRUE((*out)->canReadBack());
  Bytes bytes(3 * 4096 + 17);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 1);
  ASSERT_TRUE((*out)->writeAt(0, bytes.data(), bytes.size()));
  for (auto [offset, size] : {std::pair<uint64_t, uint64_t>{0, bytes.size()}, {4095, 2}, {5000, 7000}, {100, 0}}) {
    auto back = (*out)->readBack(offset, size);
    ASSERT_TRUE(back) << back.error().message;
    ASSERT_EQ(back->bytes.size(), size);
    EXPECT_TRUE(std::equal(back->bytes.begin(), back->bytes.end(), bytes.begin() + static_cast<std::ptrdiff_t>(offset)))
        << offset << "+" << size;
  }
  ASSERT_TRUE((*out)->commit());
  EXPECT_FALSE((*out)->canReadBack()); // closed
  // A device is written in place and cannot give its bytes back.
  auto device = OutputFile::create("/dev/null", /*overwrite=*/false);
  ASSERT_TRUE(device) << device.error().message;
  EXPECT_FALSE((*device)->canReadBack());
  EXPECT_FALSE((*device)->readBack(0, 1));
}

TEST_F(FileIOTest, AFileWrittenPieceByPieceReachesTheKernelInWholeBlocks) {
  const std::string p = path("out.bin");
  auto out = OutputFile::create(p, /*overwrite=*/false);
  ASSERT_TRUE(out) << out.error().message;
  Bytes piece(4096);
  const size_t pieces = (3 * kFileWriteBlock + kFileWriteBlock / 2) / piece.size();
  auto fileSize = [&] {
    const std::vector<std::string> names = listing(dir_);
    EXPECT_EQ(names.size(), 1u); // the temporary
    struct stat st;
    return ::stat(path(names.at(0)).c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : ~uint64_t{0};
  };
  for (size_t i = 0; i < pieces; ++i) {
    std::fill(piece.begin(), piece.end(), static_cast<uint8_t>(i));
    ASSERT_TRUE((*out)->write(piece.data(), piece.size()));
    // Only whole blocks reach the file before the commit, at most one held back.
    const uint64_t written = (i + 1) * piece.size(), inFile = fileSize();
    ASSERT_EQ(inFile % kFileWriteBlock, 0u) << i;
    ASSERT_LE(inFile, written) << i;
    ASSERT_LE(written - inFile, kFileWriteBlock) << i;
  }
  // A large write after them: the block it completes, then whole blocks straight from the caller.
  Bytes large(2 * kFileWriteBlock + 100, 0xee);
  ASSERT_TRUE((*out)->write(large.data(), large.size()));
  const uint64_t total = pieces * piece.size() + large.size();
  EXPECT_EQ(fileSize(), total / kFileWriteBlock * kFileWriteBlock);
  ASSERT_TRUE((*out)->commit());
  const std::string written = get(p);
  ASSERT_EQ(written.size(), total);
  for (size_t i = 0; i < pieces; ++i)
    ASSERT_EQ(static_cast<uint8_t>(written[i * piece.size() + 17]), static_cast<uint8_t>(i)) << i;
  EXPECT_EQ(static_cast<uint8_t>(written.back()), 0xee);
}

TEST_F(FileIOTest, NoOverwriteCommitLeavesATargetThatAppeared) {
  const std::string p = path("out.bin");
  auto out = OutputFile::create(p, /*overwrite=*/false);
  ASSERT_TRUE(out);
  ASSERT_TRUE((*out)->write(reinterpret_cast<const uint8_t *>("new"), 3));
  put(p, "theirs"); // another process writes the same name meanwhile
  auto committed = (*out)->commit();
  ASSERT_FALSE(committed);
  EXPECT_EQ(committed.error().message, p + " appeared while it was being written and was left alone; use -f to overwrite it");
  out->reset();
  EXPECT_EQ(get(p), "theirs");
  EXPECT_EQ(listing(dir_), std::vector<std::string>{"out.bin"}); // no temporary left
}

TEST_F(FileIOTest, OverwriteKeepsTheReplacedFilesMode) {
  const std::string p = path("out.bin");
  put(p, "old");
  ASSERT_EQ(::chmod(p.c_str(), 0640), 0);
  ASSERT_TRUE(writeFile(p, ByteSpan(reinterpret_cast<const uint8_t *>("new"), 3), /*overwrite=*/true));
  EXPECT_EQ(get(p), "new");
  struct stat st;
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST_F(FileIOTest, NewDirectoryIsNotCommittedOverOneThatAppeared) {
  const std::string target = path("tree");
  auto out = DirectoryOutput::open(target, /*overwrite=*/false);
  ASSERT_TRUE(out) << out.error().message;
  auto f = (*out)->createFile("a/b.txt");
  ASSERT_TRUE(f) << f.error().message;
  ASSERT_TRUE((*f)->write(reinterpret_cast<const uint8_t *>("x"), 1));
  fs::create_directory(target);
  put(target + "/theirs.txt", "theirs");
  auto committed = (*out)->commit();
  ASSERT_FALSE(committed);
  out->reset();
  EXPECT_EQ(listing(target), std::vector<std::string>{"theirs.txt"});
  EXPECT_EQ(listing(dir_), std::vector<std::string>{"tree"}); // the temporary directory is gone
}

TEST_F(FileIOTest, ExistingDirectoryGetsItsFilesAndKeepsTheRest) {
  const std::string target = path("tree");
  fs::create_directories(target + "/sub");
  put(target + "/other.bin", "other");
  put(target + "/sub/file.txt", "old");
  ASSERT_FALSE(DirectoryOutput::open(target, /*overwrite=*/false)); // not empty
  auto out = DirectoryOutput::open(target, /*overwrite=*/true);
  ASSERT_TRUE(out) << out.error().message;
  for (const char *name : {"sub/file.txt", "new/deep/file.txt"}) {
    auto f = (*out)->createFile(name);
    ASSERT_TRUE(f) << f.error().message;
    ASSERT_TRUE((*f)->write(reinterpret_cast<const uint8_t *>("new"), 3));
  }
  ASSERT_TRUE((*out)->commit());
  EXPECT_EQ(get(target + "/other.bin"), "other");
  EXPECT_EQ(get(target + "/sub/file.txt"), "new");
  EXPECT_EQ(get(target + "/new/deep/file.txt"), "new");
}

TEST_F(FileIOTest, AbandonedDirectoryOutputRemovesOnlyWhatItMade) {
  const std::string target = path("tree");
  fs::create_directories(target + "/sub");
  put(target + "/sub/file.txt", "old");
  {
    auto out = DirectoryOutput::open(target, /*overwrite=*/true);
    ASSERT_TRUE(out);
    ASSERT_TRUE((*out)->createFile("sub/file.txt"));
    ASSERT_TRUE((*out)->createFile("made/deeper/file.txt"));
  } // not committed: a failed decode
  EXPECT_EQ(listing(target), std::vector<std::string>{"sub"});
  EXPECT_EQ(listing(target + "/sub"), std::vector<std::string>{"file.txt"});
  EXPECT_EQ(get(target + "/sub/file.txt"), "old");
}

TEST_F(FileIOTest, DirectoryOutputRefusesAFileInTheWay) {
  const std::string target = path("tree");
  fs::create_directories(target);
  put(target + "/a", "a file");
  auto out = DirectoryOutput::open(target, /*overwrite=*/true);
  ASSERT_TRUE(out);
  auto f = (*out)->createFile("a/b.txt");
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().message, "cannot create directory " + target + "/a: a file has its name");
  put(path("plain"), "x");
  auto onFile = DirectoryOutput::open(path("plain"), /*overwrite=*/true);
  ASSERT_FALSE(onFile);
  EXPECT_EQ(onFile.error().message, path("plain") + " exists and is not a directory");
}

TEST_F(FileIOTest, StreamOfSomethingElseIsNotReadToItsEnd) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "NOTMAGIC", 8), 8); // and the writer stays open: no end of file
  auto file = MappedFile::open("/proc/self/fd/" + std::to_string(fds[0]), archiveMagic());
  ::close(fds[0]);
  ::close(fds[1]);
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_FALSE(looksLikeArchive((*file)->bytes()));
  EXPECT_LE((*file)->bytes().size(), 8u);
}

TEST_F(FileIOTest, StreamIsReadWhole) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  Bytes expected(archiveMagic().begin(), archiveMagic().end());
  expected.resize(5000, 7);
  ASSERT_EQ(::write(fds[1], expected.data(), expected.size()), static_cast<ssize_t>(expected.size()));
  ::close(fds[1]);
  auto file = MappedFile::open("/proc/self/fd/" + std::to_string(fds[0]), archiveMagic());
  ::close(fds[0]);
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_EQ(Bytes((*file)->bytes().begin(), (*file)->bytes().end()), expected);
  EXPECT_TRUE((*file)->checkIntact());
}

TEST_F(FileIOTest, DevicesAndDirectoriesAreRefused) {
  auto zero = MappedFile::open("/dev/zero");
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().message, "cannot read /dev/zero: it is a device, not a file");
  auto d = MappedFile::open(dir_);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().message, "cannot read " + dir_ + ": it is a directory");
  EXPECT_GT(streamInputLimit(), uint64_t{1} << 20);
}

TEST_F(FileIOTest, StaleTemporariesOfDeadProcessesAreRemoved) {
  const std::string target = path("out.bin");
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child); // now a pid that no process has
  put(target + ".brevisc-tmp-" + std::to_string(child) + "-abcdef", "stale");
  put(target + ".brevisc-tmp-1-abcdef", "pid 1 is alive");
  put(path("other.brevisc-tmp-" + std::to_string(child) + "-abcdef"), "another target's");
  removeStaleTemps(target);
  EXPECT_EQ(listing(dir_), (std::vector<std::string>{"other.brevisc-tmp-" + std::to_string(child) + "-abcdef",
                                                     "out.bin.brevisc-tmp-1-abcdef"}));
}

} // namespace
} // namespace brevis
