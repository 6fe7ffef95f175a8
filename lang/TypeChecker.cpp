#include "TypeChecker.h"

#include "Printer.h"

#include <fmt/format.h>

#include <set>

namespace brevis {

namespace {
bool fits(uint64_t value, unsigned width) { return (value & ~widthMask(width)) == 0; }
} // namespace

bool TypeChecker::checkWidth(SourceLoc loc, unsigned width, const char *what) {
  if (width >= 1 && width <= kMaxWordWidth) return true;
  diags_.error(loc, fmt::format("{} width must be between 1 and 64 bits, but is {}", what, width));
  return false;
}

std::optional<StreamType> TypeChecker::check(const Expr &e, std::optional<uint64_t> payloadSize) {
  payloadSize_ = payloadSize;
  return derive(e);
}

std::optional<StreamType> TypeChecker::derive(const Expr &e) {
  std::optional<StreamType> t;
  switch (e.kind) {
  case NodeKind::Lit: {
    const auto &l = as<Lit>(e);
    if (!checkWidth(e.loc, l.type.width, "literal word")) return std::nullopt;
    if (l.isInline()) {
      if (l.words().size() != l.type.length) {
        diags_.error(e.loc, fmt::format("inline literal has {} words, but its type {} needs {}", l.words().size(),
                                        toString(l.type), l.type.length));
        return std::nullopt;
      }
      for (size_t i = 0; i < l.words().size(); ++i)
        if (!fits(l.words()[i], l.type.width)) {
          diags_.error(e.loc, fmt::format("inline word {} ({}) does not fit in {} bits", i, l.words()[i], l.type.width));
          return std::nullopt;
        }
    } else {
      const ByteRange &r = l.payload();
      uint64_t end;
      if (__builtin_add_overflow(r.offset, r.size, &end) || (payloadSize_ && end > *payloadSize_)) {
        diags_.error(e.loc, fmt::format("payload range @{}+{} lies outside the payload of {} bytes", r.offset, r.size,
                                        payloadSize_.value_or(0)));
        return std::nullopt;
      }
      if (l.encoding == Encoding::Raw) {
        uint64_t need;
        if (__builtin_mul_overflow(l.type.length, containerBytes(l.type.width), &need) || need != r.size) {
          diags_.error(e.loc, fmt::format("raw literal {} needs {} payload bytes, but the range holds {}",
                                          toString(l.type), l.type.length * containerBytes(l.type.width), r.size));
          return std::nullopt;
        }
      } else if (l.encoding == Encoding::Bitpack) {
        // bitpack: one byte holding the bit count b <= W, then ceil(N * b / 8) bytes.
        uint64_t most = bitpackPayloadSize(l.type.length, l.type.width);
        if (r.size < 1 || r.size > most) {
          diags_.error(e.loc, fmt::format("bitpack literal {} needs between 1 and {} payload bytes, but the range holds {}",
                                          toString(l.type), most, r.size));
          return std::nullopt;
        }
      } else {
        // Entropy-coded: sizes depend on the data; the codec validates the payload itself.
        if (l.type.width > maxEncodingWidth(l.encoding)) {
          diags_.error(e.loc, fmt::format("{} literals hold words of at most {} bits, but this one is {}",
                                          encodingName(l.encoding), maxEncodingWidth(l.encoding), toString(l.type)));
          return std::nullopt;
        }
        if (r.size == 0 && l.type.length != 0) {
          diags_.error(e.loc, fmt::format("{} literal {} has an empty payload range", encodingName(l.encoding),
                                          toString(l.type)));
          return std::nullopt;
        }
      }
    }
    t = l.type;
    break;
  }
  case NodeKind::Const: {
    const auto &c = as<Const>(e);
    if (!checkWidth(e.loc, c.type.width, "constant word")) return std::nullopt;
    if (!fits(c.value, c.type.width)) {
      diags_.error(e.loc, fmt::format("constant {:#x} does not fit in {} bits", c.value, c.type.width));
      return std::nullopt;
    }
    t = c.type;
    break;
  }
  case NodeKind::Hole: {
    const auto &h = as<Hole>(e);
    if (!checkWidth(e.loc, h.type.width, "hole word")) return std::nullopt;
    sawHole_ = true;
    t = h.type;
    break;
  }
  case NodeKind::Concat: {
    const auto &c = as<Concat>(e);
    std::vector<std::optional<StreamType>> parts;
    for (const auto &p : c.parts) parts.push_back(derive(*p));
    for (const auto &p : parts)
      if (!p) return std::nullopt;
    if (parts.empty()) {
      diags_.error(e.loc, "concat needs at least one part");
      return std::nullopt;
    }
    StreamType sum{parts[0]->width, 0};
    for (size_t i = 0; i < parts.size(); ++i) {
      if (parts[i]->width != sum.width) {
        diags_.error(c.parts[i]->loc, fmt::format("concat part {} is {}, but the first part has width {}", i + 1,
                                                  toString(*parts[i]), sum.width));
        return std::nullopt;
      }
      if (__builtin_add_overflow(sum.length, parts[i]->length, &sum.length)) {
        diags_.error(e.loc, "concat length overflows 64 bits");
        return std::nullopt;
      }
    }
    t = sum;
    break;
  }
  case NodeKind::Repeat: {
    const auto &r = as<Repeat>(e);
    auto body = derive(*r.body);
    if (!body) return std::nullopt;
    if (r.count < 2) {
      diags_.error(e.loc, fmt::format("repeat count must be at least 2, but is {}", r.count));
      return std::nullopt;
    }
    if (body->length == 0) {
      diags_.error(r.body->loc, "repeat needs a non-empty child stream, but it has length 0");
      return std::nullopt;
    }
    StreamType rt{body->width, 0};
    if (__builtin_mul_overflow(body->length, r.count, &rt.length)) {
      diags_.error(e.loc, "repeat length overflows 64 bits");
      return std::nullopt;
    }
    t = rt;
    break;
  }
  case NodeKind::Map: {
    const auto &m = as<Map>(e);
    auto body = derive(*m.body);
    if (!body) return std::nullopt;
    if (m.fn == MapFn::Rotl && m.param >= body->width) {
      diags_.error(e.loc, fmt::format("rotl amount must be below the width {}, but is {}", body->width, m.param));
      return std::nullopt;
    }
    if ((m.fn == MapFn::Xor || m.fn == MapFn::Add) && !fits(m.param, body->width)) {
      std::string param = m.fn == MapFn::Xor ? fmt::format("{:#x}", m.param) : std::to_string(m.param);
      diags_.error(e.loc, fmt::format("map {} constant {} does not fit in {} bits", mapFnName(m.fn), param, body->width));
      return std::nullopt;
    }
    t = body;
    break;
  }
  case NodeKind::Scan: {
    const auto &s = as<Scan>(e);
    auto body = derive(*s.body);
    if (!body) return std::nullopt;
    if (!fits(s.init, body->width)) {
      diags_.error(e.loc, fmt::format("scan initial word {:#x} does not fit in {} bits", s.init, body->width));
      return std::nullopt;
    }
    if (body->length == UINT64_MAX) {
      diags_.error(e.loc, "scan length overflows 64 bits");
      return std::nullopt;
    }
    t = StreamType{body->width, body->length + 1};
    break;
  }
  case NodeKind::Merge: {
    const auto &m = as<Merge>(e);
    std::vector<std::optional<StreamType>> fields;
    for (const auto &f : m.fields) fields.push_back(derive(*f.expr));
    for (const auto &f : fields)
      if (!f) return std::nullopt;
    if (fields.empty()) {
      diags_.error(e.loc, "merge needs at least one field");
      return std::nullopt;
    }
    unsigned width = 0;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (fields[i]->length != fields[0]->length) {
        diags_.error(m.fields[i].expr->loc, fmt::format("merge field {} has length {}, but the first field has length {}",
                                                        i + 1, fields[i]->length, fields[0]->length));
        return std::nullopt;
      }
      width += fields[i]->width;
    }
    if (width > kMaxWordWidth) {
      diags_.error(e.loc, fmt::format("merge field widths sum to {}, more than 64 bits", width));
      return std::nullopt;
    }
    t = StreamType{width, fields[0]->length};
    break;
  }
  }

