#pragma once
// UTF-8 validity, for text that comes from files: safetensors headers, program text.
#include "runtime/common/Bytes.h"

namespace brevis {

/// The offset of the first byte of `b` that is not well-formed UTF-8 (lead and continuation
/// bytes; overlongs are not refused), or b.size() if there is none.
inline size_t firstNonUtf8(ByteSpan b) {
  for (size_t i = 0; i < b.size();) {
    uint8_t c = b[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || n > b.size() - i) return i;
    for (size_t k = 1; k < n; ++k)
      if ((b[i + k] & 0xc0) != 0x80) return i;
    i += n;
  }
  return b.size();
}

/// Whether `b` is well-formed UTF-8.
inline bool isUtf8(ByteSpan b) { return firstNonUtf8(b) == b.size(); }

} // namespace brevis
