#include "runtime/containers/Safetensors.h"

#include "lang/Ast.h"
#include "lang/Printer.h"
#include "runtime/common/Utf8.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>

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

/// A header's JSON read in one pass of SAX events, into what the layout needs (a DOM of the
/// header of a checkpoint of many tensors took half of `verify`'s time). For each top-level
/// name, in order: what its value is and, for an object, the fields a tensor is described by.
/// As in a JSON object, the last of a repeated field counts; where the text stops being JSON
/// is noted. (Top-level names repeated are found once the entries are sorted by name.)
struct HeaderEvents {
  using json = nlohmann::json;
  enum class Kind : uint8_t { Null, Object, Other };
  /// A field that should hold an array of unsigned integers.
  struct Numbers {
    bool present = false, isArray = false, allUnsigned = true;
    size_t elements = 0;          ///< of any kind
    std::vector<uint64_t> values; ///< the unsigned ones
  };
  struct Entry {
    std::string name;
    Kind kind = Kind::Other;
    bool dtypePresent = false, dtypeIsString = false;
    std::string dtype;
    Numbers shape, offsets;
  };
  std::vector<Entry> entries;
  std::map<std::string, bool> metadataIsString; ///< __metadata__'s keys: is the (last) value a string
  bool topIsObject = false;
  std::optional<size_t> errorAt; ///< the byte the parser stopped at
  std::string error;             ///< what it expected there

