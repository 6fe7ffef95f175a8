#pragma once
#include <cstdint>

namespace brevis {

/// A position in program text, 1-based. line 0 means "no location" (built, not parsed).
struct SourceLoc {
  uint32_t line = 0;
  uint32_t column = 0;
  bool valid() const { return line != 0; }
};

} // namespace brevis
