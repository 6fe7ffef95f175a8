#include "Encoding.h"

#include <array>
#include <iterator>

namespace brevis {

namespace {
struct EncodingInfo {
  std::string_view name;
  unsigned maxWidth;
};
constexpr std::array<EncodingInfo, std::size(kAllEncodings)> kEncodings = {{
#define BREVIS_ENCODING(E, kw, maxWidth, doc) {kw, maxWidth},
#include "Encodings.def"
}};
} // namespace

std::string_view encodingName(Encoding e) { return kEncodings[static_cast<size_t>(e)].name; }
unsigned maxEncodingWidth(Encoding e) { return kEncodings[static_cast<size_t>(e)].maxWidth; }

std::optional<Encoding> encodingFromName(std::string_view s) {
  for (Encoding e : kAllEncodings)
    if (encodingName(e) == s) return e;
  return std::nullopt;
}

} // namespace brevis
