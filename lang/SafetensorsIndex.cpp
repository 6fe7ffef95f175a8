#include "lang/SafetensorsIndex.h"

#include "lang/Printer.h"

#include <fmt/format.h>

namespace brevis {

namespace {

constexpr size_t kLengthBytes = 8;
constexpr std::string_view kMetadataKey = "\"__metadata__\":";

/// `s` as a JSON string, escaped as serde_json and Python's json module write one.
void appendJsonString(std::string_view s, std::string &out) {
  out += '"';
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (c < 0x20) out += fmt::format("\\u{:04x}", c);
      else out += ch;
    }
  }
  out += '"';
}

void appendNumber(uint64_t n, std::string &out) {
  const fmt::format_int digits(n);
  out.append(digits.data(), digits.size());
}

Error tooLarge(const Checkpoint &c, size_t header) {
  return Error{fmt::format("the header safetensors(…) stands for is over {} bytes, more than safetensors allows",
                           kMaxSafetensorsHeaderBytes),
               c.regions[header].loc};
}

/// Appends the members for the tensor regions after `header`, joined by commas, to `out` (with
/// a comma before the first where `commaFirst`), and returns how many bytes the members take
/// (the comma not counted); an error names a tensor region before it, or a second header
/// written as an index.
Result<size_t> appendTensorMembers(const Checkpoint &c, size_t header, std::string &out, bool commaFirst) {
  for (size_t i = 0; i < header; ++i) {
    const Region &r = c.regions[i];
    if (r.kind == RegionKind::Tensor)
      return Error{fmt::format("safetensors(…) lists the tensors after it, but tensor {} comes before it",
                               quoteString(r.name)),
                   c.regions[header].loc};
  }
  const size_t start = out.size();
  uint64_t at = 0; // from the header's end
  bool first = true;
  for (size_t i = header + 1; i < c.regions.size(); ++i) {
    const Region &r = c.regions[i];
    if (r.index) return Error{"only one header region can be written as safetensors(…)", r.loc};
    uint64_t end;
    if (r.bytes.size == kImpliedSize || __builtin_add_overflow(at, r.bytes.size, &end))
      return Error{"the regions after the header end past 2^64 bytes", r.loc};
    if (r.kind == RegionKind::Tensor) {
      if (out.size() - start > kMaxSafetensorsHeaderBytes) return tooLarge(c, header);
      if (!first || commaFirst) out += ',';
      first = false;
      appendJsonString(r.name, out);
      // Appended piece by piece: a header of many small tensors formats one member per tensor,
      // and a format string's parsing and buffer cost ten times the bytes themselves.
      out += R"(:{"dtype":")";
      out += dtypeInfo(r.dtype).safetensorsName;
      out += R"(","shape":[)";
      for (size_t d = 0; d < r.shape.size(); ++d) {
        if (d) out += ',';
        appendNumber(r.shape[d], out);
      }
      out += R"(],"data_offsets":[)";
      appendNumber(at, out);
      out += ',';
      appendNumber(end, out);
      out += "]}";
    }
    at = end;
  }
  return out.size() - start - (!first && commaFirst);
}

/// The header's bytes, built in one string with `sizeHint` bytes reserved (an estimate, at most
/// the safetensors limit): length prefix, `{`, the members with the metadata's, `}`, padding.
/// (Built in pieces, each copied into the next, a header of 50,000 small tensors was a third of
/// decoding their checkpoint, most of it in fresh pages for the copies.)
Result<std::string> headerText(const Checkpoint &c, size_t header, const SafetensorsIndex &index, uint64_t sizeHint) {
  std::string out;
  out.reserve(static_cast<size_t>(std::min<uint64_t>(sizeHint, kMaxSafetensorsHeaderBytes + 2 * kLengthBytes)));
  out.assign(kLengthBytes, '\0');
  out += '{';
  const bool first = index.placement == SafetensorsIndex::Metadata::First;
  if (first) {
    out += kMetadataKey;
    out += index.metadata;
  }
  auto tensors = appendTensorMembers(c, header, out, first);
  if (!tensors) return tensors.error();
  if (*tensors + index.metadata.size() > kMaxSafetensorsHeaderBytes) return tooLarge(c, header);
  if (index.placement == SafetensorsIndex::Metadata::Last) {
    if (*tensors) out += ',';
    out += kMetadataKey;
    out += index.metadata;
  }
  out += '}';
  // Padded to a multiple of the prefix's length, so the JSON after it is too.
  out.resize(out.size() + (kLengthBytes - out.size() % kLengthBytes) % kLengthBytes, ' ');
  const uint64_t json = out.size() - kLengthBytes;
  for (size_t b = 0; b < kLengthBytes; ++b) out[b] = static_cast<char>(json >> (8 * b));
  return out;
}

} // namespace

Result<std::string> safetensorsHeaderBytes(const Checkpoint &c, size_t header, const SafetensorsIndex &index) {
  // An estimate of the header's size from the members (numbers of at most 20 digits; a name
  // escaped is longer, and then the string grows), and no more than the size the program
  // declares: a declared size is the program's word, which may be false.
  uint64_t size = 3 * kLengthBytes + kMetadataKey.size() + index.metadata.size();
  for (size_t i = header + 1; i < c.regions.size() && size <= kMaxSafetensorsHeaderBytes; ++i) {
    const Region &r = c.regions[i];
    if (r.kind == RegionKind::Tensor) size += r.name.size() + 100 + 21 * r.shape.size();
  }
  return headerText(c, header, index, std::min(size, c.regions[header].bytes.size));
}

std::optional<SafetensorsIndex> matchSafetensorsIndex(const Checkpoint &c, size_t header, std::string_view bytes) {
  std::string tensors;
  tensors.reserve(bytes.size());
  if (!appendTensorMembers(c, header, tensors, false) || bytes.size() < kLengthBytes + 2) return std::nullopt;
  // The JSON without its length and padding: `{…}`.
  std::string_view json = bytes.substr(kLengthBytes);
  while (json.size() > 1 && json.back() == ' ') json.remove_suffix(1);
  if (json.front() != '{' || json.back() != '}') return std::nullopt;
  std::string_view members = json.substr(1, json.size() - 2);

  // Which placement could it be? The metadata's text is what the tensors' members leave.
  SafetensorsIndex index;
  const std::string_view t = tensors;
  if (members == t) {
    index.placement = SafetensorsIndex::Metadata::None;
  } else if (members.starts_with(kMetadataKey) && (t.empty() || members.ends_with("," + std::string(t)))) {
    index.placement = SafetensorsIndex::Metadata::First;
    const size_t end = members.size() - (t.empty() ? 0 : t.size() + 1);
    if (end < kMetadataKey.size()) return std::nullopt;
    index.metadata = std::string(members.substr(kMetadataKey.size(), end - kMetadataKey.size()));
  } else if (!t.empty() && members.starts_with(std::string(t) + "," + std::string(kMetadataKey))) {
    index.placement = SafetensorsIndex::Metadata::Last;
    index.metadata = std::string(members.substr(t.size() + 1 + kMetadataKey.size()));
  } else {
    return std::nullopt;
  }
  // The padding and length must come out the same too.
  auto text = headerText(c, header, index, bytes.size());
  if (!text || *text != bytes) return std::nullopt;
  return index;
}

} // namespace brevis
