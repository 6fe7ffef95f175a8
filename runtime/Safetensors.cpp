#include "runtime/Safetensors.h"

#include "lang/Ast.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>

namespace brevis {

Result<SafetensorsLayout> parseSafetensors(ByteSpan file) {
  if (file.size() < 8) return Error{"file is shorter than a safetensors header length"};
  uint64_t n;
  std::memcpy(&n, file.data(), 8);
  if (n > file.size() - 8) return Error{fmt::format("header length {} exceeds the file size {}", n, file.size())};
  const char *text = reinterpret_cast<const char *>(file.data() + 8);
  auto json = nlohmann::json::parse(text, text + n, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) return Error{"header is not a JSON object"};

  SafetensorsLayout layout;
  layout.headerSize = 8 + n;
  const uint64_t dataSize = file.size() - layout.headerSize;
  for (const auto &[name, entry] : json.items()) {
    if (name == "__metadata__") continue;
    if (!entry.is_object()) return Error{fmt::format("tensor {} is not described by an object", name)};
    auto dtypeField = entry.find("dtype");
    auto shapeField = entry.find("shape");
    auto offsetsField = entry.find("data_offsets");
    if (dtypeField == entry.end() || !dtypeField->is_string() || shapeField == entry.end() ||
        !shapeField->is_array() || offsetsField == entry.end() || !offsetsField->is_array() ||
        offsetsField->size() != 2)
      return Error{fmt::format("tensor {} lacks dtype, shape or data_offsets", name)};
    auto dtype = dtypeFromSafetensorsName(dtypeField->get<std::string>());
    if (!dtype) return Error{fmt::format("tensor {} has unknown dtype {}", name, dtypeField->get<std::string>())};
    TensorEntry t{name, *dtype, {}, 0, 0};
    for (const auto &d : *shapeField) {
      if (!d.is_number_unsigned()) return Error{fmt::format("tensor {} has a shape that is not unsigned integers", name)};
      t.shape.push_back(d.get<uint64_t>());
    }
    for (const auto &o : *offsetsField)
      if (!o.is_number_unsigned()) return Error{fmt::format("tensor {} has non-integer data_offsets", name)};
    uint64_t b = (*offsetsField)[0].get<uint64_t>(), e = (*offsetsField)[1].get<uint64_t>();
    if (b > e || e > dataSize) return Error{fmt::format("tensor {} has data_offsets outside the data", name)};
    auto count = elementCount(t.shape);
    uint64_t bytes;
    if (!count || __builtin_mul_overflow(*count, dtypeInfo(*dtype).wordBits / 8, &bytes) || bytes != e - b)
      return Error{fmt::format("tensor {} has {} bytes, which does not match its shape and dtype", name, e - b)};
    t.begin = layout.headerSize + b;
    t.end = layout.headerSize + e;
    layout.tensors.push_back(std::move(t));
  }
  std::stable_sort(layout.tensors.begin(), layout.tensors.end(),
                   [](const TensorEntry &a, const TensorEntry &b) { return a.begin < b.begin; });
  for (size_t i = 1; i < layout.tensors.size(); ++i)
    if (layout.tensors[i].begin < layout.tensors[i - 1].end)
      return Error{fmt::format("tensors {} and {} overlap", layout.tensors[i - 1].name, layout.tensors[i].name)};
  return layout;
}

} // namespace brevis
