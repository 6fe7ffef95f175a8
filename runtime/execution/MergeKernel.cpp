#include "runtime/execution/MergeKernel.h"

#include "lang/MergeLayout.h"
#include "runtime/codecs/LitDecode.h"
#include "runtime/common/MapConstants.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
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
  const Map *columns = nullptr; ///< `map add|xor [c0, …]` over the literal, or null
};

/// `map add [c0, …] (lit …)` or `map xor [c0, …] (lit …)`: a literal whose words take
/// constants by position (the synthesizer's column constants on an exponent field).
bool isPeriodicMapOfLit(const Expr &e) {
  const Map *m = dynAs<Map>(e);
  return m && !m->periodic.empty() && (m->fn == MapFn::Add || m->fn == MapFn::Xor) && m->body->kind == NodeKind::Lit;
}

/// Most significant field first, as merge lists them; a lone literal is one field.
bool collectFields(const Expr &e, std::vector<const Expr *> &out) {
  if (e.kind == NodeKind::Lit || e.kind == NodeKind::Const) {
    out.push_back(&e);
    return true;
  }
  if (e.kind != NodeKind::Merge) return false;
  for (const auto &f : as<Merge>(e).fields)
    if (f.expr->kind != NodeKind::Lit && f.expr->kind != NodeKind::Const && !isPeriodicMapOfLit(*f.expr)) return false;
    else out.push_back(f.expr.get());
  return true;
}

/// The width of the words a merge of `fields` (collectFields) makes: the sum of theirs (a
/// periodic map's is its literal's). streamTypeOf types the whole tree again, a vector per node,
/// for every piece decoded: 0.5% of the instructions of decoding a checkpoint of small tensors.
unsigned mergedWidth(const std::vector<const Expr *> &fields) {
  unsigned width = 0;
  for (const Expr *x : fields) {
    if (isPeriodicMapOfLit(*x)) x = as<Map>(*x).body.get();
    width += x->kind == NodeKind::Const ? as<Const>(*x).type.width : as<Lit>(*x).type.width;
  }
  return width;
}

/// The field's column constants applied to its words w (of words [position, position + n)).
template <typename T> void applyColumns(const Field &f, T *w, size_t n, uint64_t position) {
  applyMapConstants(f.columns->fn, f.columns->periodic, f.columns->per, f.width, position, w, n);
}

// Several copies of a loop, one per instruction set, chosen by the loader (BREVIS_MULTIVERSION
// in CMakeLists.txt); without, the baseline x86-64 one.
#if BREVIS_MULTIVERSION
#define BREVIS_CLONES(...) [[gnu::target_clones(__VA_ARGS__)]]
#else
#define BREVIS_CLONES(...)
#endif

// The merge step field by field (lang/MergeLayout.h), vectorized (AVX2 where the CPU has it).
#define BREVIS_SHIFT_OR(T)                                                                                             \
  BREVIS_CLONES("avx2", "default") void shiftOr(T *__restrict a, const T *__restrict p, size_t n,            \
                                                         unsigned w) {                                                 \
    for (size_t i = 0; i < n; ++i) a[i] = mergeShiftIn(a[i], p[i], w);                                         \
  }                                                                                                                    \
  BREVIS_CLONES("avx2", "default") void shiftOrConst(T *__restrict a, T c, size_t n, unsigned w) {            \
    for (size_t i = 0; i < n; ++i) a[i] = mergeShiftIn(a[i], c, w);                                            \
  }
BREVIS_SHIFT_OR(uint8_t)
BREVIS_SHIFT_OR(uint16_t)
BREVIS_SHIFT_OR(uint32_t)
#undef BREVIS_SHIFT_OR

/// A chunk of T words written in place into the sink, or (if its buffer is not aligned for T)
/// into a local buffer and copied.
template <typename T> class OutputChunk {
public:
  OutputChunk(ByteSink &sink, std::vector<T> &local, size_t n) : sink_(sink), n_(n) {
    uint8_t *p = sink.reserve(n * sizeof(T));
    if (reinterpret_cast<uintptr_t>(p) % alignof(T) == 0) {
      words_ = reinterpret_cast<T *>(p);
    } else {
      local.resize(std::max(local.size(), n));
      words_ = local.data();
      local_ = true;
    }
  }
  T *words() { return words_; }
  Result<void> commit() {
    auto *bytes = reinterpret_cast<const uint8_t *>(words_); // little-endian host
    return local_ ? sink_.write(bytes, n_ * sizeof(T)) : sink_.commit(n_ * sizeof(T));
  }

private:
  ByteSink &sink_;
  size_t n_;
  T *words_ = nullptr;
  bool local_ = false;
};

