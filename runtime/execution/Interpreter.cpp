#include "runtime/execution/Interpreter.h"

#include "lang/MergeLayout.h"
#include "lang/OperatorTyping.h"
#include "runtime/codecs/LitDecode.h"
#include "runtime/execution/MergeKernel.h"
#include "runtime/common/MapConstants.h"
#include "runtime/common/WordOps.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <cstring>

namespace brevis {

namespace {

// Pull-based streaming: every node is a Reader that produces its words in order, at most
// Interpreter::kChunkWords per call. reset() rewinds it (repeat replays its body).
/// The first decoding error of a run; readers stop producing meaningful words after it, and
/// the driver checks it after every chunk.
struct RunState {
  std::optional<Error> error;
};

class Reader {
public:
  explicit Reader(StreamType t) : type(t) {}
  virtual ~Reader() = default;
  /// Produces the next n words (n <= kChunkWords, and no more than remain).
  virtual void read(uint64_t *out, size_t n) = 0;
  virtual void reset() = 0;
  /// Moves past the next n words (no more than remain). Nodes whose words can be located
  /// without producing the ones before them override this; the default produces and drops them.
  virtual void skip(uint64_t n) {
    uint64_t scratch[256];
    while (n) {
      size_t take = static_cast<size_t>(std::min<uint64_t>(n, std::size(scratch)));
      read(scratch, take);
      n -= take;
    }
  }
  const StreamType type;
};
using ReaderPtr = std::unique_ptr<Reader>;

Result<ReaderPtr> makeReader(const Expr &e, const Payload &payload, RunState &state);

class LitReader final : public Reader {
public:
  LitReader(StreamType t, std::unique_ptr<LitCursor> cursor, RunState &state)
      : Reader(t), cursor_(std::move(cursor)), state_(state) {}
  void read(uint64_t *out, size_t n) override {
    auto r = cursor_->read(out, n);
    if (!r && !state_.error) state_.error = r.error();
  }
  void reset() override { cursor_->reset(); }
  void skip(uint64_t n) override {
    auto r = cursor_->skip(n);
    if (!r && !state_.error) state_.error = r.error();
  }

private:
  std::unique_ptr<LitCursor> cursor_;
  RunState &state_;
};

class ConstReader final : public Reader {
public:
  explicit ConstReader(const Const &c) : Reader(c.type), value_(c.value) {}
  void read(uint64_t *out, size_t n) override { std::fill_n(out, n, value_); }
  void reset() override {}
  void skip(uint64_t) override {}

private:
  uint64_t value_;
};

class ConcatReader final : public Reader {
public:
  ConcatReader(StreamType t, std::vector<ReaderPtr> parts) : Reader(t), parts_(std::move(parts)) {}
  void read(uint64_t *out, size_t n) override {
    advance(n, [&](Reader &part, uint64_t take) {
      part.read(out, static_cast<size_t>(take));
      out += take;
    });
  }
  void reset() override {
    for (auto &p : parts_) p->reset();
    index_ = 0;
    pos_ = 0;
  }
  void skip(uint64_t n) override {
    advance(n, [](Reader &part, uint64_t take) { part.skip(take); });
  }

private:
  /// Walks n words forward across parts, handing each part its share to `step`.
  template <typename Step> void advance(uint64_t n, Step step) {
    while (n) {
      Reader &part = *parts_[index_];
      uint64_t left = part.type.length - pos_;
      if (left == 0) {
        ++index_;
        pos_ = 0;
        continue;
      }
      uint64_t take = std::min(left, n);
      step(part, take);
      n -= take;
      pos_ += take;
    }
  }

