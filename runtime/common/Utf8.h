#pragma once
// UTF-8 validity, for text that comes from files: safetensors headers, program text.
#include "runtime/common/Bytes.h"

namespace brevis {

/// Whether `b` is well-formed UTF-8 (lead and continuation bytes; overlongs are not refused).
inline bool isUtf8(ByteSpan b) {
  for (size_t i = 0; i < b.size();) {
    uint8_t c = b[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || n > b.size() - i) return false;
    for (size_t k = 1; k < n; ++k)
      if ((b[i + k] & 0xc0) != 0x80) return false;
    i += n;
  }
  return true;
}

} // namespace brevis
