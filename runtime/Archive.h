#pragma once
// The `.brv` archive, version 1 (docs/format/archive.md): the checkpoint's program text
// (zstd-compressed) and its literal payload in one file, with the source file's size and
// xxh64 and a trailing xxh64 of the archive itself.
#include "lang/Result.h"
#include "runtime/Bytes.h"

#include <string>

namespace brevis {

inline constexpr uint32_t kArchiveVersion = 1;
inline constexpr size_t kArchiveHeaderSize = 56;
/// Program text larger than this is refused on reading: parsing costs far more memory than the
/// text (see kMaxTokens in frontend/Parser.h), so a small archive must not be able to declare
/// more. A program of 200,000 tensors in the synthesizer's usual form is about 50 MB.
inline constexpr uint64_t kMaxProgramTextSize = uint64_t{64} << 20;

struct ArchiveContents {
  std::string programText;
  Bytes payload;
  uint64_t sourceSize = 0;
  uint64_t sourceXxh64 = 0;
};

Bytes writeArchive(const ArchiveContents &contents);

/// Parses and verifies an archive; `name` is used in error messages.
Result<ArchiveContents> readArchive(ByteSpan archive, const std::string &name);

/// True if the bytes start with the archive magic.
bool looksLikeArchive(ByteSpan bytes);
/// Whether the file at `path` starts with the archive magic (reads only that much).
Result<bool> fileIsArchive(const std::string &path);

} // namespace brevis
