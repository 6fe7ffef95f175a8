#include "runtime/Archive.h"

#include "runtime/Checksum.h"

#include <fmt/format.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace brevis {

namespace {

constexpr uint8_t kMagic[8] = {0x89, 'B', 'R', 'V', '\r', '\n', 0x1a, '\n'};
constexpr int kProgramZstdLevel = 19; // program text is small; spend time to make it smaller

void putU32(Bytes &out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void putU64(Bytes &out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
uint32_t getU32(const uint8_t *p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t getU64(const uint8_t *p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

} // namespace

bool looksLikeArchive(ByteSpan bytes) {
  return bytes.size() >= sizeof kMagic && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0;
}

Result<bool> fileIsArchive(const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) return Error{fmt::format("cannot open {}: {}", path, std::strerror(errno))};
  uint8_t head[sizeof kMagic];
  size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  return looksLikeArchive(ByteSpan(head, n));
}

Bytes writeArchive(const ArchiveContents &c) {
  Bytes program(ZSTD_compressBound(c.programText.size()));
  size_t packed = ZSTD_compress(program.data(), program.size(), c.programText.data(), c.programText.size(),
                                kProgramZstdLevel);
  if (ZSTD_isError(packed)) __builtin_trap(); // only fails on a too-small buffer, which compressBound rules out
  program.resize(packed);

  Bytes out(kMagic, kMagic + sizeof kMagic);
  putU32(out, kArchiveVersion);
  putU32(out, 0); // flags, reserved
  putU64(out, c.sourceSize);
  putU64(out, c.sourceXxh64);
  putU64(out, c.programText.size());
  putU64(out, program.size());
  putU64(out, c.payload.size());
  out.insert(out.end(), program.begin(), program.end());
  out.insert(out.end(), c.payload.begin(), c.payload.end());
  putU64(out, xxh64(out));
  return out;
}

Result<ArchiveContents> readArchive(ByteSpan a, const std::string &name) {
  if (!looksLikeArchive(a)) return Error{fmt::format("{} is not a brevis archive (bad magic)", name)};
  if (a.size() < kArchiveHeaderSize + 8) return Error{fmt::format("{} is truncated: {} bytes", name, a.size())};
  uint32_t version = getU32(a.data() + 8);
  if (version != kArchiveVersion)
    return Error{fmt::format("{} has archive format version {}; this brevisc reads version {}", name, version,
                             kArchiveVersion)};
  if (uint32_t flags = getU32(a.data() + 12); flags != 0)
    return Error{fmt::format("{} uses archive features this brevisc does not know (flags {:#x})", name, flags)};
  ArchiveContents c;
  c.sourceSize = getU64(a.data() + 16);
  c.sourceXxh64 = getU64(a.data() + 24);
  uint64_t textSize = getU64(a.data() + 32);
  uint64_t programSize = getU64(a.data() + 40);
  uint64_t payloadSize = getU64(a.data() + 48);
  uint64_t body = a.size() - kArchiveHeaderSize - 8;
  if (programSize > body || payloadSize != body - programSize)
    return Error{fmt::format("{} is truncated or corrupt: its header declares {} + {} section bytes, but the file "
                             "holds {}",
                             name, programSize, payloadSize, body)};
  uint64_t stored = getU64(a.data() + a.size() - 8);
  if (xxh64(a.first(a.size() - 8)) != stored) return Error{fmt::format("{} is corrupt: archive checksum mismatch", name)};
  if (textSize > kMaxProgramTextSize)
    return Error{fmt::format("{} declares a program of {} bytes, more than the limit of {}", name, textSize,
                             kMaxProgramTextSize)};

  const uint8_t *program = a.data() + kArchiveHeaderSize;
  unsigned long long frameSize = ZSTD_getFrameContentSize(program, programSize);
  if (frameSize != textSize) return Error{fmt::format("{} is corrupt: the program section is damaged", name)};
  c.programText.resize(textSize);
  size_t got = ZSTD_decompress(c.programText.data(), textSize, program, programSize);
  if (ZSTD_isError(got) || got != textSize)
    return Error{fmt::format("{} is corrupt: the program section does not decompress", name)};
  const uint8_t *payload = program + programSize;
  c.payload.assign(payload, payload + payloadSize);
  return c;
}

} // namespace brevis
