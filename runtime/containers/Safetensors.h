#pragma once
// Reading the layout of a safetensors file: an 8-byte little-endian header length n, n bytes
// of JSON (name -> dtype, shape, data_offsets relative to the end of the header; optional
// "__metadata__"), then the tensor data. Only the layout is extracted; the header bytes are
// kept verbatim by the caller.
//
// A file is valid as the format itself defines it (the reference reader's rules): n at most
// 100,000,000; the header UTF-8 JSON starting with '{' (trailing spaces allowed, no 8-byte
// alignment required); every name once; "__metadata__" a map of strings to strings; every
// tensor a known dtype, a shape of unsigned integers and [begin, end] offsets whose size is
// its shape's; the tensors, ordered by offset, tile the data exactly: no gap, no overlap,
// nothing after the last. Empty tensors ([a, a]) overlap nothing. Tensors of dtypes the
// format knows but Brevis has no words for (F4, F6_*, F8_E8M0, C64) are valid and listed
// apart; their bytes are kept as they are.
#include "lang/DType.h"
#include "lang/Result.h"
#include "runtime/common/Bytes.h"

#include <string>
#include <vector>

namespace brevis {

struct TensorEntry {
  std::string name;
  DType dtype;
  std::vector<uint64_t> shape;
  uint64_t begin = 0, end = 0; ///< absolute file offsets of the tensor's bytes
  std::string opaqueDtype;     ///< a dtype without DSL words (then `dtype` is meaningless), as named
};

struct SafetensorsLayout {
  uint64_t headerSize = 0;          ///< 8 + n: where the data section starts
  std::vector<TensorEntry> tensors; ///< sorted by file offset; non-overlapping
  /// Tensors of dtypes without DSL words (their dtype field is meaningless), sorted likewise.
  std::vector<TensorEntry> opaque;
};

/// The format's limit on the JSON header's size.
inline constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

/// Parses and validates the layout; any inconsistency is an error naming what is wrong.
Result<SafetensorsLayout> parseSafetensors(ByteSpan file);
/// The same from the file's first bytes (at least its length prefix and JSON header) and its
/// size: a header rebuilt alone, the tensors' bytes not at hand.
Result<SafetensorsLayout> parseSafetensorsHeader(ByteSpan prefix, uint64_t fileSize);

} // namespace brevis
