#pragma once
// Tensor element types as safetensors names them, and how each maps onto DSL words.
#include <optional>
#include <string_view>

namespace brevis {

enum class DType {
#define BREVIS_DTYPE(E, st, bdsl, bits, s, e, m) E,
#include "DTypes.def"
};

struct DTypeInfo {
  DType dtype;
  std::string_view safetensorsName; ///< "BF16"
  std::string_view bdslName;        ///< "bf16"
  unsigned wordBits;                ///< width of the stream a tensor of this dtype is read as
  unsigned signBits, exponentBits, mantissaBits; ///< IEEE-style fields; all 0 for integers
  bool isFloat() const { return exponentBits != 0; }
};

const DTypeInfo &dtypeInfo(DType);
std::optional<DType> dtypeFromSafetensorsName(std::string_view);
std::optional<DType> dtypeFromBdslName(std::string_view);

} // namespace brevis
