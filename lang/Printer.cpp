#include "Printer.h"

#include <fmt/format.h>

namespace brevis {

namespace {

// Bit patterns read best in hex, counts and offsets in decimal.
std::string wordLiteral(uint64_t v) { return v < 10 ? std::to_string(v) : fmt::format("{:#x}", v); }

std::string rangeText(ByteRange r) { return fmt::format("@{}+{}", r.offset, r.size); }

std::string annotationText(const Expr &e) {
  return e.annotation ? " : " + toString(*e.annotation) : std::string();
}

/// The part of a compound node before its children: "repeat 4 (", "merge(".
std::string openText(const Expr &e) {
  switch (e.kind) {
  case NodeKind::Concat: return "concat(";
  case NodeKind::Merge: return "merge(";
  case NodeKind::Repeat: return fmt::format("repeat {} (", as<Repeat>(e).count);
  case NodeKind::Map: {
    const auto &m = as<Map>(e);
    if (!mapFnTakesParameter(m.fn)) return fmt::format("map {} (", mapFnName(m.fn));
    std::string param = m.fn == MapFn::Xor ? wordLiteral(m.param) : std::to_string(m.param);
    return fmt::format("map {} {} (", mapFnName(m.fn), param);
  }
  case NodeKind::Scan: {
    const auto &s = as<Scan>(e);
    return fmt::format("scan {} {} (", scanOpName(s.op), wordLiteral(s.init));
  }
  case NodeKind::Lit:
  case NodeKind::Const:
  case NodeKind::Hole: return {}; // leaves: leafText()
  }
  __builtin_trap(); // not a NodeKind
}

std::string leafText(const Expr &e) {
  switch (e.kind) {
  case NodeKind::Lit: {
    const auto &l = as<Lit>(e);
    if (!l.isInline())
      return fmt::format("lit {} {} {}", encodingName(l.encoding), toString(l.type), rangeText(l.payload()));
    return fmt::format("lit {} [{}]", toString(l.type), fmt::join(l.words(), ", "));
  }
  case NodeKind::Const: {
    const auto &c = as<Const>(e);
    return fmt::format("const {} {}", toString(c.type), wordLiteral(c.value));
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

std::string flat(const Expr &e) {
  if (isLeaf(e)) return leafText(e) + annotationText(e);
  auto kids = children(e);
  auto prefixes = childPrefixes(e, kids.size());
  std::string out = openText(e);
  for (size_t i = 0; i < kids.size(); ++i) {
    if (i) out += ", ";
    out += prefixes[i] + flat(*kids[i]);
  }
  return out + ")" + annotationText(e);
}

void printBroken(const Expr &e, unsigned indent, std::string &out);

// A long inline word list: the words fill lines two spaces deeper, the bracket closes alone.
void printBrokenInline(const Lit &l, unsigned indent, std::string &out) {
  std::string pad(indent + 2, ' ');
  out += fmt::format("lit {} [\n", toString(l.type));
  std::string line = pad;
  for (size_t i = 0; i < l.words().size(); ++i) {
    std::string word = std::to_string(l.words()[i]) + (i + 1 < l.words().size() ? "," : "");
    if (line.size() > pad.size() && line.size() + 1 + word.size() > kPrintWidth) {
      out += line + "\n";
      line = pad;
    }
    line += (line.size() > pad.size() ? " " : "") + word;
  }
  out += line + "\n" + std::string(indent, ' ') + "]" + annotationText(l);
}

void printAt(const Expr &e, unsigned indent, unsigned firstLineUsed, std::string &out) {
  std::string f = flat(e);
  if (firstLineUsed + f.size() <= kPrintWidth) {
    out += f;
  } else if (auto *lit = dynAs<Lit>(e); lit && lit->isInline()) {
    printBrokenInline(*lit, indent, out);
  } else if (isLeaf(e)) {
    out += f;
  } else {
    printBroken(e, indent, out);
  }
}

// Children one per line, two spaces deeper, the closing parenthesis on its own line.
void printBroken(const Expr &e, unsigned indent, std::string &out) {
  auto kids = children(e);
  auto prefixes = childPrefixes(e, kids.size());
  std::string pad(indent + 2, ' ');
  out += openText(e);
  out += '\n';
  for (size_t i = 0; i < kids.size(); ++i) {
    out += pad + prefixes[i];
    printAt(*kids[i], indent + 2, indent + 2 + prefixes[i].size(), out);
    out += i + 1 < kids.size() ? ",\n" : "\n";
  }
  out += std::string(indent, ' ') + ")" + annotationText(e);
}

std::string regionHead(const Region &r) {
  switch (r.kind) {
  case RegionKind::Header:
  case RegionKind::Bytes: return fmt::format("{} {}", regionKindName(r.kind), rangeText(r.bytes));
  case RegionKind::Tensor:
    return fmt::format("{} {} {}[{}] {}", regionKindName(r.kind), quoteString(r.name), dtypeInfo(r.dtype).bdslName,
                       fmt::join(r.shape, ", "), rangeText(r.bytes));
  }
  __builtin_trap(); // not a RegionKind
}

} // namespace

std::string quoteString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string printExpr(const Expr &e, unsigned indent) {
  std::string out;
  printAt(e, indent, indent, out);
  return out;
}

std::string printCheckpoint(const Checkpoint &c, bool withDigests) {
  std::string out = fmt::format("brevis {}\n", c.version);
  out += fmt::format("source {} size {} xxh64 {:#018x}\n", quoteString(c.source.fileName), c.source.size,
                     c.source.xxh64);
  out += fmt::format("payload {} size {}\n", quoteString(c.payloadFile), c.payloadSize);
  for (const auto &r : c.regions) {
    out += '\n';
    for (const std::string &comment : r.comments) out += comment + "\n";
    std::string head = regionHead(r);
    if (r.digest && withDigests) head += fmt::format(" digest {:#018x}", *r.digest);
    head += " =";
    std::string body = flat(*r.program);
    if (head.size() + 1 + body.size() <= kPrintWidth) {
      out += head + " " + body + "\n";
    } else {
      out += head + "\n  ";
      printAt(*r.program, 2, 2, out);
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
