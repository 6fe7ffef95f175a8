#include "runtime/containers/Safetensors.h"

#include "lang/Ast.h"
#include "lang/Printer.h"
#include "runtime/common/Utf8.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_set>

namespace brevis {

namespace {

/// Element widths in bits of the dtypes the format defines but the DSL has no words for.
std::optional<unsigned> opaqueDtypeBits(const std::string &name) {
  if (name == "F4") return 4;
  if (name == "F6_E2M3" || name == "F6_E3M2") return 6;
  if (name == "F8_E8M0") return 8;
  if (name == "C64") return 64;
  return std::nullopt;
}

/// SAX events of a JSON text: the first name repeated in its top-level object, and where the
/// text stops being JSON.
struct TopLevelKeys {
  using json = nlohmann::json;
  int depth = 0;
  std::unordered_set<std::string> seen;
  std::string repeated;
  std::optional<size_t> errorAt; ///< the byte the parser stopped at
  std::string error;             ///< what it expected there
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t) { return true; }
  bool number_unsigned(json::number_unsigned_t) { return true; }
  bool number_float(json::number_float_t, const json::string_t &) { return true; }
  bool string(json::string_t &) { return true; }
  bool binary(json::binary_t &) { return true; }
  bool start_object(std::size_t) { return ++depth, true; }
  bool end_object() { return --depth, true; }
  bool start_array(std::size_t) { return ++depth, true; }
  bool end_array() { return --depth, true; }
  bool key(json::string_t &k) {
    if (depth == 1 && !seen.insert(k).second && repeated.empty()) repeated = k;
    return true;
  }
  bool parse_error(std::size_t position, const std::string &, const nlohmann::detail::exception &e) {
    errorAt = position;
    // nlohmann's message: "[json.exception.parse_error.101] parse error at line 1, column 5:
    // syntax error while parsing ... - invalid literal; last read: '…'"; the part after the
    // location says what went wrong.
    error = e.what();
    if (size_t colon = error.find(": "); colon != std::string::npos) error = error.substr(colon + 2);
    return false;
  }
};

} // namespace

Result<SafetensorsLayout> parseSafetensors(ByteSpan file) { return parseSafetensorsHeader(file, file.size()); }