  if (e.annotation && *e.annotation != *t) {
    diags_.error(e.loc, fmt::format("annotated type {} does not match the derived type {}", toString(*e.annotation),
                                    toString(*t)));
    return std::nullopt;
  }
  if (recordTypes_) types_[&e] = *t;
  return t;
}

void TypeChecker::checkCheckpoint(const Checkpoint &c) {
  if (c.version != kLanguageVersion)
    diags_.error(c.loc, fmt::format("unsupported language version {}; this brevisc reads version {}", c.version,
                                    kLanguageVersion));
  payloadSize_ = c.payloadSize;
  uint64_t expectedOffset = 0;
  std::set<std::string> names;
  for (const auto &r : c.regions) {
    if (r.bytes.offset != expectedOffset)
      diags_.error(r.loc, fmt::format("region starts at byte {}, but the previous one ends at byte {}", r.bytes.offset,
                                      expectedOffset));
    if (__builtin_add_overflow(r.bytes.offset, r.bytes.size, &expectedOffset)) {
      diags_.error(r.loc, "region end overflows 64 bits");
      return;
    }
    StreamType expected{8, r.bytes.size};
    if (r.kind == RegionKind::Tensor) {
      if (!names.insert(r.name).second)
        diags_.error(r.loc, fmt::format("tensor {} is declared twice", quoteString(r.name)));
      const auto &info = dtypeInfo(r.dtype);
      auto count = elementCount(r.shape);
      uint64_t bytes;
      if (!count || __builtin_mul_overflow(*count, info.wordBits / 8, &bytes)) {
        diags_.error(r.loc, "tensor element count overflows 64 bits");
        continue;
      }
      if (bytes != r.bytes.size)
        diags_.error(r.loc, fmt::format("tensor of {} {} elements needs {} bytes, but its range holds {}", *count,
                                        info.bdslName, bytes, r.bytes.size));
      expected = StreamType{info.wordBits, *count};
    }
    auto t = derive(*r.program);
    if (t && *t != expected)
      diags_.error(r.program->loc, fmt::format("program produces {}, but the {} needs {}", toString(*t),
                                               r.kind == RegionKind::Tensor ? "tensor" : "region", toString(expected)));
  }
  if (expectedOffset != c.source.size)
    diags_.error(c.loc, fmt::format("regions cover {} bytes, but the source file has {}", expectedOffset, c.source.size));
}

bool TypeChecker::checkModule(const Module &m) {
  size_t before = diags_.errorCount();
  if (m.isCheckpoint())
    checkCheckpoint(m.checkpoint());
  else
    check(m.expr());
  return diags_.errorCount() == before;
}

namespace {
void annotate(Expr &e, const std::unordered_map<const Expr *, StreamType> &types) {
  if (auto it = types.find(&e); it != types.end()) e.annotation = it->second;
  for (Expr *c : children(e)) annotate(*c, types);
}
} // namespace

void annotateTypes(Module &m, const TypeChecker &checker) {
  if (!m.isCheckpoint()) {
    annotate(m.expr(), checker.types());
    return;
  }
  for (auto &r : m.checkpoint().regions) annotate(*r.program, checker.types());
}

} // namespace brevis
