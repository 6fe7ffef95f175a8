#include "runtime/containers/Archive.h"

#include "runtime/containers/Checksum.h"

#include <fmt/format.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <set>

namespace brevis {

namespace {

constexpr uint8_t kMagic[8] = {0x89, 'B', 'R', 'V', '\r', '\n', 0x1a, '\n'};
constexpr uint32_t kFlagDirectory = 1;
constexpr size_t kPayloadPadding = 16; // = kPayloadSlack: zeros after the payload section
constexpr size_t kTrailerSize = 8;

/// The zstd level of the program section (Archive.h, kProgramZstdLevel), lower for large texts:
/// the 36 MB of text of a checkpoint of 200,000 tensors took 52 s (most of its compression) at
/// level 19, 6.5 s at 16 and 0.7 s at 9 (2.8 MB, not 1.8).
int programZstdLevel(size_t textSize) {
  return textSize <= kProgramZstdLevelMaxText ? kProgramZstdLevel : kProgramZstdLargeLevel;
}

void putU16(Bytes &out, uint16_t v) {
  for (int i = 0; i < 2; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void putU32(Bytes &out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void putU64(Bytes &out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
uint16_t getU16(const uint8_t *p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
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

/// Bounds-checked reading of the member table.
class TableReader {
public:
  explicit TableReader(ByteSpan b) : b_(b) {}
  bool u16(uint16_t &v) { return take(2) && (v = getU16(b_.data() + at_ - 2), true); }
  bool u64(uint64_t &v) { return take(8) && (v = getU64(b_.data() + at_ - 8), true); }
  bool bytes(size_t n, std::string &s) {
    if (!take(n)) return false;
    s.assign(reinterpret_cast<const char *>(b_.data() + at_ - n), n);
    return true;
  }
  bool atEnd() const { return at_ == b_.size(); }

private:
  bool take(size_t n) {
    if (n > b_.size() - at_) return false;
    at_ += n;
    return true;
  }
  ByteSpan b_;
  size_t at_ = 0;
};

} // namespace

bool isValidMemberPath(const std::string &path) {
  if (path.empty() || path.size() > kMaxMemberPath || path.front() == '/') return false;
  if (path.find('\0') != std::string::npos) return false;
  size_t start = 0;
  while (true) {
    size_t end = path.find('/', start);
    std::string_view part(path.data() + start, (end == std::string::npos ? path.size() : end) - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (end == std::string::npos) return true;
    start = end + 1;
  }
}

ByteSpan archiveMagic() { return ByteSpan(kMagic, sizeof kMagic); }

bool looksLikeArchive(ByteSpan bytes) {
  return bytes.size() >= sizeof kMagic && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0;
}

Result<void> ArchiveWriter::put(ByteSpan bytes) {
  while (!bytes.empty()) {
    const size_t room = kArchiveWriteBlock - at_ % kArchiveWriteBlock;
    if (block_.empty() && room == kArchiveWriteBlock && bytes.size() >= kArchiveWriteBlock) {
      // Whole blocks straight from the caller's bytes, without a copy.
      const size_t whole = bytes.size() / kArchiveWriteBlock * kArchiveWriteBlock;
      BREVIS_TRY(out_.writeAt(at_, bytes.data(), whole));
      at_ += whole;
      bytes = bytes.subspan(whole);
      continue;
    }
    if (block_.capacity() < kArchiveWriteBlock) block_.reserve(kArchiveWriteBlock);
    const size_t n = std::min(room, bytes.size());
    block_.insert(block_.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    at_ += n;
    bytes = bytes.subspan(n);
    if (n == room) BREVIS_TRY(flush());
  }
  return {};
}

Result<void> ArchiveWriter::flush() {
  if (block_.empty()) return {};
  BREVIS_TRY(out_.writeAt(at_ - block_.size(), block_.data(), block_.size()));
  block_.clear();
  return {};
}

Result<ByteRange> ArchiveWriter::appendPayload(ByteSpan payload) {
  if (!started_) {
    payloadHash_ = std::make_unique<Xxh3Stream>();
    // The header is written last, over zeros that make the first block whole.
    static constexpr uint8_t kZeros[kArchiveHeaderSize] = {};
    BREVIS_TRY(put(ByteSpan(kZeros, sizeof kZeros)));
    started_ = true;
  }
  payloadHash_->update(payload.data(), payload.size());
  BREVIS_TRY(put(payload));
  ByteRange r{payloadSize_, payload.size()};
  payloadSize_ += payload.size();
  return r;
}

Result<Payload> ArchiveWriter::readPayloadBack(ByteRange range) {
  if (!started_ || range.offset > payloadSize_ || range.size > payloadSize_ - range.offset)
    return Error{"internal error: reading back a payload range that was not written"};
  // Zeros after the bytes written so far, as the end of the payload section has: later parts,
  // the padding and the metadata write over them.
  static constexpr uint8_t kZeros[kPayloadSlack] = {};
  BREVIS_TRY(flush());
  BREVIS_TRY(out_.writeAt(at_, kZeros, kPayloadSlack));
  auto written = out_.readBack(kArchiveHeaderSize + range.offset, range.size + kPayloadSlack);
  if (!written) return written.error();
  return Payload::view(written->bytes.first(range.size), std::move(written->owner));
}

Bytes packProgramText(std::string_view texts) {
  Bytes program(ZSTD_compressBound(texts.size()));
  const size_t packed =
      ZSTD_compress(program.data(), program.size(), texts.data(), texts.size(), programZstdLevel(texts.size()));
  if (ZSTD_isError(packed)) __builtin_trap(); // only fails on a too-small buffer, which compressBound rules out
  program.resize(packed);
  return program;
}

Result<uint64_t> ArchiveWriter::finish(const std::vector<ArchiveMember> &members, bool directory,
                                       std::optional<Bytes> packedProgram) {
  if (!started_) BREVIS_TRY(appendPayload({}));
  std::string texts;
  Bytes table;
  uint64_t entries = 0;
  for (const ArchiveMember &m : members) {
    putU16(table, static_cast<uint16_t>(m.path.size()));
    table.insert(table.end(), m.path.begin(), m.path.end());
    putU64(table, m.sourceSize);
    putU64(table, m.sourceXxh64);
    putU64(table, texts.size());
    putU64(table, m.programText.size());
    putU64(table, entries);
    putU64(table, m.digests.size() + m.pieceHashes.size());
    putU64(table, m.payloadRange.offset);
    putU64(table, m.payloadRange.size);
    texts += m.programText;
    entries += m.digests.size() + m.pieceHashes.size();
  }
  Bytes program = packedProgram ? std::move(*packedProgram) : packProgramText(texts);

  Bytes index;
  for (const ArchiveMember &m : members) {
    for (uint64_t digest : m.digests) putU64(index, digest);
    for (uint64_t hash : m.pieceHashes) putU64(index, hash);
  }

  Bytes header(kMagic, kMagic + sizeof kMagic);
  putU32(header, kArchiveVersion);
  putU32(header, directory ? kFlagDirectory : 0);
  putU64(header, members.size());
  putU64(header, table.size());
  putU64(header, texts.size());
  putU64(header, program.size());
  putU64(header, entries);
  putU64(header, payloadSize_);
  Xxh3Stream meta;
  for (const Bytes *part : {&header, &table, &program, &index}) meta.update(part->data(), part->size());
  const uint64_t metaDigest = meta.digest();
  putU64(header, metaDigest);

  const uint8_t zeros[kPayloadPadding] = {};
  BREVIS_TRY(put(ByteSpan(zeros, sizeof zeros)));
  for (const Bytes *part : {&table, &program, &index}) BREVIS_TRY(put(*part));
  Bytes trailer;
  putU64(trailer, metaDigest);
  putU64(trailer, payloadHash_->digest());
  uint64_t whole = xxh3(trailer);
  trailer.clear();
  putU64(trailer, whole);
  BREVIS_TRY(put(trailer));
  BREVIS_TRY(flush());
  BREVIS_TRY(out_.writeAt(0, header.data(), header.size()));
  return at_;
}

Result<void> checkArchiveChecksum(ByteSpan a, const std::string &name) {
  // Called on an archive readArchive accepted: the header's sizes add up.
  const uint8_t *payload = a.data() + kArchiveHeaderSize;
  const uint64_t payloadSize = getU64(a.data() + 56);
  Bytes pair;
  for (uint64_t v : {getU64(a.data() + 64), xxh3(ByteSpan(payload, payloadSize))})
    for (int b = 0; b < 8; ++b) pair.push_back(static_cast<uint8_t>(v >> (8 * b)));
  if (xxh3(pair) != getU64(a.data() + a.size() - kTrailerSize))
    return Error{fmt::format("{} is corrupt: archive checksum mismatch", name)};
  return {};
}

Result<Archive> readArchive(std::shared_ptr<const MappedFile> file, const std::string &name,
                            ArchiveReadOptions options) {
  ByteSpan a = file->bytes();
  auto corrupt = [&](const std::string &what) { return Error{fmt::format("{} is corrupt: {}", name, what)}; };
  if (a.empty()) return Error{fmt::format("{} is empty, not a brevis archive", name)};
  if (!looksLikeArchive(a)) return Error{fmt::format("{} is not a brevis archive (bad magic)", name)};
  if (a.size() < kArchiveHeaderSize + kPayloadPadding + kTrailerSize)
    return Error{fmt::format("{} is truncated: {} bytes", name, a.size())};
  uint32_t version = getU32(a.data() + 8);
  if (version < kOldestReadableArchiveVersion || version > kArchiveVersion)
    return Error{fmt::format("{} has archive format version {}; this brevisc reads versions {} to {}", name, version,
                             kOldestReadableArchiveVersion, kArchiveVersion)};
  uint32_t flags = getU32(a.data() + 12);
  if (flags & ~kFlagDirectory)
    return Error{fmt::format("{} uses archive features this brevisc does not know (flags {:#x})", name, flags)};
  Archive out;
  out.directory = flags & kFlagDirectory;
  out.fileSize = a.size();
  const uint64_t memberCount = getU64(a.data() + 16), tableSize = getU64(a.data() + 24);
  const uint64_t textSize = getU64(a.data() + 32), programSize = getU64(a.data() + 40);
  const uint64_t entryCount = getU64(a.data() + 48), payloadSize = getU64(a.data() + 56);

  // The size equation, without overflow: subtract each section from what is left.
  uint64_t left = a.size() - kArchiveHeaderSize - kPayloadPadding - kTrailerSize;
  bool fits = tableSize <= left && (left -= tableSize, programSize <= left) && (left -= programSize, true) &&
              entryCount <= left / kArchiveIndexEntrySize && (left -= entryCount * kArchiveIndexEntrySize, true) &&
              payloadSize == left;
  if (!fits)
    return Error{fmt::format("{} is truncated or corrupt: its sections do not add up to its size of {} bytes", name,
                             a.size())};
  const uint8_t *payload = a.data() + kArchiveHeaderSize;
  const uint8_t *table = payload + payloadSize + kPayloadPadding;
  const uint8_t *program = table + tableSize;
  const uint8_t *index = program + programSize;
  const uint64_t metaDigest = getU64(a.data() + 64);
  {
    Xxh3Stream meta;
    meta.update(a.data(), 64);
    meta.update(table, tableSize + programSize + entryCount * kArchiveIndexEntrySize);
    if (meta.digest() != metaDigest) return corrupt("the checksum of its header and index does not match");
  }
  if (options.verifyWholeFile) BREVIS_TRY(checkArchiveChecksum(a, name));
  for (size_t i = 0; i < kPayloadPadding; ++i)
    if (payload[payloadSize + i] != 0) return corrupt("the padding after the payload is not zero");
  if (textSize > kMaxProgramTextSize)
    return Error{fmt::format("{} declares programs of {} bytes, more than the limit of {}", name, textSize,
                             kMaxProgramTextSize)};
  if (tableSize > kMaxMemberTableSize) return corrupt("its member table is too large");
  if (memberCount == 0) return corrupt("it has no members");
  if (!out.directory && memberCount != 1) return corrupt("a single-file archive with several members");

  unsigned long long frameSize = ZSTD_getFrameContentSize(program, programSize);
  if (frameSize != textSize) return corrupt("the program section is damaged");
  std::string texts(textSize, '\0');
  size_t got = ZSTD_decompress(texts.data(), textSize, program, programSize);
  if (ZSTD_isError(got) || got != textSize) return corrupt("the program section does not decompress");

  TableReader t(ByteSpan(table, tableSize));
  auto payloadOwner = std::shared_ptr<const void>(file, file.get());
  uint64_t textAt = 0, entryAt = 0, payloadAt = 0;
  std::set<std::string> paths;
  for (uint64_t i = 0; i < memberCount; ++i) {
    if (t.atEnd()) return corrupt("its member table is shorter than its member count");
    ArchiveMember m;
    uint16_t pathSize;
    uint64_t textOffset, textLength, firstEntry, entries, payloadOffset, payloadLength;
    if (!t.u16(pathSize) || !t.bytes(pathSize, m.path) || !t.u64(m.sourceSize) || !t.u64(m.sourceXxh64) ||
        !t.u64(textOffset) || !t.u64(textLength) || !t.u64(firstEntry) || !t.u64(entries) || !t.u64(payloadOffset) ||
        !t.u64(payloadLength))
      return corrupt("its member table is cut short");
    if (!isValidMemberPath(m.path)) return corrupt(fmt::format("member {} has an unusable path", i + 1));
    if (!paths.insert(m.path).second) return corrupt(fmt::format("member {} appears twice", m.path));
    if (textOffset != textAt || textLength > textSize - textAt || firstEntry != entryAt ||
        entries > entryCount - entryAt || payloadOffset != payloadAt || payloadLength > payloadSize - payloadAt)
      return corrupt(fmt::format("member {} has sections that do not follow the previous member's", m.path));
    m.programText = texts.substr(textOffset, textLength);
    for (uint64_t e = 0; e < entries; ++e) {
      m.digests.push_back(getU64(index + (firstEntry + e) * kArchiveIndexEntrySize));
    }
    m.indexHasPieceHashes = version >= kPieceHashesArchiveVersion;
    m.payloadRange = ByteRange{payloadOffset, payloadLength};
    m.payload = Payload::view(ByteSpan(payload + payloadOffset, payloadLength), payloadOwner);
    textAt += textLength;
    entryAt += entries;
    payloadAt += payloadLength;
    out.members.push_back(std::move(m));
  }
  if (!t.atEnd() || textAt != textSize || entryAt != entryCount || payloadAt != payloadSize)
    return corrupt("its members do not cover its sections exactly");
  // "a" and "a/b" cannot both be files.
  for (auto it = paths.begin(); it != paths.end(); ++it) {
    auto next = std::next(it);
    if (next != paths.end() && next->size() > it->size() && next->compare(0, it->size(), *it) == 0 &&
        (*next)[it->size()] == '/')
      return corrupt(fmt::format("member {} is both a file and a directory", *it));
  }
  return out;
}

Result<void> checkMemberProgram(const Checkpoint &c, ArchiveMember &m, const std::string &name) {
  auto corrupt = [&](const std::string &what) {
    return Error{fmt::format("{} is corrupt: member {}: {}", name, m.path, what)};
  };
  if (c.source.size != m.sourceSize || c.source.xxh64 != m.sourceXxh64)
    return corrupt("its program and the member table describe different source files");
  if (c.payloadSize != m.payload.size()) return corrupt("its program declares a different payload size");
  for (const Region &r : c.regions)
    if (r.digest) return corrupt("its program carries region digests, which an archive keeps in its index");
  uint64_t pieces = 0;
  if (m.indexHasPieceHashes)
    for (const Region &r : c.regions) pieces += indexedPieces(r.bytes.size);
  if (m.digests.size() < c.regions.size() || m.digests.size() - c.regions.size() != pieces)
    return corrupt(fmt::format("its index has {} checksums for {} regions{}", m.digests.size(), c.regions.size(),
                               pieces ? fmt::format(" and {} pieces of them", pieces) : ""));
  m.pieceHashes.assign(m.digests.begin() + static_cast<std::ptrdiff_t>(c.regions.size()), m.digests.end());
  m.digests.resize(c.regions.size());
  size_t at = 0;
  for (size_t i = 0; i < c.regions.size() && m.indexHasPieceHashes; ++i) {
    const uint64_t n = indexedPieces(c.regions[i].bytes.size);
    if (n && combinePieceHashes(std::span<const uint64_t>(m.pieceHashes).subspan(at, n)) != m.digests[i])
      return corrupt(fmt::format("its index's piece checksums of region {} do not make its checksum", i + 1));
    at += n;
  }
  return {};
}

} // namespace brevis