  std::vector<ReaderPtr> parts_;
  size_t index_ = 0;
  uint64_t pos_ = 0;
};

class RepeatReader final : public Reader {
public:
  RepeatReader(StreamType t, ReaderPtr body) : Reader(t), body_(std::move(body)) {}
  void read(uint64_t *out, size_t n) override {
    while (n) {
      if (pos_ == body_->type.length) {
        body_->reset();
        pos_ = 0;
      }
      size_t take = static_cast<size_t>(std::min<uint64_t>(body_->type.length - pos_, n));
      body_->read(out, take);
      out += take;
      n -= take;
      pos_ += take;
    }
  }
  void reset() override {
    body_->reset();
    pos_ = 0;
  }
  void skip(uint64_t n) override {
    const uint64_t period = body_->type.length; // > 0 when there is anything to skip
    if (n == 0) return;
    if (n >= period - pos_) { // to the end of this pass, then whole passes, then into the next
      n -= period - pos_;
      n %= period;
      body_->reset();
      pos_ = 0;
    }
    body_->skip(n);
    pos_ += n;
  }

private:
  ReaderPtr body_;
  uint64_t pos_ = 0;
};

class MapReader final : public Reader {
public:
  MapReader(StreamType t, const Map &m, ReaderPtr body)
      : Reader(t), fn_(m.fn), param_(m.param), periodic_(m.periodic), per_(m.per), body_(std::move(body)) {}
  void read(uint64_t *out, size_t n) override {
    body_->read(out, n);
    if (!periodic_.empty()) return applyPeriodic(out, n, type.width);
    at_ += n;
    // One loop per function, so that each is a tight (vectorizable) loop.
    const unsigned width = type.width;
    switch (fn_) {
    case MapFn::Xor: return apply<MapFn::Xor>(out, n, width);
    case MapFn::Add: return apply<MapFn::Add>(out, n, width);
    case MapFn::ZigZag: return apply<MapFn::ZigZag>(out, n, width);
    case MapFn::Gray: return apply<MapFn::Gray>(out, n, width);
    case MapFn::Rotl: return apply<MapFn::Rotl>(out, n, width);
    case MapFn::BitRev: return apply<MapFn::BitRev>(out, n, width);
    }
  }
  void reset() override {
    body_->reset();
    at_ = 0;
  }
  void skip(uint64_t n) override {
    body_->skip(n);
    at_ += n;
  }

private:
  template <MapFn Fn> void apply(uint64_t *out, size_t n, unsigned width) const {
    for (size_t i = 0; i < n; ++i) out[i] = applyMap(Fn, param_, width, out[i]);
  }
  /// xor or add of the list's constants in turn, from the one for the next word's position.
  void applyPeriodic(uint64_t *out, size_t n, unsigned width) {
    applyMapConstants(fn_, periodic_, per_, width, at_, out, n);
    at_ += n;
  }

