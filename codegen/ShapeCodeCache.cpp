#include "codegen/ShapeCodeCache.h"

#include "runtime/containers/Checksum.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace brevis::jit {

namespace {

// An entry: the magic, its key (32 hexadecimal digits: a copy of another entry is not this one),
// the fields below in the host's byte order (code kept here runs on this host's kind of CPU
// only), the object.
constexpr char kMagic[8] = {'B', 'R', 'V', 'J', 'I', 'T', 'S', '1'};
constexpr size_t kKeyBytes = 32;
struct EntryFields {
  uint64_t stateSlots, scratchBytes; ///< the FrameLayout
  uint64_t objectSize, objectXxh3;
};
constexpr size_t kHeaderBytes = sizeof kMagic + kKeyBytes + sizeof(EntryFields);
/// Larger entries are not read, as in CompiledCodeCache; nor layouts the emitter cannot make
/// (scratch is a chunk's words per leaf of at most 256 nodes).
constexpr uint64_t kMaxEntryBytes = uint64_t{256} << 20;
constexpr uint64_t kMaxFrameBytes = uint64_t{1} << 30;

ByteSpan bytesOf(std::string_view s) { return ByteSpan(reinterpret_cast<const uint8_t *>(s.data()), s.size()); }

/// Reads the regular file `path` whole, if it is one of at most `limit` bytes (a pipe or a
/// device in its place is not read, a link not followed).
std::optional<Bytes> readRegularFile(const std::string &path, uint64_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st;
  std::optional<Bytes> bytes;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) <= limit) {
    Bytes data(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::read(fd, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    if (done == data.size()) bytes = std::move(data);
  }
  ::close(fd);
  return bytes;
}

} // namespace

std::unique_ptr<ShapeCodeCache> ShapeCodeCache::open(const std::string &dir, std::string identity) {
  if (dir.empty() || identity.empty()) return nullptr;
  // Every missing parent too, each for this user only (as LLVM's create_directories).
  for (size_t at = dir.find('/', 1);; at = dir.find('/', at + 1)) {
    const std::string prefix = dir.substr(0, at);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) return nullptr;
    if (at == std::string::npos) break;
  }
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return nullptr;
  return std::unique_ptr<ShapeCodeCache>(new ShapeCodeCache(dir, std::move(identity)));
}

std::string ShapeCodeCache::keyOf(const std::string &shapeKey) const {
  std::string all = identity_;
  all.push_back('\n');
  all.append(shapeKey);
  return fmt::format("{:016x}{:016x}", xxh3(bytesOf(all)), xxh64(bytesOf(all)));
}

std::optional<ShapeCodeCache::Entry> ShapeCodeCache::find(const std::string &shapeKey) const {
  const std::string key = keyOf(shapeKey);
  auto bytes = readRegularFile(dir_ + "/" + kEntryPrefix + key, kMaxEntryBytes);
  if (!bytes || bytes->size() < kHeaderBytes || std::memcmp(bytes->data(), kMagic, sizeof kMagic) != 0 ||
      std::memcmp(bytes->data() + sizeof kMagic, key.data(), kKeyBytes) != 0)
    return std::nullopt;
  EntryFields fields;
  std::memcpy(&fields, bytes->data() + sizeof kMagic + kKeyBytes, sizeof fields);
  if (fields.objectSize != bytes->size() - kHeaderBytes || fields.stateSlots > kMaxFrameBytes / 8 ||
      fields.scratchBytes > kMaxFrameBytes)
    return std::nullopt;
  const ByteSpan object = ByteSpan(*bytes).subspan(kHeaderBytes);
  if (xxh3(object) != fields.objectXxh3) return std::nullopt;
  return Entry{Bytes(object.begin(), object.end()), FrameLayout{fields.stateSlots, fields.scratchBytes}};
}

void ShapeCodeCache::store(const std::string &shapeKey, ByteSpan object, const FrameLayout &layout) const {
  const std::string key = keyOf(shapeKey);
  const EntryFields fields{layout.stateSlots, layout.scratchBytes, object.size(), xxh3(object)};
  Bytes entry(kMagic, kMagic + sizeof kMagic);
  entry.insert(entry.end(), key.begin(), key.end());
  const auto *raw = reinterpret_cast<const uint8_t *>(&fields);
  entry.insert(entry.end(), raw, raw + sizeof fields);
  entry.insert(entry.end(), object.begin(), object.end());
  std::string temporary = dir_ + "/" + kEntryPrefix + "tmp-XXXXXX";
  const int fd = ::mkostemp(temporary.data(), O_CLOEXEC); // created 0600
  if (fd < 0) return;
  size_t done = 0;
  while (done < entry.size()) {
    const ssize_t n = ::write(fd, entry.data() + done, entry.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool written = ::close(fd) == 0 && done == entry.size();
  const std::string path = dir_ + "/" + kEntryPrefix + key;
  if (!written || std::rename(temporary.c_str(), path.c_str()) != 0) ::unlink(temporary.c_str());
}

std::string cpuIdentity() {
  std::string identity = "cpu";
#if defined(__x86_64__)
  auto leaf = [&](unsigned index, unsigned sub) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    __cpuid_count(index, sub, a, b, c, d);
    if (index == 1) b &= 0x00ffffffu; // its top byte is the APIC ID of the CPU this thread is on
    identity += fmt::format(" {:x}.{:x}:{:08x}{:08x}{:08x}{:08x}", index, sub, a, b, c, d);
    return std::array<unsigned, 4>{a, b, c, d};
  };
  const unsigned maxLeaf = leaf(0, 0)[0]; // and the vendor
  const auto basic = leaf(1, 0);          // family, model, stepping; features
  if (maxLeaf >= 7) {
    leaf(7, 0);
    leaf(7, 1);
  }
  if (maxLeaf >= 0xd) leaf(0xd, 1);
  if (__get_cpuid_max(0x80000000, nullptr) >= 0x80000001) leaf(0x80000001, 0);
  if (basic[2] & bit_OSXSAVE) {
    unsigned lo = 0, hi = 0;
    asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    identity += fmt::format(" xcr0:{:08x}{:08x}", hi, lo);
  }
#endif
  return identity;
}

std::string moduleIdentity(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return {};
  return fmt::format("module {} bytes, modified {}.{:09}", st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

} // namespace brevis::jit
