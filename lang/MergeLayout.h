#pragma once
// The bit layout of `merge`, defined once for every executor (interpreter, fused merge kernel,
// JIT): the fields are packed most significant first, so the last field occupies the low bits
// and each field sits directly above the ones after it. A merged word is built either field by
// field in order, shifting the word so far up by the next field's width (mergeShiftIn), or all
// at once from each field's shift (mergeFieldShifts); both give the same word.
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace brevis {

/// The word so far with the next field (of `width` bits, < the word type's bits) appended below it.
template <typename T> constexpr T mergeShiftIn(T word, T field, unsigned width) {
  static_assert(std::is_unsigned_v<T>);
  return static_cast<T>((word << width) | field);
}

/// The bit at which each field starts in the merged word, for fields of these widths (most
/// significant first): field k occupies bits [shift[k], shift[k] + width[k]); the last is at 0.
inline std::vector<unsigned> mergeFieldShifts(std::span<const unsigned> widths) {
  std::vector<unsigned> shifts(widths.size());
  unsigned below = 0;
  for (size_t k = widths.size(); k-- > 0;) {
    shifts[k] = below;
    below += widths[k];
  }
  return shifts;
}

} // namespace brevis