/// Field by field: each decoded into T words and shifted into the accumulator.
template <typename T>
Result<void> runShiftOr(std::vector<Field> &fields, const Payload &payload, uint64_t first, uint64_t count,
                        ByteSink &sink) {
  const size_t chunk = static_cast<size_t>(std::min<uint64_t>(kFusedChunkWords, count));
  auto part = std::make_unique_for_overwrite<T[]>(fields.size() > 1 ? chunk : 0); // written before read
  std::vector<T> local;
  for (uint64_t done = 0; done < count;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, count - done));
    OutputChunk<T> out(sink, local, n);
    T *acc = out.words();
    for (size_t k = 0; k < fields.size(); ++k) {
      Field &f = fields[k];
      T *dst = k == 0 ? acc : part.get();
      if (!f.lit) {
        if (k == 0) std::fill_n(dst, n, static_cast<T>(f.value));
      } else if (f.cursor) {
        BREVIS_TRY(f.cursor->readNarrow(dst, n));
      } else {
        decodeLitNarrow(*f.lit, payload, first + done, n, dst);
      }
      if (f.columns) applyColumns(f, dst, n, first + done);
      if (k == 0) continue;
      if (!f.lit) shiftOrConst(acc, static_cast<T>(f.value), n, f.width);
      else shiftOr(acc, part.get(), n, f.width);
    }
    BREVIS_TRY(out.commit());
    done += n;
  }
  return {};
}

// out = c | a << sa | b << sb | ...: a whole merge of byte-sized fields in one pass. The
// shifts are multiplications by 2^s of type T, so that the vectorizer keeps T-wide lanes
// (a shift by a variable count would be done on 32-bit lanes after C++'s integer promotion).
#define BREVIS_COMBINE_BYTES(T)                                                                                        \
  BREVIS_CLONES("arch=x86-64-v4", "avx2", "default") void combine(T *__restrict out, T c, size_t n,        \
                                                                            const uint8_t *__restrict a, T ma) {       \
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(c | T(a[i] * ma));                                         \
  }                                                                                                                    \
  BREVIS_CLONES("arch=x86-64-v4", "avx2", "default") void combine(                                          \
      T *__restrict out, T c, size_t n, const uint8_t *__restrict a, T ma, const uint8_t *__restrict b, T mb) {        \
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(c | T(a[i] * ma) | T(b[i] * mb));                          \
  }                                                                                                                    \
  BREVIS_CLONES("arch=x86-64-v4", "avx2", "default") void combine(                                          \
      T *__restrict out, T c, size_t n, const uint8_t *__restrict a, T ma, const uint8_t *__restrict b, T mb,          \
      const uint8_t *__restrict d, T md) {                                                                             \
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(c | T(a[i] * ma) | T(b[i] * mb) | T(d[i] * md));          \
  }                                                                                                                    \
  BREVIS_CLONES("arch=x86-64-v4", "avx2", "default") void combine(                                          \
      T *__restrict out, T c, size_t n, const uint8_t *__restrict a, T ma, const uint8_t *__restrict b, T mb,          \
      const uint8_t *__restrict d, T md, const uint8_t *__restrict e, T me) {                                          \
    for (size_t i = 0; i < n; ++i)                                                                                     \
      out[i] = static_cast<T>(c | T(a[i] * ma) | T(b[i] * mb) | T(d[i] * md) | T(e[i] * me));                        \
  }
BREVIS_COMBINE_BYTES(uint8_t)
BREVIS_COMBINE_BYTES(uint16_t)
BREVIS_COMBINE_BYTES(uint32_t)
#undef BREVIS_COMBINE_BYTES

constexpr size_t kMaxByteFields = 4;

/// Whether runBytes() takes these fields: one to four literals of at most 8 bits (and any
/// constants). The common case: BF16 and F16 split into sign, exponent and mantissa, FP8.
bool byteFieldsApply(const std::vector<Field> &fields) {
  size_t lits = 0;
  for (const Field &f : fields)
    if (f.lit && (++lits > kMaxByteFields || f.width > 8)) return false;
  return lits > 0;
}