  MapFn fn_;
  uint64_t param_;
  std::vector<uint64_t> periodic_;
  uint64_t per_;
  uint64_t at_ = 0; ///< the position of the next word
  ReaderPtr body_;
};

class ScanReader final : public Reader {
public:
  ScanReader(StreamType t, const Scan &s, ReaderPtr body) : Reader(t), op_(s.op), init_(s.init), body_(std::move(body)) {}
  void read(uint64_t *out, size_t n) override {
    if (n == 0) return;
    size_t i = 0;
    if (!started_) {
      out[0] = acc_ = init_;
      started_ = true;
      i = 1;
    }
    body_->read(out + i, n - i);
    uint64_t acc = acc_;
    if (op_ == ScanOp::Xor) {
      for (; i < n; ++i) out[i] = acc ^= out[i];
    } else {
      const uint64_t mask = widthMask(type.width);
      for (; i < n; ++i) out[i] = acc = (acc + out[i]) & mask;
    }
    acc_ = acc;
  }
  void reset() override {
    body_->reset();
    started_ = false;
  }

private:
  ScanOp op_;
  uint64_t init_;
  ReaderPtr body_;
  uint64_t acc_ = 0;
  bool started_ = false;
};

class MergeReader final : public Reader {
public:
  MergeReader(StreamType t, std::vector<ReaderPtr> fields)
      : Reader(t), fields_(std::move(fields)),
        scratch_(static_cast<size_t>(std::min<uint64_t>(Interpreter::kChunkWords, t.length))) {}
  void read(uint64_t *out, size_t n) override {
    fields_[0]->read(out, n);
    for (size_t f = 1; f < fields_.size(); ++f) {
      unsigned w = fields_[f]->type.width; // < 64: widths sum to at most 64 and field 0 has >= 1
      fields_[f]->read(scratch_.data(), n);
      for (size_t i = 0; i < n; ++i) out[i] = mergeShiftIn(out[i], scratch_[i], w);
    }
  }
  void reset() override {
    for (auto &f : fields_) f->reset();
  }
  void skip(uint64_t n) override {
    for (auto &f : fields_) f->skip(n);
  }

private:
  std::vector<ReaderPtr> fields_;
  std::vector<uint64_t> scratch_;
};

Result<ReaderPtr> makeReader(const Expr &e, const Payload &payload, RunState &state) {
  // The children's readers first; the node's type follows from theirs by its typing rule.
  std::vector<ReaderPtr> rs;
  std::vector<StreamType> childTypes;
  std::optional<Error> error;
  forEachChild(e, [&](const Expr &child) {
    if (error) return;
    auto r = makeReader(child, payload, state);
    if (!r) {
      error = r.error();
      return;
    }
    childTypes.push_back((*r)->type);
    rs.push_back(std::move(*r));
  });
  if (error) return *error;
  const StreamType t = checkedOperatorType(e, childTypes);
  switch (e.kind) {
  case NodeKind::Lit: {
    auto cursor = LitCursor::open(as<Lit>(e), payload);
    if (!cursor) return cursor.error();
    return ReaderPtr(std::make_unique<LitReader>(t, std::move(*cursor), state));
  }
  case NodeKind::Const: return ReaderPtr(std::make_unique<ConstReader>(as<Const>(e)));
  case NodeKind::Concat: return ReaderPtr(std::make_unique<ConcatReader>(t, std::move(rs)));
  case NodeKind::Repeat: return ReaderPtr(std::make_unique<RepeatReader>(t, std::move(rs[0])));
  case NodeKind::Map: return ReaderPtr(std::make_unique<MapReader>(t, as<Map>(e), std::move(rs[0])));
  case NodeKind::Scan: return ReaderPtr(std::make_unique<ScanReader>(t, as<Scan>(e), std::move(rs[0])));
  case NodeKind::Merge: return ReaderPtr(std::make_unique<MergeReader>(t, std::move(rs)));
  case NodeKind::Hole: break;
  }
  __builtin_trap(); // callers reject holes before execution
}

} // namespace

Result<void> validateForExecution(const Expr &e, const Payload &payload) {
  switch (e.kind) {
  case NodeKind::Hole:
    return Error{fmt::format("the program has a hole at line {}, column {}; fill it before running", e.loc.line,
                             e.loc.column)};
  case NodeKind::Lit: {
    auto valid = validateLit(as<Lit>(e), payload);
    if (!valid) return Error{valid.error().message, e.loc}; // reported where the literal is written
    return valid;
  }
  case NodeKind::Const: return {};
  case NodeKind::Concat:
  case NodeKind::Repeat:
  case NodeKind::Map:
  case NodeKind::Scan:
  case NodeKind::Merge: {
    Result<void> valid;
    forEachChild(e, [&](const Expr &c) {
      if (valid) valid = validateForExecution(c, payload);
    });
    return valid;
  }
  }
  __builtin_trap(); // not a NodeKind
}

namespace {

/// Streams words [first, first + count) of `e` to `consume(rootType, words, n)` chunk by chunk;
/// stops at the first decoding error or at the first error `consume` returns.
template <typename Consume>
Result<void> stream(const Expr &e, const Payload &payload, uint64_t first, uint64_t count, Consume consume) {
  RunState state;
  auto root = makeReader(e, payload, state);
  if (!root) return root.error();
  Reader &r = **root;
  r.skip(first);
  if (state.error) return *state.error;
  std::vector<uint64_t> words(Interpreter::kChunkWords);
  for (uint64_t done = 0; done < count;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(Interpreter::kChunkWords, count - done));
    r.read(words.data(), n);
    if (state.error) return *state.error;
    BREVIS_TRY(consume(r.type, words.data(), n));
    done += n;
  }
  return {};
}

void storeLE(const uint64_t *words, size_t n, unsigned cb, uint8_t *out) {
  for (size_t i = 0; i < n; ++i) std::memcpy(out + i * cb, &words[i], cb); // little-endian host
}

} // namespace

