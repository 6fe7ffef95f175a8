#include "Printer.h"

#include "ImpliedParts.h"

#include <fmt/format.h>

#include <unordered_set>

namespace brevis {

namespace {

// Bit patterns read best in hex, counts and offsets in decimal; a number the user wrote keeps
// the radix it was written in.
std::string wordLiteral(uint64_t v, Radix radix) {
  if (radix == Radix::Hex || (radix == Radix::Auto && v >= 10)) return fmt::format("{:#x}", v);
  return std::to_string(v);
}
std::string countLiteral(uint64_t v, Radix radix) {
  return radix == Radix::Hex ? fmt::format("{:#x}", v) : std::to_string(v);
}

/// The length of the valid UTF-8 sequence of two to four bytes at s[i], or 0.
size_t utf8SequenceLength(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  const auto c1 = static_cast<unsigned char>(s[i + 1]);
  if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 > 0x9f) || (c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 > 0x8f))
    return 0; // overlong, a surrogate, or past U+10FFFF
  return n;
}

/// utf8SequenceLength of a character that shows as itself: 0 for C1 controls, and for format
/// characters that are invisible or reorder text (zero-width ones, bidirectional controls, line
/// and paragraph separators, the byte-order mark), which are escaped so that what a program
/// says is what its reader sees.
size_t visibleUtf8Length(std::string_view s, size_t i) {
  const size_t n = utf8SequenceLength(s, i);
  if (n == 0) return 0;
  uint32_t cp = static_cast<unsigned char>(s[i]) & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
  const bool invisible = (cp >= 0x80 && cp <= 0x9f) || cp == 0xad || (cp >= 0x200b && cp <= 0x200f) ||
                         (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x206f) || cp == 0xfeff;
  return invisible ? 0 : n;
}

/// Appends the character at s[i] as quoted strings and text show one that needs no escape of
/// their own: printable ASCII and visible UTF-8 as themselves, anything else (control bytes,
/// invalid UTF-8, invisible characters) as \xNN. Returns the index of its last byte.
size_t appendShown(std::string_view s, size_t i, std::string &out) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c >= 0x20 && c < 0x7f) {
    out += static_cast<char>(c);
    return i;
  }
  if (size_t n = c >= 0x80 ? visibleUtf8Length(s, i) : 0) {
    out.append(s.substr(i, n));
    return i + n - 1;
  }
  out += fmt::format("\\x{:02x}", c);
  return i;
}

std::string rangeText(ByteRange r) { return fmt::format("@{}+{}", r.offset, r.size); }

std::string annotationText(const Expr &e) {
  return e.annotation ? " : " + toString(*e.annotation) : std::string();
}

/// " per R" after a map's list of constants whose each holds for R words; "" for one word.
std::string perText(const Map &m) { return m.per == 1 ? std::string() : fmt::format(" per {}", m.per); }

/// The part of a compound node before its children: "repeat 4 (", "merge(".
std::string openText(const Expr &e) {
  switch (e.kind) {
  case NodeKind::Concat: return "concat(";
  case NodeKind::Merge: return "merge(";
  case NodeKind::Repeat: return fmt::format("repeat {} (", countLiteral(as<Repeat>(e).count, as<Repeat>(e).radix));
  case NodeKind::Map: {
    const auto &m = as<Map>(e);
    if (!mapFnTakesParameter(m.fn)) return fmt::format("map {} (", mapFnName(m.fn));
    if (!m.periodic.empty()) {
      std::string out = fmt::format("map {} [", mapFnName(m.fn));
      for (size_t i = 0; i < m.periodic.size(); ++i) out += (i ? ", " : "") + countLiteral(m.periodic[i], m.radix);
      return out + "]" + perText(m) + " (";
    }
    std::string param = m.fn == MapFn::Xor ? wordLiteral(m.param, m.radix) : countLiteral(m.param, m.radix);
    return fmt::format("map {} {} (", mapFnName(m.fn), param);
  }
  case NodeKind::Scan: {
    const auto &s = as<Scan>(e);
    return fmt::format("scan {} {} (", scanOpName(s.op), wordLiteral(s.init, s.radix));
  }
  case NodeKind::Lit:
  case NodeKind::Const:
  case NodeKind::Hole: return {}; // leaves: leafText()
  }
  __builtin_trap(); // not a NodeKind
}

