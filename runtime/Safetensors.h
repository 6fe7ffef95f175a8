#pragma once
// Reading the layout of a safetensors file: an 8-byte little-endian header length n, n bytes
// of JSON (name -> dtype, shape, data_offsets relative to the end of the header; optional
// "__metadata__"), then the tensor data. Only the layout is extracted; the header bytes are
// kept verbatim by the caller.
#include "lang/DType.h"
#include "lang/Result.h"
#include "runtime/Bytes.h"

#include <string>
#include <vector>

namespace brevis {

struct TensorEntry {
  std::string name;
  DType dtype;
  std::vector<uint64_t> shape;
  uint64_t begin = 0, end = 0; ///< absolute file offsets of the tensor's bytes
};

struct SafetensorsLayout {
  uint64_t headerSize = 0;          ///< 8 + n: where the data section starts
  std::vector<TensorEntry> tensors; ///< sorted by file offset; non-overlapping
};

/// Parses and validates the layout; any inconsistency is an error naming what is wrong.
Result<SafetensorsLayout> parseSafetensors(ByteSpan file);

} // namespace brevis