  bool null() { return value(Value::Null); }
  bool boolean(bool) { return value(Value::Other); }
  bool number_integer(json::number_integer_t) { return value(Value::Other); }
  bool number_unsigned(json::number_unsigned_t n) { return value(Value::Unsigned, n); }
  bool number_float(json::number_float_t, const json::string_t &) { return value(Value::Other); }
  bool string(json::string_t &text) { return value(Value::String, 0, &text); }
  bool binary(json::binary_t &) { return value(Value::Other); }
  bool start_object(std::size_t) { return value(Value::Object), open_.push_back(true), true; }
  bool start_array(std::size_t) { return value(Value::Array), open_.push_back(false), true; }
  bool end_object() { return open_.pop_back(), true; }
  bool end_array() { return open_.pop_back(), true; }
  bool key(json::string_t &k) {
    if (open_.size() == 1) { // a name of the header
      entries.emplace_back().name = k;
    } else if (inEntryObject()) { // a field of an entry
      Entry &e = entries.back();
      field_ = Field::Other;
      if (e.name == "__metadata__") {
        field_ = Field::Metadata;
        metadataKey_ = k;
      } else if (k == "dtype") {
        field_ = Field::Dtype;
        e.dtypePresent = true;
        e.dtypeIsString = false;
        e.dtype.clear();
      } else if (k == "shape" || k == "data_offsets") {
        field_ = k == "shape" ? Field::Shape : Field::Offsets;
        numbers(e) = Numbers{};
        numbers(e).present = true;
      }
    }
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

private:
  enum class Value : uint8_t { Null, Unsigned, String, Object, Array, Other };
  enum class Field : uint8_t { Dtype, Shape, Offsets, Metadata, Other };

  /// Inside the object that describes one entry (containers open: the header, the entry).
  bool inEntryObject() const { return open_.size() == 2 && open_[1]; }
  Numbers &numbers(Entry &e) const { return field_ == Field::Shape ? e.shape : e.offsets; }

  /// A value (a scalar, or the start of an object or array) in the containers open now.
  bool value(Value v, uint64_t n = 0, const std::string *text = nullptr) {
    if (open_.empty()) {
      topIsObject = v == Value::Object;
    } else if (open_.size() == 1) { // an entry's value
      entries.back().kind = v == Value::Null ? Kind::Null : v == Value::Object ? Kind::Object : Kind::Other;
    } else if (inEntryObject()) { // a field's value
      Entry &e = entries.back();
      if (field_ == Field::Metadata) {
        metadataIsString[metadataKey_] = v == Value::String;
      } else if (field_ == Field::Dtype) {
        e.dtypeIsString = v == Value::String;
        if (text) e.dtype = *text;
      } else if (field_ == Field::Shape || field_ == Field::Offsets) {
        numbers(e).isArray = v == Value::Array;
      }
    } else if (open_.size() == 3 && open_[1] && !open_[2] && (field_ == Field::Shape || field_ == Field::Offsets)) {
      Numbers &list = numbers(entries.back()); // an element of a shape or data_offsets array
      ++list.elements;
      if (v == Value::Unsigned) list.values.push_back(n);
      else list.allUnsigned = false;
    }
    return true;
  }

  std::vector<bool> open_; ///< the containers open, outermost first: object (true) or array
  Field field_ = Field::Other;
  std::string metadataKey_;
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
  HeaderEvents header;
  nlohmann::json::sax_parse(text, text + n, &header);
  if (header.errorAt) // 1-based position in the JSON text; the file's byte is 8 past it, 0-based
    return Error{fmt::format("header is not JSON at byte {}: {}", 8 + *header.errorAt - 1, header.error)};
  if (!header.topIsObject) return Error{"header is not a JSON object"};

  // In the order of their names, as a JSON object lists them: the first fault so found is the
  // one reported, and empty tensors at one offset keep that order. (Indices sorted, not the
  // entries: an entry is large, and a header is often in order already.)
  std::vector<HeaderEvents::Entry> &entries = header.entries;
  std::vector<uint32_t> byName(entries.size());
  std::iota(byName.begin(), byName.end(), 0u);
  const auto nameOrder = [&](uint32_t a, uint32_t b) {
    return entries[a].name != entries[b].name ? entries[a].name < entries[b].name : a < b;
  };
  if (!std::is_sorted(byName.begin(), byName.end(), nameOrder)) std::sort(byName.begin(), byName.end(), nameOrder);
  // A name repeated sits beside its first use; the one reported is the first whose repetition
  // the text reaches.
  std::optional<uint32_t> repeated;
  for (size_t i = 1; i < byName.size(); ++i)
    if (entries[byName[i]].name == entries[byName[i - 1]].name && (!repeated || byName[i] < *repeated))
      repeated = byName[i];
  if (repeated) return Error{fmt::format("header names {} twice", quoteString(entries[*repeated].name))};

  SafetensorsLayout layout;
  layout.headerSize = 8 + n;
  const uint64_t dataSize = fileSize - layout.headerSize;
  std::vector<TensorEntry> all; // every tensor, for the tiling check
  all.reserve(entries.size());
  for (uint32_t index : byName) {
    HeaderEvents::Entry &entry = entries[index];
    const std::string &name = entry.name;
    if (name == "__metadata__") {
      if (entry.kind == HeaderEvents::Kind::Null) continue; // the safetensors library reads null as no metadata
      if (entry.kind != HeaderEvents::Kind::Object) return Error{"__metadata__ is not an object"};
      for (const auto &[key, isString] : header.metadataIsString)
        if (!isString) return Error{fmt::format("__metadata__ value {} is not a string", quoteString(key))};
      continue;
    }
    if (entry.kind != HeaderEvents::Kind::Object)
      return Error{fmt::format("tensor {} is not described by an object", name)};
    if (!entry.dtypePresent || !entry.dtypeIsString || !entry.shape.present || !entry.shape.isArray ||
        !entry.offsets.present || !entry.offsets.isArray)
      return Error{fmt::format("tensor {} lacks dtype, shape or data_offsets", name)};
    if (entry.offsets.elements != 2)
      return Error{fmt::format("tensor {} has {} data_offsets, not 2 (its first and last byte)", name,
                               entry.offsets.elements)};
    const std::string &dtypeName = entry.dtype;
    auto dtype = dtypeFromSafetensorsName(dtypeName);
    auto opaqueBits = dtype ? std::nullopt : opaqueDtypeBits(dtypeName);
    if (!dtype && !opaqueBits) return Error{fmt::format("tensor {} has unknown dtype {}", name, dtypeName)};
    if (!entry.shape.allUnsigned)
      return Error{fmt::format("tensor {} has a shape that is not unsigned integers", name)};
    if (!entry.offsets.allUnsigned)
      return Error{fmt::format("tensor {} has data_offsets that are not non-negative integers", name)};
    TensorEntry t{name, dtype.value_or(DType::U8), std::move(entry.shape.values), 0, 0, dtype ? "" : dtypeName};
    uint64_t b = entry.offsets.values[0], e = entry.offsets.values[1];
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
