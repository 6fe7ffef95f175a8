#include "lang/ImpliedParts.h"

#include "lang/SafetensorsIndex.h"

namespace brevis {

namespace {

uint64_t saturatingEnd(uint64_t offset, uint64_t size) {
  uint64_t end;
  return __builtin_add_overflow(offset, size, &end) ? UINT64_MAX : end;
}

/// Calls f on each payload literal of `e` (an Expr or a const Expr) in text order.
template <typename E, typename F> void forEachPayloadLit(E &e, F &&f) {
  if (e.kind == NodeKind::Lit) {
    if (!as<Lit>(e).isInline()) f(as<Lit>(e));
    return;
  }
  for (auto *child : children(e)) forEachPayloadLit(*child, f);
}

void resolveLiteralOffsets(Expr &e, uint64_t &cursor) {
  forEachPayloadLit(e, [&](Lit &l) {
    ByteRange &r = std::get<ByteRange>(l.data);
    if (r.offset == kImpliedOffset) r.offset = cursor;
    cursor = saturatingEnd(r.offset, r.size);
  });
}

} // namespace

std::optional<uint64_t> tensorBytes(DType dtype, const std::vector<uint64_t> &shape) {
  auto count = elementCount(shape);
  uint64_t bytes;
  if (!count || __builtin_mul_overflow(*count, dtypeInfo(dtype).wordBits / 8, &bytes)) return std::nullopt;
  return bytes;
}

bool resolveImpliedParts(Module &m, Diagnostics &diags) {
  uint64_t literalCursor = 0;
  if (!m.isCheckpoint()) {
    resolveLiteralOffsets(m.expr(), literalCursor);
    return true;
  }
  const size_t errorsBefore = diags.errorCount();
  Checkpoint &c = m.checkpoint();
  for (Region &r : c.regions) {
    if (r.bytes.size != kImpliedSize || r.kind != RegionKind::Tensor) continue;
    // An overflow is the checker's to report; 0 keeps this pass going.
    r.bytes.size = tensorBytes(r.dtype, r.shape).value_or(0);
  }
  for (size_t i = 0; i < c.regions.size(); ++i) {
    Region &r = c.regions[i];
    if (!r.index) continue;
    auto bytes = safetensorsHeaderBytes(c, i, *r.index);
    if (!bytes) {
      diags.error(bytes.error().loc, bytes.error().message);
      return false;
    }
    if (r.bytes.size == kImpliedSize) r.bytes.size = bytes->size();
    r.program = Lit::makeText(std::move(*bytes));
    r.program->loc = r.index->loc;
  }
  uint64_t regionCursor = 0;
  for (Region &r : c.regions) {
    if (r.bytes.offset == kImpliedOffset) r.bytes.offset = regionCursor;
    regionCursor = saturatingEnd(r.bytes.offset, r.bytes.size);
    if (r.program) resolveLiteralOffsets(*r.program, literalCursor);
  }
  return diags.errorCount() == errorsBefore;
}

std::unordered_set<const Lit *> literalsAtCursor(const Checkpoint &c) {
  std::unordered_set<const Lit *> out;
  uint64_t cursor = 0;
  for (const Region &r : c.regions) {
    if (!r.program || r.index) continue;
    forEachPayloadLit(*r.program, [&](const Lit &l) {
      if (l.payload().offset == cursor) out.insert(&l);
      cursor = saturatingEnd(l.payload().offset, l.payload().size);
    });
  }
  return out;
}

} // namespace brevis