/// How payload ranges are written: in full, or (an archive's text) without the offsets of the
/// literals that start where the one before them ends.
struct Style {
  const std::unordered_set<const Lit *> *atCursor = nullptr;
};

std::string leafText(const Expr &e, const Style &style) {
  switch (e.kind) {
  case NodeKind::Lit: {
    const auto &l = as<Lit>(e);
    if (!l.isInline()) {
      const bool implied = style.atCursor && style.atCursor->contains(&l);
      return fmt::format("lit {} {} {}", encodingName(l.encoding), toString(l.type),
                         implied ? fmt::format("@+{}", l.payload().size) : rangeText(l.payload()));
    }
    if (l.isText()) return "text " + quoteText(l.textBytes());
    std::string out = fmt::format("lit {} [", toString(l.type));
    for (size_t i = 0; i < l.words().size(); ++i) out += (i ? ", " : "") + countLiteral(l.words()[i], l.radix);
    return out + "]";
  }
  case NodeKind::Const: {
    const auto &c = as<Const>(e);
    return fmt::format("const {} {}", toString(c.type), wordLiteral(c.value, c.radix));
  }
  case NodeKind::Hole: {
    const auto &h = as<Hole>(e);
    if (!h.literalOnly) return "? " + toString(h.type);
    return fmt::format("lit {} {}", h.encoding ? encodingName(*h.encoding) : kAutoEncodingName, toString(h.type));
  }
  case NodeKind::Concat:
  case NodeKind::Repeat:
  case NodeKind::Map:
  case NodeKind::Scan:
  case NodeKind::Merge: return {}; // compound: openText() and the children
  }
  __builtin_trap(); // not a NodeKind
}

bool isLeaf(const Expr &e) {
  switch (e.kind) {
  case NodeKind::Lit:
  case NodeKind::Const:
  case NodeKind::Hole: return true;
  case NodeKind::Concat:
  case NodeKind::Repeat:
  case NodeKind::Map:
  case NodeKind::Scan:
  case NodeKind::Merge: return false;
  }
  __builtin_trap(); // not a NodeKind
}

/// Field prefixes ("sign: ") of a merge, or empty strings for other nodes.
std::vector<std::string> childPrefixes(const Expr &e, size_t count) {
  std::vector<std::string> prefixes(count);
  if (e.kind == NodeKind::Merge) {
    const auto &m = as<Merge>(e);
    for (size_t i = 0; i < count; ++i)
      if (!m.fields[i].name.empty()) prefixes[i] = m.fields[i].name + ": ";
  }
  return prefixes;
}

std::string flat(const Expr &e, const Style &style) {
  if (isLeaf(e)) return leafText(e, style) + annotationText(e);
  auto kids = children(e);
  auto prefixes = childPrefixes(e, kids.size());
  std::string out = openText(e);
  for (size_t i = 0; i < kids.size(); ++i) {
    if (i) out += ", ";
    out += prefixes[i] + flat(*kids[i], style);
  }
  return out + ")" + annotationText(e);
}

void printBroken(const Expr &e, unsigned indent, const Style &style, std::string &out);

/// Words filling lines `pad` deep (at most kPrintWidth wide), comma-separated.
void appendFilledWords(const std::vector<uint64_t> &words, Radix radix, const std::string &pad, std::string &out) {
  std::string line = pad;
  for (size_t i = 0; i < words.size(); ++i) {
    std::string word = countLiteral(words[i], radix) + (i + 1 < words.size() ? "," : "");
    if (line.size() > pad.size() && line.size() + 1 + word.size() > kPrintWidth) {
      out += line + "\n";
      line = pad;
    }
    line += (line.size() > pad.size() ? " " : "") + word;
  }
  out += line + "\n";
}

// A long inline word list: the words fill lines two spaces deeper, the bracket closes alone.
void printBrokenInline(const Lit &l, unsigned indent, std::string &out) {
  std::string pad(indent + 2, ' ');
  out += fmt::format("lit {} [\n", toString(l.type));
  appendFilledWords(l.words(), l.radix, pad, out);
  out += std::string(indent, ' ') + "]" + annotationText(l);
}