Result<SafetensorsLayout> parseSafetensorsHeader(ByteSpan file, uint64_t fileSize) {
  if (fileSize < 8 || file.size() < 8) return Error{"file is shorter than a safetensors header length"};
  uint64_t n;
  std::memcpy(&n, file.data(), 8);
  if (n > kMaxSafetensorsHeader)
    return Error{fmt::format("header length {} is more than the format allows ({})", n, kMaxSafetensorsHeader)};
  if (n > fileSize - 8) return Error{fmt::format("header length {} exceeds the file size {}", n, fileSize)};
  if (n > file.size() - 8) return Error{fmt::format("header length {} exceeds the {} bytes given", n, file.size())};
  const char *text = reinterpret_cast<const char *>(file.data() + 8);
  if (n == 0 || text[0] != '{') return Error{"header does not start with '{'"};
  if (!isUtf8(ByteSpan(file.data() + 8, n))) return Error{"header is not UTF-8"};
  auto json = nlohmann::json::parse(text, text + n, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    TopLevelKeys where;
    nlohmann::json::sax_parse(text, text + n, &where);
    if (where.errorAt) // 1-based position in the JSON text; the file's byte is 8 past it, 0-based
      return Error{fmt::format("header is not JSON at byte {}: {}", 8 + *where.errorAt - 1, where.error)};
    return Error{"header is not a JSON object"};
  }
  if (!json.is_object()) return Error{"header is not a JSON object"};
  // A JSON object keeps only the last of repeated names; a second pass over the events finds
  // them. (A parse callback would do it in one pass, but nlohmann's callback parser scans each
  // finished object's parent again: quadratic in the number of tensors.)
  TopLevelKeys keys;
  nlohmann::json::sax_parse(text, text + n, &keys);
  if (!keys.repeated.empty()) return Error{fmt::format("header names {} twice", quoteString(keys.repeated))};

  SafetensorsLayout layout;
  layout.headerSize = 8 + n;
  const uint64_t dataSize = fileSize - layout.headerSize;
  std::vector<TensorEntry> all; // every tensor, for the tiling check
  for (const auto &[name, entry] : json.items()) {
    if (name == "__metadata__") {
      if (entry.is_null()) continue; // the safetensors library reads null as no metadata
      if (!entry.is_object()) return Error{"__metadata__ is not an object"};
      for (const auto &[key, value] : entry.items())
        if (!value.is_string()) return Error{fmt::format("__metadata__ value {} is not a string", quoteString(key))};
      continue;
    }
    if (!entry.is_object()) return Error{fmt::format("tensor {} is not described by an object", name)};
    auto dtypeField = entry.find("dtype");
    auto shapeField = entry.find("shape");
    auto offsetsField = entry.find("data_offsets");
    if (dtypeField == entry.end() || !dtypeField->is_string() || shapeField == entry.end() ||
        !shapeField->is_array() || offsetsField == entry.end() || !offsetsField->is_array() ||
        offsetsField->size() != 2)
      return Error{fmt::format("tensor {} lacks dtype, shape or data_offsets", name)};
    const std::string dtypeName = dtypeField->get<std::string>();
    auto dtype = dtypeFromSafetensorsName(dtypeName);
    auto opaqueBits = dtype ? std::nullopt : opaqueDtypeBits(dtypeName);
    if (!dtype && !opaqueBits) return Error{fmt::format("tensor {} has unknown dtype {}", name, dtypeName)};
    TensorEntry t{name, dtype.value_or(DType::U8), {}, 0, 0};
    for (const auto &d : *shapeField) {
      if (!d.is_number_unsigned()) return Error{fmt::format("tensor {} has a shape that is not unsigned integers", name)};
      t.shape.push_back(d.get<uint64_t>());
    }
    for (const auto &o : *offsetsField)
      if (!o.is_number_unsigned()) return Error{fmt::format("tensor {} has non-integer data_offsets", name)};
    uint64_t b = (*offsetsField)[0].get<uint64_t>(), e = (*offsetsField)[1].get<uint64_t>();
    if (b > e || e > dataSize) return Error{fmt::format("tensor {} has data_offsets outside the data", name)};
    auto count = elementCount(t.shape);
    const unsigned bits = dtype ? dtypeInfo(*dtype).wordBits : *opaqueBits;
    uint64_t totalBits;
    if (!count || __builtin_mul_overflow(*count, bits, &totalBits) || totalBits % 8 != 0 || totalBits / 8 != e - b)
      return Error{fmt::format("tensor {} has {} bytes, which does not match its shape and dtype", name, e - b)};
    t.begin = layout.headerSize + b;
    t.end = layout.headerSize + e;
    all.push_back(t);
    (dtype ? layout.tensors : layout.opaque).push_back(std::move(t));
  }
  // By offsets, empty tensors before a tensor starting where they are: they overlap nothing.
  auto byOffsets = [](const TensorEntry &a, const TensorEntry &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  };
  std::stable_sort(all.begin(), all.end(), byOffsets);
  uint64_t at = layout.headerSize;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].begin < at)
      return Error{fmt::format("tensors {} and {} overlap", all[i - 1].name, all[i].name)};
    if (all[i].begin > at)
      return Error{fmt::format("{} bytes before tensor {} belong to no tensor", all[i].begin - at, all[i].name)};
    at = all[i].end;
  }
  if (at != fileSize) return Error{fmt::format("{} bytes after the last tensor belong to no tensor", fileSize - at)};
  std::stable_sort(layout.tensors.begin(), layout.tensors.end(), byOffsets);
  std::stable_sort(layout.opaque.begin(), layout.opaque.end(), byOffsets);
  return layout;
}

} // namespace brevis
