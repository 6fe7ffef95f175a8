#include "codegen/CompiledCodeCache.h"

#include "runtime/containers/Checksum.h"

#include <llvm/IR/Module.h>
#include <llvm/Support/CachePruning.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <fmt/format.h>

#include <cstring>

#include <unistd.h>

namespace brevis::jit {

namespace {

// An entry: the magic, its key (32 hexadecimal digits: a copy of another entry is not this
// one), the object's size and its XXH3-64 (both little-endian), the object.
constexpr char kMagic[8] = {'B', 'R', 'V', 'J', 'I', 'T', 'O', '2'};
constexpr size_t kKeyBytes = 32;
constexpr size_t kHeaderBytes = sizeof kMagic + kKeyBytes + 16;
/// Larger entries are not read (a decoder's object is a few KB; a huge inline literal's, MBs).
constexpr uint64_t kMaxEntryBytes = uint64_t{256} << 20;

// pruneCache() considers only files whose names start with "llvmcache-".
constexpr const char *kEntryPrefix = "llvmcache-brevis-";

/// At most this much is kept; the least recently used entries go first, and entries unused for
/// a month. Checked at most once an hour (a timestamp file in the directory).
constexpr uint64_t kMaxCacheBytes = uint64_t{256} << 20;
constexpr uint64_t kMaxCacheFiles = 100000;

uint64_t loadLE64(const char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = v << 8 | static_cast<uint8_t>(p[i]);
  return v;
}

void appendLE64(std::string &out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>(v >> (8 * i)));
}

ByteSpan bytesOf(std::string_view s) { return ByteSpan(reinterpret_cast<const uint8_t *>(s.data()), s.size()); }

} // namespace

std::unique_ptr<CompiledCodeCache> CompiledCodeCache::open(const std::string &dir) {
  if (dir.empty()) return nullptr;
  if (llvm::sys::fs::create_directories(dir, /*IgnoreExisting=*/true, llvm::sys::fs::perms::owner_all)) return nullptr;
  // Its entries run as code: the directory must be this user's, and nobody else's to write.
  llvm::sys::fs::file_status st;
  if (llvm::sys::fs::status(dir, st, /*Follow=*/false) || st.type() != llvm::sys::fs::file_type::directory_file ||
      st.getUser() != ::geteuid() ||
      (st.permissions() & (llvm::sys::fs::perms::group_write | llvm::sys::fs::perms::others_write)) != 0)
    return nullptr;
  std::unique_ptr<CompiledCodeCache> cache(new CompiledCodeCache(dir));
  llvm::CachePruningPolicy policy;
  policy.Interval = std::chrono::hours(1);
  policy.Expiration = std::chrono::hours(30 * 24);
  policy.MaxSizeBytes = kMaxCacheBytes;
  policy.MaxSizeFiles = kMaxCacheFiles;
  llvm::pruneCache(dir, policy);
  return cache;
}

std::string CompiledCodeCache::keyOf(std::string_view irText, std::string_view target) {
  std::string all;
  all.reserve(irText.size() + target.size() + 1);
  all.append(target);
  all.push_back('\n');
  all.append(irText);
  return fmt::format("{:016x}{:016x}", xxh3(bytesOf(all)), xxh64(bytesOf(all)));
}

std::string CompiledCodeCache::pathOf(const std::string &key) const { return dir_ + "/" + kEntryPrefix + key; }

std::unique_ptr<llvm::MemoryBuffer> CompiledCodeCache::find(const std::string &key) const {
  // Only a regular file of a bounded size, not followed if a link: a device or a pipe in an
  // entry's place would be read forever.
  const std::string path = pathOf(key);
  llvm::sys::fs::file_status st;
  if (llvm::sys::fs::status(path, st, /*Follow=*/false) || st.type() != llvm::sys::fs::file_type::regular_file ||
      st.getSize() < kHeaderBytes || st.getSize() > kMaxEntryBytes || key.size() != kKeyBytes)
    return nullptr;
  auto file = llvm::MemoryBuffer::getFileSlice(path, st.getSize(), 0);
  if (!file) return nullptr;
  const llvm::StringRef bytes = (*file)->getBuffer();
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0 ||
      std::memcmp(bytes.data() + sizeof kMagic, key.data(), kKeyBytes) != 0)
    return nullptr;
  const uint64_t size = loadLE64(bytes.data() + sizeof kMagic + kKeyBytes);
  const uint64_t sum = loadLE64(bytes.data() + sizeof kMagic + kKeyBytes + 8);
  if (size != bytes.size() - kHeaderBytes) return nullptr;
  const llvm::StringRef object = bytes.drop_front(kHeaderBytes);
  if (xxh3(bytesOf(std::string_view(object.data(), object.size()))) != sum) return nullptr;
  return llvm::MemoryBuffer::getMemBufferCopy(object, key);
}

void CompiledCodeCache::notifyObjectCompiled(const llvm::Module *module, llvm::MemoryBufferRef object) {
  const std::string key = module->getModuleIdentifier();
  const llvm::StringRef body = object.getBuffer();
  if (key.size() != kKeyBytes) return;
  std::string header(kMagic, sizeof kMagic);
  header += key;
  appendLE64(header, body.size());
  appendLE64(header, xxh3(bytesOf(std::string_view(body.data(), body.size()))));
  int fd = -1;
  llvm::SmallString<256> temporary;
  if (llvm::sys::fs::createUniqueFile(dir_ + "/" + kEntryPrefix + "tmp-%%%%%%%%%%%%", fd, temporary,
                                      llvm::sys::fs::OF_None, 0600))
    return;
  bool written;
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    out << header << body;
    out.close();
    written = !out.has_error();
    out.clear_error();
  }
  if (!written || llvm::sys::fs::rename(temporary, pathOf(key))) llvm::sys::fs::remove(temporary);
}

} // namespace brevis::jit
