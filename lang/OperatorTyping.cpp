#include "OperatorTyping.h"

#include "BitpackFormat.h"

#include <fmt/format.h>

namespace brevis {

namespace {

bool fits(uint64_t value, unsigned width) { return (value & ~widthMask(width)) == 0; }

std::optional<TypeError> checkWidth(unsigned width, const char *what) {
  if (width >= 1 && width <= kMaxWordWidth) return std::nullopt;
  return TypeError{fmt::format("{} width must be between 1 and 64 bits, but is {}", what, width), std::nullopt};
}

TypeError nodeError(std::string message) { return TypeError{std::move(message), std::nullopt}; }

/// What the payload range of a literal in `encoding` must hold.
std::optional<TypeError> checkPayloadRange(const Lit &l) {
  const ByteRange &r = l.payload();
  switch (l.encoding) {
  case Encoding::Raw: {
    uint64_t need;
    if (__builtin_mul_overflow(l.type.length, containerBytes(l.type.width), &need) || need != r.size)
      return nodeError(fmt::format("raw literal {} needs {} payload bytes, but the range holds {}", toString(l.type),
                                   l.type.length * containerBytes(l.type.width), r.size));
    return std::nullopt;
  }
  case Encoding::Bitpack: {
    // The bit count b <= W is in the payload: the range holds at least its byte, at most W bits a word.
    const uint64_t most = bitpackPayloadSize(l.type.length, l.type.width);
    if (r.size < kBitpackHeaderBytes || r.size > most)
      return nodeError(fmt::format("bitpack literal {} needs between 1 and {} payload bytes, but the range holds {}",
                                   toString(l.type), most, r.size));
    return std::nullopt;
  }
  case Encoding::Huffman:
  case Encoding::Rans:
  case Encoding::RansO1:
  case Encoding::Zstd:
  case Encoding::Context:
    // Entropy- or LZ-coded: sizes depend on the data; the codec validates the payload itself.
    if (l.type.width > maxEncodingWidth(l.encoding))
      return nodeError(fmt::format("{} literals hold words of at most {} bits, but this one is {}",
                                   encodingName(l.encoding), maxEncodingWidth(l.encoding), toString(l.type)));
    // Tables are built from at least one word: an empty stream is a raw or inline literal.
    if (l.type.length == 0 && (l.encoding == Encoding::Huffman || l.encoding == Encoding::Rans ||
                               l.encoding == Encoding::RansO1))
      return nodeError(fmt::format("{} literals hold at least one word; write an empty stream as lit {} []",
                                   encodingName(l.encoding), toString(l.type)));
    // A zstd or context literal, even of no words, holds its block size.
    if (r.size == 0 && (l.type.length != 0 || l.encoding == Encoding::Zstd || l.encoding == Encoding::Context))
      return nodeError(
          fmt::format("{} literal {} has an empty payload range", encodingName(l.encoding), toString(l.type)));
    return std::nullopt;
  }
  __builtin_trap(); // not an Encoding
}

Typing typeLit(const Lit &l, std::optional<uint64_t> payloadSize) {
  if (auto error = checkWidth(l.type.width, "literal word")) return *error;
  if (l.isInline()) {
    if (l.inlineCount() != l.type.length)
      return nodeError(fmt::format("inline literal has {} words, but its type {} needs {}", l.inlineCount(),
                                   toString(l.type), l.type.length));
    // Text is bytes by construction (Lit::makeText): only word lists can hold a word too wide.
    for (size_t i = 0; i < (l.isText() ? 0 : l.words().size()); ++i)
      if (!fits(l.words()[i], l.type.width))
        return nodeError(fmt::format("inline word {} ({}) does not fit in {} bits", i, l.words()[i], l.type.width));
    return l.type;
  }
  const ByteRange &r = l.payload();
  uint64_t end;
  if (__builtin_add_overflow(r.offset, r.size, &end) || (payloadSize && end > *payloadSize))
    return nodeError(fmt::format("payload range @{}+{} lies outside the payload of {} bytes", r.offset, r.size,
                                 payloadSize.value_or(0)));
  if (auto error = checkPayloadRange(l)) return *error;
  return l.type;
}

Typing typeConst(const Const &c) {
  if (auto error = checkWidth(c.type.width, "constant word")) return *error;
  if (!fits(c.value, c.type.width))
    return nodeError(fmt::format("constant {:#x} does not fit in {} bits", c.value, c.type.width));
  return c.type;
}

/// Parts of one width; lengths add.
Typing typeConcat(std::span<const StreamType> parts) {
  if (parts.empty()) return nodeError("concat needs at least one part");
  StreamType sum{parts[0].width, 0};
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].width != sum.width)
      return TypeError{fmt::format("concat part {} is {}, but the first part has width {}", i + 1,
                                   toString(parts[i]), sum.width),
                       i};
    if (__builtin_add_overflow(sum.length, parts[i].length, &sum.length))
      return nodeError("concat length overflows 64 bits");
  }
  return sum;
}

