#pragma once
// The physical encodings of literal payloads (lang/Encodings.def): names and the widest words
// each holds. What their bytes look like lives with their codecs (runtime/codecs/).
#include <optional>
#include <string_view>

namespace brevis {

enum class Encoding {
#define BREVIS_ENCODING(E, kw, maxWidth, doc) E,
#include "Encodings.def"
};

/// Every encoding, in tie-break order.
inline constexpr Encoding kAllEncodings[] = {
#define BREVIS_ENCODING(E, kw, maxWidth, doc) Encoding::E,
#include "Encodings.def"
};

std::string_view encodingName(Encoding); ///< the keyword: "raw", "rans_o1"

/// In a literal hole (`lit auto u8[16]`), the encoding left to the tool: the smallest.
inline constexpr std::string_view kAutoEncodingName = "auto";
std::optional<Encoding> encodingFromName(std::string_view);

/// The widest words an encoding takes (rans: 16 bits; rans_o1: bytes).
unsigned maxEncodingWidth(Encoding);

} // namespace brevis
