// The kernel's view of this process's memory mappings, for tests of how memory is mapped.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace brevis::testing {

/// The VmFlags line of the mapping of this process that contains `address`, from /proc/self/smaps
/// (empty if none does); advice for huge pages shows as the flag ` hg`.
inline std::string flagsOfMappingAt(const void *address) {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-' && line.find(' ') != std::string::npos &&
        line.find(':') > line.find(' ')) {
      inside = begin <= at && at < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return {};
}

} // namespace brevis::testing