namespace {

/// Below this period, a repeat's passes are too short to decode each as a range of its own.
constexpr uint64_t kMinRangePeriod = 4096;

/// Words [first, first + count) of `e` to `sink`. Merges of literals and constants run in the
/// fused kernel; a concat, or a repeat of long periods, is split into ranges of its parts (or
/// passes), each decoded the same way; anything else streams through the readers.
Result<void> decodeRange(const Expr &e, const Payload &payload, uint64_t first, uint64_t count, ByteSink &sink) {
  if (fusedKernelApplies(e)) return decodeFused(e, payload, first, count, sink);
  if (const auto *c = dynAs<Concat>(e)) {
    uint64_t start = 0; // of the current part
    for (const auto &part : c->parts) {
      if (count == 0) break;
      const uint64_t length = streamTypeOf(*part).length;
      if (first < start + length) {
        const uint64_t take = std::min(start + length - first, count);
        BREVIS_TRY(decodeRange(*part, payload, first - start, take, sink));
        first += take;
        count -= take;
      }
      start += length;
    }
    return {};
  }
  if (const auto *r = dynAs<Repeat>(e)) {
    const uint64_t period = streamTypeOf(*r->body).length;
    if (period >= kMinRangePeriod) {
      while (count > 0) {
        const uint64_t at = first % period, take = std::min(period - at, count);
        BREVIS_TRY(decodeRange(*r->body, payload, at, take, sink));
        first += take;
        count -= take;
      }
      return {};
    }
  }
  std::vector<uint8_t> bytes(Interpreter::kChunkWords * 8);
  return stream(e, payload, first, count, [&](StreamType t, const uint64_t *words, size_t n) {
    unsigned cb = containerBytes(t.width);
    storeLE(words, n, cb, bytes.data());
    return sink.write(bytes.data(), n * cb);
  });
}

} // namespace

Result<void> Interpreter::decodeWords(const Region &region, const Payload &payload, uint64_t first, uint64_t count,
                                      ByteSink &sink) {
  // The caller validated the program (RegionDecoder's contract); see validatePayload().
  return decodeRange(*region.program, payload, first, count, sink);
}

Result<std::vector<uint64_t>> evaluateWords(const Expr &e, const Payload &payload) {
  BREVIS_TRY(validateForExecution(e, payload));
  std::vector<uint64_t> out;
  BREVIS_TRY(stream(e, payload, 0, streamTypeOf(e).length, [&](StreamType, const uint64_t *words, size_t n) -> Result<void> {
    out.insert(out.end(), words, words + n);
    return {};
  }));
  return out;
}

Result<void> evaluateTo(const Expr &e, const Payload &payload, ByteSink &sink) {
  BREVIS_TRY(validateForExecution(e, payload));
  std::vector<uint8_t> bytes(Interpreter::kChunkWords * 8);
  return stream(e, payload, 0, streamTypeOf(e).length, [&](StreamType t, const uint64_t *words, size_t n) {
    unsigned cb = containerBytes(t.width);
    storeLE(words, n, cb, bytes.data());
    return sink.write(bytes.data(), n * cb);
  });
}

Result<Bytes> evaluate(const Expr &e, const Payload &payload) {
  Bytes out;
  VectorSink sink(out);
  BREVIS_TRY(evaluateTo(e, payload, sink));
  return out;
}

} // namespace brevis