/// A non-empty body, k >= 2 times.
Typing typeRepeat(const Repeat &r, StreamType body) {
  if (r.count < 2) return nodeError(fmt::format("repeat count must be at least 2, but is {}", r.count));
  if (body.length == 0) return TypeError{"repeat needs a non-empty child stream, but it has length 0", 0};
  StreamType t{body.width, 0};
  if (__builtin_mul_overflow(body.length, r.count, &t.length)) return nodeError("repeat length overflows 64 bits");
  return t;
}

/// The body's type; the parameter must suit the function at the body's width.
Typing typeMap(const Map &m, StreamType body) {
  switch (m.fn) {
  case MapFn::Rotl:
    if (m.param >= body.width)
      return nodeError(fmt::format("rotl amount must be below the width {}, but is {}", body.width, m.param));
    return body;
  case MapFn::Xor:
  case MapFn::Add:
    if (m.per == 0) return nodeError(fmt::format("map {}'s constants must each hold for at least one word (per 0)", mapFnName(m.fn)));
    for (size_t i = 0; i < m.periodic.size(); ++i)
      if (!fits(m.periodic[i], body.width))
        return nodeError(fmt::format("map {} constant {} (number {} of the list) does not fit in {} bits",
                                     mapFnName(m.fn), m.periodic[i], i + 1, body.width));
    if (!fits(m.param, body.width)) {
      std::string param = m.fn == MapFn::Xor ? fmt::format("{:#x}", m.param) : std::to_string(m.param);
      return nodeError(fmt::format("map {} constant {} does not fit in {} bits", mapFnName(m.fn), param, body.width));
    }
    return body;
  case MapFn::ZigZag:
  case MapFn::Gray:
  case MapFn::BitRev: return body;
  }
  __builtin_trap(); // not a MapFn
}

/// The initial word, then one word per body word.
Typing typeScan(const Scan &s, StreamType body) {
  if (!fits(s.init, body.width))
    return nodeError(fmt::format("scan initial word {:#x} does not fit in {} bits", s.init, body.width));
  if (body.length == UINT64_MAX) return nodeError("scan length overflows 64 bits");
  return StreamType{body.width, body.length + 1};
}

/// Fields of one length; widths add up to at most 64 bits (lang/MergeLayout.h packs them).
Typing typeMerge(std::span<const StreamType> fields) {
  if (fields.empty()) return nodeError("merge needs at least one field");
  uint64_t width = 0;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].length != fields[0].length)
      return TypeError{fmt::format("merge field {} has length {}, but the first field has length {}", i + 1,
                                   fields[i].length, fields[0].length),
                       i};
    width += fields[i].width;
  }
  if (width > kMaxWordWidth) return nodeError(fmt::format("merge field widths sum to {}, more than 64 bits", width));
  return StreamType{static_cast<unsigned>(width), fields[0].length};
}

} // namespace

Typing typeOperator(const Expr &e, std::span<const StreamType> childTypes, std::optional<uint64_t> payloadSize) {
  switch (e.kind) {
  case NodeKind::Lit: return typeLit(as<Lit>(e), payloadSize);
  case NodeKind::Const: return typeConst(as<Const>(e));
  case NodeKind::Hole: {
    const Hole &h = as<Hole>(e);
    if (auto error = checkWidth(h.type.width, "hole word")) return *error;
    if (h.encoding && h.type.width > maxEncodingWidth(*h.encoding))
      return nodeError(fmt::format("{} literals hold words of at most {} bits, not {}", encodingName(*h.encoding),
                                   maxEncodingWidth(*h.encoding), h.type.width));
    if (h.encoding && h.type.length == 0 &&
        (*h.encoding == Encoding::Huffman || *h.encoding == Encoding::Rans || *h.encoding == Encoding::RansO1))
      return nodeError(fmt::format("{} literals hold at least one word; write an empty stream as lit {} []",
                                   encodingName(*h.encoding), toString(h.type)));
    return h.type;
  }
  case NodeKind::Concat: return typeConcat(childTypes);
  case NodeKind::Repeat: return typeRepeat(as<Repeat>(e), childTypes[0]);
  case NodeKind::Map: return typeMap(as<Map>(e), childTypes[0]);
  case NodeKind::Scan: return typeScan(as<Scan>(e), childTypes[0]);
  case NodeKind::Merge: return typeMerge(childTypes);
  }
  __builtin_trap(); // not a NodeKind
}

StreamType checkedOperatorType(const Expr &e, std::span<const StreamType> childTypes) {
  // A leaf is the type it declares: its own fields (inline words, payload range) were checked
  // once, by the checker, and executors ask for types per region and per piece.
  switch (e.kind) {
  case NodeKind::Lit: return as<Lit>(e).type;
  case NodeKind::Const: return as<Const>(e).type;
  case NodeKind::Hole: return as<Hole>(e).type;
  case NodeKind::Concat:
  case NodeKind::Repeat:
  case NodeKind::Map:
  case NodeKind::Scan:
  case NodeKind::Merge: break;
  }
  Typing t = typeOperator(e, childTypes);
  if (t.index() != 0) __builtin_trap(); // callers pass type-checked programs
  return std::get<StreamType>(t);
}

} // namespace brevis
