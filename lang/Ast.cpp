#include "Ast.h"

#include "OperatorTyping.h"

#include <array>

namespace brevis {

std::string_view nodeKindName(NodeKind k) {
  static constexpr std::array names = {
#define BREVIS_NODE(Class, kw, doc) std::string_view(kw),
#include "NodeKinds.def"
  };
  return names[static_cast<size_t>(k)];
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
std::unique_ptr<Lit> Lit::makeText(std::string_view bytes) { return makeText(std::string(bytes)); }
std::unique_ptr<Lit> Lit::makeText(std::string &&bytes) {
  auto n = std::make_unique<Lit>();
  n->type = StreamType{8, bytes.size()};
  n->data = std::move(bytes);
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
std::unique_ptr<Hole> Hole::makeLiteral(StreamType t, std::optional<Encoding> encoding) {
  auto n = make(t);
  n->literalOnly = true;
  n->encoding = encoding;
  return n;
}

void rebasePayload(Expr &e, uint64_t base) {
  if (e.kind == NodeKind::Lit) {
    Lit &l = as<Lit>(e);
    if (!l.isInline()) l.data = ByteRange{l.payload().offset + base, l.payload().size};
    return;
  }
  for (Expr *c : children(e)) rebasePayload(*c, base);
}

ExprPtr cloneExpr(const Expr &e) {
  ExprPtr copy;
  switch (e.kind) {
  case NodeKind::Lit: {
    const Lit &l = as<Lit>(e);
    auto n = std::make_unique<Lit>();
    n->type = l.type;
    n->encoding = l.encoding;
    n->data = l.data;
    n->radix = l.radix;
    copy = std::move(n);
    break;
  }
  case NodeKind::Const: {
    auto n = Const::make(as<Const>(e).type, as<Const>(e).value);
    n->radix = as<Const>(e).radix;
    copy = std::move(n);
    break;
  }
  case NodeKind::Concat: {
    std::vector<ExprPtr> parts;
    for (const ExprPtr &p : as<Concat>(e).parts) parts.push_back(cloneExpr(*p));
    copy = Concat::make(std::move(parts));
    break;
  }
  case NodeKind::Repeat: {
    auto n = Repeat::make(as<Repeat>(e).count, cloneExpr(*as<Repeat>(e).body));
    n->radix = as<Repeat>(e).radix;
    copy = std::move(n);
    break;
  }
  case NodeKind::Map: {
    const Map &m = as<Map>(e);
    auto n = Map::make(m.fn, m.param, cloneExpr(*m.body));
    n->radix = m.radix;
    n->periodic = m.periodic;
    n->per = m.per;
    copy = std::move(n);
    break;
  }
  case NodeKind::Scan: {
    const Scan &s = as<Scan>(e);
    auto n = Scan::make(s.op, s.init, cloneExpr(*s.body));
    n->radix = s.radix;
    copy = std::move(n);
    break;
  }
  case NodeKind::Merge: {
    std::vector<MergeField> fields;
    for (const MergeField &f : as<Merge>(e).fields) fields.push_back(MergeField{f.name, cloneExpr(*f.expr)});
    copy = Merge::make(std::move(fields));
    break;
  }
  case NodeKind::Hole: {
    const Hole &h = as<Hole>(e);
    copy = h.literalOnly ? Hole::makeLiteral(h.type, h.encoding) : Hole::make(h.type);
    break;
  }
  }
  if (!copy) __builtin_trap(); // not a NodeKind
  copy->loc = e.loc;
  copy->annotation = e.annotation;
  return copy;
}

std::vector<const Expr *> children(const Expr &e) {
  std::vector<const Expr *> out;
  forEachChild(e, [&](const Expr &c) { out.push_back(&c); });
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
    if (x.type != y.type || x.data.index() != y.data.index()) return false;
    if (!x.isInline()) return x.encoding == y.encoding && x.payload() == y.payload();
    return x.isText() ? x.textBytes() == y.textBytes() : x.words() == y.words();
  }
  case NodeKind::Const: return as<Const>(a).type == as<Const>(b).type && as<Const>(a).value == as<Const>(b).value;
  case NodeKind::Hole: {
    const Hole &x = as<Hole>(a), &y = as<Hole>(b);
    return x.type == y.type && x.literalOnly == y.literalOnly && x.encoding == y.encoding;
  }
  case NodeKind::Concat: return as<Concat>(a).parts.size() == as<Concat>(b).parts.size();
  case NodeKind::Repeat: return as<Repeat>(a).count == as<Repeat>(b).count;
  case NodeKind::Map:
    return as<Map>(a).fn == as<Map>(b).fn && as<Map>(a).param == as<Map>(b).param &&
           as<Map>(a).periodic == as<Map>(b).periodic && as<Map>(a).per == as<Map>(b).per;
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
  std::vector<StreamType> childTypes;
  forEachChild(e, [&](const Expr &c) { childTypes.push_back(streamTypeOf(c)); });
  return checkedOperatorType(e, childTypes);
}

bool structurallyEqual(const Expr &a, const Expr &b) {
  if (a.kind != b.kind || a.annotation != b.annotation || !sameFields(a, b)) return false;
  auto ca = children(a), cb = children(b);
  for (size_t i = 0; i < ca.size(); ++i)
    if (!structurallyEqual(*ca[i], *cb[i])) return false;
  return true;
}

std::string_view regionKindName(RegionKind k) {
  switch (k) {
  case RegionKind::Header: return "header";
  case RegionKind::Tensor: return "tensor";
  case RegionKind::Bytes: return "bytes";
  }
  __builtin_trap(); // not a RegionKind
}

std::optional<uint64_t> elementCount(const std::vector<uint64_t> &shape) {
  uint64_t n = 1;
  for (uint64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

std::string toString(StreamType t) { return "u" + std::to_string(t.width) + "[" + std::to_string(t.length) + "]"; }

} // namespace brevis
