#include "runtime/MergeKernel.h"

#include "runtime/LitDecode.h"

#include <algorithm>
#include <memory>
#include <vector>

namespace brevis {

namespace {

/// Words per chunk: the accumulator and one field buffer stay in L1/L2.
constexpr size_t kFusedChunkWords = 16384;

struct Field {
  unsigned width;
  const Lit *lit = nullptr; ///< null: a constant
  uint64_t value = 0;
  std::unique_ptr<LitCursor> cursor;
};

/// Most significant field first, as merge lists them; a lone literal is one field.
bool collectFields(const Expr &e, std::vector<const Expr *> &out) {
  if (e.kind == NodeKind::Lit || e.kind == NodeKind::Const) {
    out.push_back(&e);
    return true;
  }
  if (e.kind != NodeKind::Merge) return false;
  for (const auto &f : as<Merge>(e).fields)
    if (f.expr->kind != NodeKind::Lit && f.expr->kind != NodeKind::Const) return false;
    else out.push_back(f.expr.get());
  return true;
}

// acc = (acc << w) | part, the merge step, vectorized (AVX2 where the CPU has it).
#define BREVIS_SHIFT_OR(T)                                                                                             \
  [[gnu::target_clones("avx2", "default")]] void shiftOr(T *__restrict a, const T *__restrict p, size_t n,            \
                                                         unsigned w) {                                                 \
    for (size_t i = 0; i < n; ++i) a[i] = static_cast<T>((a[i] << w) | p[i]);                                         \
  }                                                                                                                    \
  [[gnu::target_clones("avx2", "default")]] void shiftOrConst(T *__restrict a, T c, size_t n, unsigned w) {            \
    for (size_t i = 0; i < n; ++i) a[i] = static_cast<T>((a[i] << w) | c);                                            \
  }
BREVIS_SHIFT_OR(uint8_t)
BREVIS_SHIFT_OR(uint16_t)
BREVIS_SHIFT_OR(uint32_t)
#undef BREVIS_SHIFT_OR

template <typename T>
Result<void> run(std::vector<Field> &fields, const Payload &payload, uint64_t first, uint64_t count, ByteSink &sink) {
  std::vector<T> acc(static_cast<size_t>(std::min<uint64_t>(kFusedChunkWords, count)));
  std::vector<T> part(fields.size() > 1 ? acc.size() : 0);
  for (uint64_t done = 0; done < count;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(acc.size(), count - done));
    for (size_t k = 0; k < fields.size(); ++k) {
      Field &f = fields[k];
      T *dst = k == 0 ? acc.data() : part.data();
      if (!f.lit) {
        if (k == 0) std::fill_n(dst, n, static_cast<T>(f.value));
      } else if (f.cursor) {
        BREVIS_TRY(f.cursor->readNarrow(dst, n));
      } else {
        decodeLitNarrow(*f.lit, payload, first + done, n, dst);
      }
      if (k == 0) continue;
      if (!f.lit) shiftOrConst(acc.data(), static_cast<T>(f.value), n, f.width);
      else shiftOr(acc.data(), part.data(), n, f.width);
    }
    BREVIS_TRY(sink.write(reinterpret_cast<const uint8_t *>(acc.data()), n * sizeof(T))); // little-endian host
    done += n;
  }
  return {};
}

} // namespace

bool fusedKernelApplies(const Expr &e) {
  std::vector<const Expr *> fields;
  if (!collectFields(e, fields)) return false;
  return containerBytes(streamTypeOf(e).width) <= 4;
}

Result<void> decodeFused(const Expr &e, const Payload &payload, uint64_t first, uint64_t count, ByteSink &sink) {
  std::vector<const Expr *> exprs;
  collectFields(e, exprs);
  std::vector<Field> fields;
  for (const Expr *x : exprs) {
    Field f;
    if (x->kind == NodeKind::Const) {
      f.width = as<Const>(*x).type.width;
      f.value = as<Const>(*x).value;
    } else {
      f.lit = &as<Lit>(*x);
      f.width = f.lit->type.width;
      if (!isRandomAccess(*f.lit)) { // entropy-coded: decoded block by block from `first`
        auto cursor = LitCursor::open(*f.lit, payload);
        if (!cursor) return cursor.error();
        BREVIS_TRY((*cursor)->skip(first));
        f.cursor = std::move(*cursor);
      }
    }
    fields.push_back(std::move(f));
  }
  switch (containerBytes(streamTypeOf(e).width)) {
  case 1: return run<uint8_t>(fields, payload, first, count, sink);
  case 2: return run<uint16_t>(fields, payload, first, count, sink);
  default: return run<uint32_t>(fields, payload, first, count, sink);
  }
}

} // namespace brevis