/// Every literal field decoded into bytes, then all of them merged straight into the output
/// in one pass: a third of runShiftOr's memory traffic.
template <typename T>
Result<void> runBytes(std::vector<Field> &fields, const Payload &payload, uint64_t first, uint64_t count,
                      ByteSink &sink) {
  const size_t chunk = static_cast<size_t>(std::min<uint64_t>(kFusedChunkWords, count));
  std::vector<unsigned> widths;
  for (const Field &f : fields) widths.push_back(f.width);
  const std::vector<unsigned> shifts = mergeFieldShifts(widths);
  std::vector<Field *> lits;
  std::vector<T> scale; // 2^shift
  T constant = 0;
  for (size_t k = 0; k < fields.size(); ++k) {
    if (fields[k].lit) {
      lits.push_back(&fields[k]);
      scale.push_back(static_cast<T>(uint64_t{1} << shifts[k]));
    } else {
      constant = static_cast<T>(constant | static_cast<T>(fields[k].value) << shifts[k]);
    }
  }
  // Every byte of a part is written before it is read: no need to zero them.
  auto parts = std::make_unique_for_overwrite<uint8_t[]>(lits.size() * chunk);
  std::vector<T> local;
  for (uint64_t done = 0; done < count;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, count - done));
    const uint8_t *p[kMaxByteFields] = {};
    for (size_t k = 0; k < lits.size(); ++k) {
      uint8_t *part = parts.get() + k * chunk;
      p[k] = part;
      if (!lits[k]->cursor) {
        decodeLitNarrow(*lits[k]->lit, payload, first + done, n, part);
      } else if (lits[k]->columns) { // changed below: not read in place
        BREVIS_TRY(lits[k]->cursor->read8(part, n));
      } else {
        // Entropy-coded fields are read where their block was decoded, when it holds the chunk.
        auto inPlace = lits[k]->cursor->readInPlace8(n);
        if (!inPlace) return inPlace.error();
        if (*inPlace) p[k] = *inPlace;
        else BREVIS_TRY(lits[k]->cursor->read8(part, n));
      }
      if (lits[k]->columns) applyColumns(*lits[k], part, n, first + done);
    }
    OutputChunk<T> out(sink, local, n);
    const T *s = scale.data();
    switch (lits.size()) {
    case 1: combine(out.words(), constant, n, p[0], s[0]); break;
    case 2: combine(out.words(), constant, n, p[0], s[0], p[1], s[1]); break;
    case 3: combine(out.words(), constant, n, p[0], s[0], p[1], s[1], p[2], s[2]); break;
    default: combine(out.words(), constant, n, p[0], s[0], p[1], s[1], p[2], s[2], p[3], s[3]); break;
    }
    BREVIS_TRY(out.commit());
    done += n;
  }
  return {};
}

template <typename T>
Result<void> run(std::vector<Field> &fields, const Payload &payload, uint64_t first, uint64_t count, ByteSink &sink) {
  if (byteFieldsApply(fields)) return runBytes<T>(fields, payload, first, count, sink);
  return runShiftOr<T>(fields, payload, first, count, sink);
}

} // namespace

bool fusedKernelApplies(const Expr &e) {
  std::vector<const Expr *> fields;
  if (!collectFields(e, fields)) return false;
  const unsigned width = mergedWidth(fields);
  assert(width == streamTypeOf(e).width);
  return containerBytes(width) <= 4;
}

Result<void> decodeFused(const Expr &e, const Payload &payload, uint64_t first, uint64_t count, ByteSink &sink) {
  std::vector<const Expr *> exprs;
  collectFields(e, exprs);
  std::vector<Field> fields;
  unsigned width = 0; // the merged words': the sum of the fields' (mergedWidth)
  for (const Expr *x : exprs) {
    Field f;
    if (isPeriodicMapOfLit(*x)) {
      f.columns = &as<Map>(*x);
      x = f.columns->body.get();
    }
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
    width += f.width;
    fields.push_back(std::move(f));
  }
  switch (containerBytes(width)) {
  case 1: return run<uint8_t>(fields, payload, first, count, sink);
  case 2: return run<uint16_t>(fields, payload, first, count, sink);
  default: return run<uint32_t>(fields, payload, first, count, sink);
  }
}

} // namespace brevis
