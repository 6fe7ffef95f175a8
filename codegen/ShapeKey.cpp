#include "codegen/ShapeKey.h"

#include "lang/BitpackFormat.h"
#include "lang/OperatorTyping.h"
#include "runtime/containers/Checksum.h"

#include <fmt/format.h>

namespace brevis::jit {

void operandLiterals(const Expr &e, std::vector<const Lit *> &out) {
  if (auto *l = dynAs<Lit>(e); l && !l->isInline()) out.push_back(l);
  for (const Expr *c : children(e)) operandLiterals(*c, out);
}

bool readsThroughCursor(const Lit &l, const Payload &payload) {
  if (l.isInline() || l.type.length == 0) return false;
  switch (l.encoding) {
  case Encoding::Raw: return false;
  case Encoding::Bitpack: {
    const unsigned bits = bitpackBitCount(payload.data() + l.payload().offset);
    return bits != 0 && !(bits % 8 == 0 && (bits & (bits - 1)) == 0);
  }
  case Encoding::Huffman:
  case Encoding::Rans:
  case Encoding::RansO1:
  case Encoding::Zstd:
  case Encoding::Context: return true;
  }
  __builtin_trap(); // not an Encoding
}

Result<StreamType> typeOf(const Expr &e) {
  std::vector<StreamType> childTypes;
  std::optional<Error> error;
  forEachChild(e, [&](const Expr &c) {
    if (error) return;
    auto t = typeOf(c);
    if (t) childTypes.push_back(*t);
    else error = t.error();
  });
  if (error) return *error;
  Typing typing = typeOperator(e, childTypes);
  if (auto *broken = std::get_if<TypeError>(&typing)) return Error{broken->message};
  return std::get<StreamType>(typing);
}

namespace {

void appendU64(std::string &key, uint64_t v) { key.append(reinterpret_cast<const char *>(&v), sizeof v); }

/// Lists of words (map constants, inline literals) up to this long are in the key as they are;
/// longer ones by a 128-bit digest. The key is computed for every region piece decoded and
/// hashed by every lookup: a safetensors header's text in the key, eight bytes a character,
/// made those a third of a small checkpoint's --jit run.
constexpr size_t kListedWords = 16;

void appendDigest(std::string &key, ByteSpan list) {
  appendU64(key, xxh3(list));
  appendU64(key, xxh64(list));
}

} // namespace

namespace {

/// appendShapeKey() of a well-typed expression.
Result<void> appendKey(const Expr &e, const Payload &payload, std::string &key) {
  switch (e.kind) {
  case NodeKind::Const: {
    const auto &c = as<Const>(e);
    key += 'C';
    appendU64(key, c.type.width);
    appendU64(key, c.value);
    return {};
  }
  case NodeKind::Merge: {
    const auto &m = as<Merge>(e);
    key += 'M';
    appendU64(key, m.fields.size());
    for (const auto &f : m.fields) BREVIS_TRY(appendKey(*f.expr, payload, key));
    return {};
  }
  case NodeKind::Concat: {
    // The parts' lengths are folded into the code that walks them.
    const auto &c = as<Concat>(e);
    key += 'K';
    appendU64(key, c.parts.size());
    for (const auto &p : c.parts) {
      appendU64(key, streamTypeOf(*p).length);
      BREVIS_TRY(appendKey(*p, payload, key));
    }
    return {};
  }
  case NodeKind::Repeat: {
    // The period is folded in; the count only bounds how far the caller reads.
    const auto &r = as<Repeat>(e);
    key += 'P';
    appendU64(key, streamTypeOf(*r.body).length);
    return appendKey(*r.body, payload, key);
  }
  case NodeKind::Map: {
    const auto &m = as<Map>(e);
    key += 'A';
    appendU64(key, static_cast<uint64_t>(m.fn));
    appendU64(key, m.param);
    appendU64(key, m.periodic.size()); // a list of constants is folded in, as the constant is
    if (m.periodic.size() <= kListedWords) {
      for (uint64_t c : m.periodic) appendU64(key, c);
    } else {
      appendDigest(key, ByteSpan(reinterpret_cast<const uint8_t *>(m.periodic.data()),
                                 m.periodic.size() * sizeof(uint64_t)));
    }
    appendU64(key, m.per);
    return appendKey(*m.body, payload, key);
  }
  case NodeKind::Scan: {
    const auto &s = as<Scan>(e);
    key += 'S';
    appendU64(key, static_cast<uint64_t>(s.op));
    appendU64(key, s.init);
    return appendKey(*s.body, payload, key);
  }
  case NodeKind::Hole:
    return Error{fmt::format("the program has a hole at line {}, column {}; fill it before running", e.loc.line,
                             e.loc.column)};
  case NodeKind::Lit: break;
  }

  const auto &l = as<Lit>(e);
  const unsigned width = l.type.width;
  const uint64_t n = l.type.length;
  if (l.isInline()) {
    key += 'I';
    appendU64(key, width);
    appendU64(key, n);
    if (l.inlineCount() <= kListedWords) {
      for (size_t i = 0; i < l.inlineCount(); ++i) appendU64(key, l.inlineWord(i));
    } else if (l.isText()) {
      key += 'T';
      appendDigest(key, ByteSpan(reinterpret_cast<const uint8_t *>(l.textBytes().data()), l.textBytes().size()));
    } else {
      key += 'W';
      appendDigest(key, ByteSpan(reinterpret_cast<const uint8_t *>(l.words().data()), l.words().size() * 8));
    }
    return {};
  }
  const ByteRange &r = l.payload();
  if (!payload.contains(r))
    return Error{fmt::format("literal range @{}+{} lies outside the payload of {} bytes", r.offset, r.size,
                             payload.size())};
  switch (l.encoding) {
  case Encoding::Huffman:
  case Encoding::Rans:
  case Encoding::RansO1:
  case Encoding::Zstd:
  case Encoding::Context:
    // Read from a buffer the runtime fills: the code depends only on the word width.
    key += 'E';
    appendU64(key, width);
    key += n == 0 ? '0' : '+';
    return {};
  case Encoding::Raw:
    // The typing rule has matched the range's size to the type.
    key += 'R';
    appendU64(key, width);
    key += n == 0 ? '0' : '+';
    return {};
  case Encoding::Bitpack: {
    // The typing rule has bounded the range by the type; the bit count is in the payload.
    const unsigned b = bitpackBitCount(payload.data() + r.offset);
    if (b > width)
      return Error{fmt::format("bitpack literal at @{} packs {} bits, more than its {}-bit words", r.offset, b, width)};
    if (bitpackPayloadSize(n, b) > r.size)
      return Error{fmt::format("bitpack literal at @{} holds {} bytes, too few for {} words of {} bits", r.offset,
                               r.size - kBitpackHeaderBytes, n, b)};
    if (readsThroughCursor(l, payload)) { // code like an entropy-coded literal's, whatever b is
      key += 'E';
      appendU64(key, width);
      key += '+';
      return {};
    }
    key += 'B';
    appendU64(key, width);
    key += n == 0 ? '0' : '+';
    appendU64(key, b);
    return {};
  }
  }
  __builtin_trap(); // not an Encoding
}

} // namespace

Result<void> appendShapeKey(const Expr &e, const Payload &payload, std::string &key) {
  auto t = typeOf(e);
  if (!t) return t.error();
  return appendKey(e, payload, key);
}

std::string decodeFunctionName(const std::string &shapeKey) {
  const ByteSpan bytes(reinterpret_cast<const uint8_t *>(shapeKey.data()), shapeKey.size());
  return fmt::format("brevis_decode_{:016x}", xxh3(bytes));
}

} // namespace brevis::jit
