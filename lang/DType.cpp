#include "DType.h"

#include <array>

namespace brevis {

namespace {
constexpr std::array kDTypes = {
#define BREVIS_DTYPE(E, st, bdsl, bits, s, e, m) DTypeInfo{DType::E, st, bdsl, bits, s, e, m},
#include "DTypes.def"
};
} // namespace

const DTypeInfo &dtypeInfo(DType d) { return kDTypes[static_cast<size_t>(d)]; }

std::optional<DType> dtypeFromSafetensorsName(std::string_view name) {
  for (const auto &info : kDTypes)
    if (info.safetensorsName == name) return info.dtype;
  return std::nullopt;
}

std::optional<DType> dtypeFromBdslName(std::string_view name) {
  for (const auto &info : kDTypes)
    if (info.bdslName == name) return info.dtype;
  return std::nullopt;
}

} // namespace brevis
