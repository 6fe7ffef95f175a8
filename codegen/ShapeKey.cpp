#include "codegen/ShapeKey.h"

#include "runtime/codecs/LitDecode.h"

#include <fmt/format.h>

namespace brevis::jit {

bool isStreamed(const Lit &l) { return !isRandomAccess(l); }

void operandLiterals(const Expr &e, std::vector<const Lit *> &out) {
  if (auto *l = dynAs<Lit>(e); l && !l->isInline()) out.push_back(l);
  for (const Expr *c : children(e)) operandLiterals(*c, out);
}

unsigned widthOf(const Expr &e) {
  switch (e.kind) {
  case NodeKind::Lit: return as<Lit>(e).type.width;
  case NodeKind::Const: return as<Const>(e).type.width;
  case NodeKind::Merge: {
    unsigned w = 0;
    for (const auto &f : as<Merge>(e).fields) w += widthOf(*f.expr);
    return w;
  }
  default: __builtin_trap();
  }
}

uint64_t lengthOf(const Expr &e) {
  switch (e.kind) {
  case NodeKind::Lit: return as<Lit>(e).type.length;
  case NodeKind::Const: return as<Const>(e).type.length;
  case NodeKind::Merge: return lengthOf(*as<Merge>(e).fields.front().expr);
  default: __builtin_trap();
  }
}

namespace {

void appendU64(std::string &key, uint64_t v) { key.append(reinterpret_cast<const char *>(&v), sizeof v); }

} // namespace

Result<void> appendShapeKey(const Expr &e, const Payload &payload, std::string &key) {
  switch (e.kind) {
  case NodeKind::Const: {
    const auto &c = as<Const>(e);
    if (c.type.width < 1 || c.type.width > kMaxWordWidth)
      return Error{fmt::format("constant width {} is not 1..64", c.type.width)};
    key += 'C';
    appendU64(key, c.type.width);
    appendU64(key, c.value & widthMask(c.type.width));
    return {};
  }
  case NodeKind::Merge: {
    const auto &m = as<Merge>(e);
    // The loop runs over the first field's length and shifts by the widths: both must be sound
    // for the loads to stay inside every field's literal.
    if (m.fields.empty()) return Error{"merge has no fields"};
    for (const auto &f : m.fields)
      if (lengthOf(*f.expr) != lengthOf(*m.fields.front().expr)) return Error{"merge fields differ in length"};
    if (widthOf(e) > kMaxWordWidth) return Error{"merge fields are wider than 64 bits in total"};
    key += 'M';
    appendU64(key, m.fields.size());
    for (const auto &f : m.fields) BREVIS_TRY(appendShapeKey(*f.expr, payload, key));
    return {};
  }
  case NodeKind::Lit: break;
  default: __builtin_trap();
  }

  const auto &l = as<Lit>(e);
  const unsigned width = l.type.width;
  const uint64_t n = l.type.length;
  if (width < 1 || width > kMaxWordWidth) return Error{fmt::format("literal width {} is not 1..64", width)};
  if (l.isInline()) {
    if (l.words().size() != n) return Error{"inline literal word count does not match its type"};
    key += 'I';
    appendU64(key, width);
    appendU64(key, n);
    for (uint64_t w : l.words()) appendU64(key, w & widthMask(width));
    return {};
  }
  const ByteRange &r = l.payload();
  if (!payload.contains(r))
    return Error{fmt::format("literal range @{}+{} lies outside the payload of {} bytes", r.offset, r.size,
                             payload.size())};
  if (isStreamed(l)) {
    // Read from a buffer the runtime fills: the code depends only on the word width.
    key += 'E';
    appendU64(key, width);
    key += n == 0 ? '0' : '+';
    return {};
  }
  if (l.encoding == Encoding::Raw) {
    if (r.size / containerBytes(width) != n || r.size % containerBytes(width) != 0)
      return Error{fmt::format("raw literal {} does not match its range @{}+{}", toString(l.type), r.offset, r.size)};
    key += 'R';
    appendU64(key, width);
    key += n == 0 ? '0' : '+';
    return {};
  }
  if (r.size < 1) return Error{fmt::format("bitpack literal at @{} has no bit count byte", r.offset)};
  const unsigned b = payload.data()[r.offset];
  if (b > width)
    return Error{fmt::format("bitpack literal at @{} packs {} bits, more than its {}-bit words", r.offset, b, width)};
  if (bitpackPayloadSize(n, b) > r.size)
    return Error{fmt::format("bitpack literal at @{} holds {} bytes, too few for {} words of {} bits", r.offset,
                             r.size - 1, n, b)};
  key += 'B';
  appendU64(key, width);
  key += n == 0 ? '0' : '+';
  appendU64(key, b);
  return {};
}

} // namespace brevis::jit