// A long text: `text`, then its pieces one a line, two spaces deeper.
void printBrokenText(const Lit &l, unsigned indent, std::string &out) {
  const std::string &bytes = l.textBytes();
  const std::string pad(indent + 2, ' ');
  out += "text";
  size_t begin = 0;
  for (size_t end : textPieceEnds(bytes)) {
    out += "\n" + pad + quoteText(std::string_view(bytes).substr(begin, end - begin));
    begin = end;
  }
  out += annotationText(l);
}

void printAt(const Expr &e, unsigned indent, unsigned firstLineUsed, const Style &style, std::string &out) {
  std::string f = flat(e, style);
  const auto *lit = dynAs<Lit>(e);
  if (lit && lit->isText()) {
    // Text stays text: broken into its pieces where it is too long and can be, else one line.
    if (firstLineUsed + f.size() > kPrintWidth && textPieceEnds(lit->textBytes()).size() > 1)
      printBrokenText(*lit, indent, out);
    else
      out += f;
  } else if (firstLineUsed + f.size() <= kPrintWidth) {
    out += f;
  } else if (lit && lit->isInline()) {
    printBrokenInline(*lit, indent, out);
  } else if (isLeaf(e)) {
    out += f;
  } else {
    printBroken(e, indent, style, out);
  }
}

// Children one per line, two spaces deeper, the closing parenthesis on its own line. A map's
// list of constants too long for its line fills lines of its own, as an inline literal's.
void printBroken(const Expr &e, unsigned indent, const Style &style, std::string &out) {
  auto kids = children(e);
  auto prefixes = childPrefixes(e, kids.size());
  std::string pad(indent + 2, ' ');
  const auto *map = dynAs<Map>(e);
  if (map && !map->periodic.empty() && indent + openText(e).size() > kPrintWidth) {
    out += fmt::format("map {} [\n", mapFnName(map->fn));
    appendFilledWords(map->periodic, map->radix, pad, out);
    out += std::string(indent, ' ') + "]" + perText(*map) + " (";
  } else {
    out += openText(e);
  }
  out += '\n';
  for (size_t i = 0; i < kids.size(); ++i) {
    out += pad + prefixes[i];
    printAt(*kids[i], indent + 2, indent + 2 + prefixes[i].size(), style, out);
    out += i + 1 < kids.size() ? ",\n" : "\n";
  }
  out += std::string(indent, ' ') + ")" + annotationText(e);
}

/// The range of region `r`, which starts at `cursor` when the regions tile the file: in full,
/// or (the archive form) left out where the rest of the program gives it.
std::string regionRange(const Region &r, CheckpointForm form, uint64_t cursor) {
  if (form == CheckpointForm::Editable || r.bytes.offset != cursor) return " " + rangeText(r.bytes);
  if (r.index || (r.kind == RegionKind::Tensor && tensorBytes(r.dtype, r.shape) == r.bytes.size)) return {};
  return fmt::format(" @+{}", r.bytes.size);
}

std::string regionHead(const Region &r, CheckpointForm form, uint64_t cursor) {
  switch (r.kind) {
  case RegionKind::Header:
  case RegionKind::Bytes: return fmt::format("{}{}", regionKindName(r.kind), regionRange(r, form, cursor));
  case RegionKind::Tensor:
    return fmt::format("{} {} {}[{}]{}", regionKindName(r.kind), quoteString(r.name), dtypeInfo(r.dtype).bdslName,
                       fmt::join(r.shape, ", "), regionRange(r, form, cursor));
  }
  __builtin_trap(); // not a RegionKind
}

