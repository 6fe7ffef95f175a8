// The kernel's view of this process's memory mappings, for tests of how memory is mapped.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace brevis::test_support {

/// The line of /proc/self/smaps that starts with `field` (as "VmFlags:" or "FilePmdMapped:") in the
/// entry of the mapping of this process that contains `address`; empty if there is none.
inline std::string mappingLineAt(const void *address, const std::string &field) {
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
    if (inside && line.rfind(field, 0) == 0) return line;
  }
  return {};
}

/// The VmFlags line of the mapping that contains `address`; advice for huge pages shows as ` hg`.
inline std::string flagsOfMappingAt(const void *address) { return mappingLineAt(address, "VmFlags:"); }

/// Kilobytes of the mapping that contains `address` mapped as huge pages of a file (its
/// FilePmdMapped line), or 0.
inline unsigned long filePmdMappedKbAt(const void *address) {
  const std::string line = mappingLineAt(address, "FilePmdMapped:");
  return line.empty() ? 0 : std::stoul(line.substr(line.find(':') + 1));
}

} // namespace brevis::test_support
