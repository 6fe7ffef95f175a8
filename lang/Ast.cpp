#include "Ast.h"

#include <array>

namespace brevis {

std::string_view nodeKindName(NodeKind k) {
  static constexpr std::array<std::string_view, 8> names = {
#define BREVIS_NODE(Class, kw, doc) kw,
#include "NodeKinds.def"
  };
  return names[static_cast<size_t>(k)];
}

std::string_view encodingName(Encoding e) {
  switch (e) {
  case Encoding::Raw: return "raw";
  case Encoding::Bitpack: return "bitpack";
  case Encoding::Huffman: return "huffman";
  case Encoding::Rans: return "rans";
  case Encoding::RansO1: return "rans_o1";
  }
  return {};
}

std::optional<Encoding> encodingFromName(std::string_view s) {
  for (Encoding e : kAllEncodings)
    if (encodingName(e) == s) return e;
  return std::nullopt;
}

uint64_t bitpackPayloadSize(uint64_t n, unsigned b) {
  unsigned __int128 bytes = 1 + (static_cast<unsigned __int128>(n) * b + 7) / 8;
  return bytes > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

unsigned maxEncodingWidth(Encoding e) {
  switch (e) {
  case Encoding::Rans: return 16;
  case Encoding::RansO1: return 8;
  default: return 64;
  }
}

namespace {
struct MapFnInfo {
  MapFn fn;
  std::string_view name;
  bool param;
};
constexpr std::array kMapFns = {
#define BREVIS_MAPFN(E, kw, param, doc) MapFnInfo{MapFn::E, kw, param},
#include "MapFns.def"
};
} // namespace

std::string_view mapFnName(MapFn f) { return kMapFns[static_cast<size_t>(f)].name; }
bool mapFnTakesParameter(MapFn f) { return kMapFns[static_cast<size_t>(f)].param; }
std::optional<MapFn> mapFnFromName(std::string_view s) {
  for (const auto &info : kMapFns)
    if (info.name == s) return info.fn;
  return std::nullopt;
}

std::string_view scanOpName(ScanOp op) { return op == ScanOp::Xor ? "xor" : "add"; }
std::optional<ScanOp> scanOpFromName(std::string_view s) {
  if (s == "xor") return ScanOp::Xor;
  if (s == "add") return ScanOp::Add;
  return std::nullopt;
}

std::unique_ptr<Lit> Lit::make(StreamType t, Encoding e, ByteRange r) {
  auto n = std::make_unique<Lit>();
  n->type = t;
  n->encoding = e;
  n->data = r;
  return n;
}
std::unique_ptr<Lit> Lit::make(StreamType t, std::vector<uint64_t> words) {
  auto n = std::make_unique<Lit>();
  n->type = t;
  n->data = std::move(words);
  return n;
}
std::unique_ptr<Const> Const::make(StreamType t, uint64_t v) {
  auto n = std::make_unique<Const>();
  n->type = t;
  n->value = v;
  return n;
}
std::unique_ptr<Concat> Concat::make(std::vector<ExprPtr> parts) {
  auto n = std::make_unique<Concat>();
  n->parts = std::move(parts);
  return n;
}
std::unique_ptr<Repeat> Repeat::make(uint64_t count, ExprPtr body) {
  auto n = std::make_unique<Repeat>();
  n->count = count;
  n->body = std::move(body);
  return n;
}
std::unique_ptr<Map> Map::make(MapFn fn, uint64_t param, ExprPtr body) {
  auto n = std::make_unique<Map>();
  n->fn = fn;
  n->param = param;
  n->body = std::move(body);
  return n;
}
std::unique_ptr<Scan> Scan::make(ScanOp op, uint64_t init, ExprPtr body) {
  auto n = std::make_unique<Scan>();
  n->op = op;
  n->init = init;
  n->body = std::move(body);
  return n;
}
std::unique_ptr<Merge> Merge::make(std::vector<MergeField> fields) {
  auto n = std::make_unique<Merge>();
  n->fields = std::move(fields);
  return n;
}
std::unique_ptr<Hole> Hole::make(StreamType t) {
  auto n = std::make_unique<Hole>();
  n->type = t;
  return n;
}

std::vector<const Expr *> children(const Expr &e) {
  std::vector<const Expr *> out;
  switch (e.kind) {
  case NodeKind::Lit:
  case NodeKind::Const:
  case NodeKind::Hole:
    break;
  case NodeKind::Concat:
    for (const auto &p : as<Concat>(e).parts) out.push_back(p.get());
    break;
  case NodeKind::Repeat: out.push_back(as<Repeat>(e).body.get()); break;
  case NodeKind::Map: out.push_back(as<Map>(e).body.get()); break;
  case NodeKind::Scan: out.push_back(as<Scan>(e).body.get()); break;
  case NodeKind::Merge:
    for (const auto &f : as<Merge>(e).fields) out.push_back(f.expr.get());
    break;
  }
  return out;
}

std::vector<Expr *> children(Expr &e) {
  std::vector<Expr *> out;
  for (const Expr *c : children(static_cast<const Expr &>(e))) out.push_back(const_cast<Expr *>(c));
  return out;
}

namespace {
/// The non-child fields of two nodes of the same kind are equal.
bool sameFields(const Expr &a, const Expr &b) {
  switch (a.kind) {
  case NodeKind::Lit: {
    const auto &x = as<Lit>(a), &y = as<Lit>(b);
    if (x.type != y.type || x.isInline() != y.isInline()) return false;
    return x.isInline() ? x.words() == y.words() : x.encoding == y.encoding && x.payload() == y.payload();
  }
  case NodeKind::Const: return as<Const>(a).type == as<Const>(b).type && as<Const>(a).value == as<Const>(b).value;
  case NodeKind::Hole: return as<Hole>(a).type == as<Hole>(b).type;
  case NodeKind::Concat: return as<Concat>(a).parts.size() == as<Concat>(b).parts.size();
  case NodeKind::Repeat: return as<Repeat>(a).count == as<Repeat>(b).count;
  case NodeKind::Map: return as<Map>(a).fn == as<Map>(b).fn && as<Map>(a).param == as<Map>(b).param;
  case NodeKind::Scan: return as<Scan>(a).op == as<Scan>(b).op && as<Scan>(a).init == as<Scan>(b).init;
  case NodeKind::Merge: {
    const auto &x = as<Merge>(a), &y = as<Merge>(b);
    if (x.fields.size() != y.fields.size()) return false;
    for (size_t i = 0; i < x.fields.size(); ++i)
      if (x.fields[i].name != y.fields[i].name) return false;
    return true;
  }
  }
  return false;
}
} // namespace

StreamType streamTypeOf(const Expr &e) {
  switch (e.kind) {
  case NodeKind::Lit: return as<Lit>(e).type;
  case NodeKind::Const: return as<Const>(e).type;
  case NodeKind::Concat: {
    StreamType t = streamTypeOf(*as<Concat>(e).parts.front());
    t.length = 0;
    for (const auto &p : as<Concat>(e).parts) t.length += streamTypeOf(*p).length;
    return t;
  }
  case NodeKind::Repeat: {
    StreamType t = streamTypeOf(*as<Repeat>(e).body);
    t.length *= as<Repeat>(e).count;
    return t;
  }
  case NodeKind::Map: return streamTypeOf(*as<Map>(e).body);
  case NodeKind::Scan: {
    StreamType t = streamTypeOf(*as<Scan>(e).body);
    t.length += 1;
    return t;
  }
  case NodeKind::Merge: {
    StreamType t{0, streamTypeOf(*as<Merge>(e).fields.front().expr).length};
    for (const auto &f : as<Merge>(e).fields) t.width += streamTypeOf(*f.expr).width;
    return t;
  }
  case NodeKind::Hole: break;
  }
  __builtin_trap(); // holes have no type; callers reject them first
}

bool structurallyEqual(const Expr &a, const Expr &b) {
  if (a.kind != b.kind || a.annotation != b.annotation || !sameFields(a, b)) return false;
  auto ca = children(a), cb = children(b);
  for (size_t i = 0; i < ca.size(); ++i)
    if (!structurallyEqual(*ca[i], *cb[i])) return false;
  return true;
}

std::optional<uint64_t> elementCount(const std::vector<uint64_t> &shape) {
  uint64_t n = 1;
  for (uint64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

std::string toString(StreamType t) { return "u" + std::to_string(t.width) + "[" + std::to_string(t.length) + "]"; }

} // namespace brevis