/// `safetensors(metadata: '…', tensors)` after `head` (which ends in " ="): on one line where it
/// fits, else one part a line, the metadata's text broken as a text literal's is.
std::string indexText(const SafetensorsIndex &index, const std::string &head) {
  using Metadata = SafetensorsIndex::Metadata;
  const std::string metadata = quoteText(index.metadata);
  std::vector<std::string> parts;
  if (index.placement == Metadata::First) parts.push_back("metadata: " + metadata);
  parts.push_back("tensors");
  if (index.placement == Metadata::Last) parts.push_back("metadata: " + metadata);
  std::string line = fmt::format("{} safetensors({})", head, fmt::join(parts, ", "));
  if (line.size() <= kPrintWidth) return line + "\n";
  std::string out = head + "\n  safetensors(\n";
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string comma = i + 1 < parts.size() ? "," : "";
    if (parts[i] != "tensors" && 4 + parts[i].size() + comma.size() > kPrintWidth) {
      out += "    metadata:";
      size_t begin = 0;
      for (size_t end : textPieceEnds(index.metadata)) {
        out += "\n      " + quoteText(std::string_view(index.metadata).substr(begin, end - begin));
        begin = end;
      }
      out += comma + "\n";
    } else {
      out += "    " + parts[i] + comma + "\n";
    }
  }
  return out + "  )\n";
}

} // namespace

std::string quoteString(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else {
      i = appendShown(s, i, out);
    }
  }
  return out + "\"";
}

std::string quoteText(std::string_view s) {
  std::string out = "'";
  out.reserve(s.size() + 2);
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\\') {
      // A backslash before a printable character that starts no escape stands for itself
      // (JSON's \" and \u00e9 read as written); any other is escaped.
      const char next = i + 1 < s.size() ? s[i + 1] : '\0';
      const bool alone = next >= 0x20 && next < 0x7f && std::string_view("'\\ntrx").find(next) == std::string_view::npos;
      out += alone ? "\\" : "\\\\";
    } else if (c == '\'') {
      out += "\\'";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      i = appendShown(s, i, out);
    }
  }
  return out + "'";
}

std::vector<size_t> textPieceEnds(std::string_view s) {
  std::vector<size_t> ends;
  const bool long_ = quoteText(s).size() + 5 > kPrintWidth;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] == '\n' || (long_ && s[i] == ',' && i > 0 && s[i - 1] == '}')) ends.push_back(i + 1);
  if (ends.empty() || ends.back() != s.size()) ends.push_back(s.size());
  return ends;
}

std::string printExpr(const Expr &e, unsigned indent) {
  std::string out;
  printAt(e, indent, indent, Style{}, out);
  return out;
}

std::string printCheckpoint(const Checkpoint &c, CheckpointForm form) {
  std::string out = fmt::format("brevis {}\n", c.version);
  out += fmt::format("source {} size {} xxh64 {:#018x}\n", quoteString(c.source.fileName), c.source.size,
                     c.source.xxh64);
  out += fmt::format("payload {} size {}\n", quoteString(c.payloadFile), c.payloadSize);
  std::unordered_set<const Lit *> atCursor;
  if (form == CheckpointForm::Archive) atCursor = literalsAtCursor(c);
  const Style style{form == CheckpointForm::Archive ? &atCursor : nullptr};
  uint64_t cursor = 0; // where the region printed next starts if the regions tile the file
  for (const auto &r : c.regions) {
    out += '\n';
    for (const std::string &comment : r.comments) out += comment + "\n";
    std::string head = regionHead(r, form, cursor);
    cursor = r.bytes.offset + r.bytes.size;
    if (r.digest && form == CheckpointForm::Editable) head += fmt::format(" digest {:#018x}", *r.digest);
    head += " =";
    if (r.index) {
      out += indexText(*r.index, head);
      continue;
    }
    std::string body = flat(*r.program, style);
    if (head.size() + 1 + body.size() <= kPrintWidth) {
      out += head + " " + body + "\n";
    } else {
      out += head + "\n  ";
      printAt(*r.program, 2, 2, style, out);
      out += '\n';
    }
  }
  return out;
}

std::string printModule(const Module &m) {
  std::string out;
  for (const std::string &comment : m.leadingComments) out += comment + "\n";
  out += m.isCheckpoint() ? printCheckpoint(m.checkpoint()) : printExpr(m.expr()) + "\n";
  if (!m.trailingComments.empty()) out += '\n';
  for (const std::string &comment : m.trailingComments) out += comment + "\n";
  return out;
}

} // namespace brevis
