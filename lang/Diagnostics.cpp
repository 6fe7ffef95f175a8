#include "Diagnostics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace brevis {

Diagnostics::Diagnostics(std::string fileName, std::string text)
    : fileName_(std::move(fileName)), text_(std::move(text)) {}

void Diagnostics::error(SourceLoc loc, std::string message) {
  ++errorCount_;
  if (errorCount_ <= kMaxReported)
    diagnostics_.push_back({Severity::Error, loc, std::move(message)});
}

void Diagnostics::note(SourceLoc loc, std::string message) {
  if (errorCount_ <= kMaxReported)
    diagnostics_.push_back({Severity::Note, loc, std::move(message)});
}

std::string_view Diagnostics::line(uint32_t lineNumber) const {
  // Found by scanning when a diagnostic is rendered: most texts never need it, and an index of
  // every line would cost 8 bytes per line of a possibly huge program.
  if (lineNumber == 0) return {};
  size_t begin = 0;
  for (uint32_t l = 1; l < lineNumber; ++l) {
    begin = text_.find('\n', begin);
    if (begin == std::string::npos) return {};
    ++begin;
  }
  size_t end = text_.find('\n', begin);
  if (end == std::string::npos) end = text_.size();
  if (end > begin && text_[end - 1] == '\r') --end;
  return std::string_view(text_).substr(begin, end - begin);
}

namespace {
bool isControl(char c, bool keepLineBreaks) {
  return (static_cast<uint8_t>(c) < 0x20 && !(keepLineBreaks && (c == '\t' || c == '\n'))) || c == 0x7f;
}
/// Whether text[i] starts a C1 control character in UTF-8 (U+0080..U+009F: 0xC2 0x80..0x9F),
/// which some terminals obey as they do ESC sequences (U+009B is CSI).
bool startsC1(std::string_view text, size_t i) {
  return static_cast<uint8_t>(text[i]) == 0xc2 && i + 1 < text.size() && static_cast<uint8_t>(text[i + 1]) >= 0x80 &&
         static_cast<uint8_t>(text[i + 1]) <= 0x9f;
}
} // namespace

std::string withControlsEscaped(std::string_view text, bool keepLineBreaks) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i)
    if (isControl(text[i], keepLineBreaks)) {
      out += fmt::format("\\x{:02x}", static_cast<uint8_t>(text[i]));
    } else if (startsC1(text, i)) {
      out += fmt::format("\\u{:04x}", static_cast<uint8_t>(text[++i]));
    } else {
      out += text[i];
    }
  return out;
}

std::string Diagnostics::render(const Diagnostic &d) const {
  const char *severity = d.severity == Severity::Error ? "error" : "note";
  const std::string file = withControlsEscaped(fileName_), message = withControlsEscaped(d.message);
  if (!d.loc.valid()) return fmt::format("{}: {}: {}\n", file, severity, message);
  std::string out = fmt::format("{}:{}:{}: {}: {}\n", file, d.loc.line, d.loc.column, severity, message);
  std::string_view src = line(d.loc.line);
  size_t caret = d.loc.column ? d.loc.column - 1 : 0; // bytes before the caret in what is shown
  std::string_view shown = src;
  std::string before, after;
  if (src.size() > kMaxShownLine) {
    // A window around the column, its ends moved off the middle of a UTF-8 character.
    size_t begin = caret > kMaxShownLine / 2 ? std::min(caret - kMaxShownLine / 2, src.size()) : 0;
    size_t end = std::min(src.size(), begin + kMaxShownLine);
    auto continuation = [&](size_t i) { return i < src.size() && (static_cast<uint8_t>(src[i]) & 0xc0) == 0x80; };
    while (begin < end && continuation(begin)) ++begin;
    while (end > begin && continuation(end)) --end;
    shown = src.substr(begin, end - begin);
    if (begin > 0) before = "...";
    if (end < src.size()) after = "...";
    caret = caret >= begin ? caret - begin : 0;
  }
  out += before;
  out += withControlsEscaped(shown);
  out += after;
  out += '\n';
  out += std::string(before.size(), ' ');
  // Keep tabs so the caret lines up under the same column in any terminal; a character of
  // several UTF-8 bytes takes one column, an escaped control the width of its escape.
  for (size_t i = 0; i < caret && i < shown.size(); ++i) {
    if (shown[i] == '\t') out += '\t';
    else if (isControl(shown[i], true)) out += "    ";
    else if (startsC1(shown, i)) out += "      ", ++i;
    else if ((static_cast<uint8_t>(shown[i]) & 0xc0) != 0x80) out += ' ';
  }
  out += "^\n";
  return out;
}

std::string Diagnostics::render() const {
  std::string out;
  for (const auto &d : diagnostics_) out += render(d);
  if (errorCount_ > kMaxReported)
    out += fmt::format("{}: note: {} more errors not shown\n", withControlsEscaped(fileName_), errorCount_ - kMaxReported);
  return out;
}

} // namespace brevis
