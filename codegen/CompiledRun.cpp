#include "codegen/CompiledRun.h"

#include "codegen/ShapeKey.h"
#include "lang/BitpackFormat.h"
#include "runtime/codecs/LitDecode.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace brevis::jit {

namespace {

/// The first decoding error of a run: the callbacks record it and produce zeros after it; the
/// driver checks it after every call.
struct RunState {
  std::optional<Error> error;
};

/// A cursor-decoded literal as generated code sees it: the handle its callbacks receive.
struct LitStream {
  std::unique_ptr<LitCursor> cursor;
  unsigned containerBytes = 8;
  RunState *state = nullptr;

  void fail(Error e) {
    if (!state->error) state->error = std::move(e);
  }
};

void readStream(void *handle, void *out, uint64_t n) {
  auto &s = *static_cast<LitStream *>(handle);
  if (!s.state->error) {
    Result<void> r;
    switch (s.containerBytes) {
    case 1: r = s.cursor->read8(static_cast<uint8_t *>(out), n); break;
    case 2: r = s.cursor->read16(static_cast<uint16_t *>(out), n); break;
    case 4: r = s.cursor->read32(static_cast<uint32_t *>(out), n); break;
    default: r = s.cursor->read(static_cast<uint64_t *>(out), n); break;
    }
    if (r) return;
    s.fail(r.error());
  }
  std::memset(out, 0, n * s.containerBytes);
}

void skipStream(void *handle, uint64_t n) {
  auto &s = *static_cast<LitStream *>(handle);
  if (s.state->error) return;
  if (auto r = s.cursor->skip(n); !r) s.fail(r.error());
}

void resetStream(void *handle) {
  auto &s = *static_cast<LitStream *>(handle);
  if (!s.state->error) s.cursor->reset();
}

const void *viewStream(void *handle, void *scratch, uint64_t n) {
  auto &s = *static_cast<LitStream *>(handle);
  if (s.containerBytes == 1 && !s.state->error) {
    auto inPlace = s.cursor->readInPlace8(n);
    if (!inPlace) s.fail(inPlace.error());
    else if (*inPlace) return *inPlace;
  }
  readStream(handle, scratch, n);
  return scratch;
}

constexpr LitStreamCallbacks kStreamCallbacks{readStream, skipStream, resetStream, viewStream};

} // namespace

uint64_t chunkWords(unsigned width) { return kChunkBytes / containerBytes(width); }

size_t nodesUpTo(const Expr &e, size_t limit) {
  size_t seen = 0;
  std::function<void(const Expr &)> visit = [&](const Expr &node) {
    if (++seen > limit) return;
    forEachChild(node, [&](const Expr &child) {
      if (seen <= limit) visit(child);
    });
  };
  visit(e);
  return seen;
}

Result<void> checkWordRange(const Region &region, uint64_t first, uint64_t count) {
  const StreamType type = streamTypeOf(*region.program);
  const unsigned wordBytes = containerBytes(type.width);
  const uint64_t words = type.length;
  uint64_t bytes;
  if (__builtin_mul_overflow(words, wordBytes, &bytes) || bytes != region.bytes.size)
    return Error{fmt::format("region at byte {} holds {} bytes, but its program produces {} words of {} bytes",
                             region.bytes.offset, region.bytes.size, words, wordBytes)};
  if (first > words || count > words - first)
    return Error{fmt::format("words {}+{} lie outside the region's {} words", first, count, words)};
  return {};
}

Result<void> runCompiled(DecodeFn fn, const FrameLayout &layout, const Region &region, const Payload &payload,
                         uint64_t first, uint64_t count, ByteSink &sink) {
  const Expr &root = *region.program;
  const unsigned wordBytes = containerBytes(streamTypeOf(root).width);
  const uint64_t maxWords = chunkWords(streamTypeOf(root).width);
  // Raw and bit-packed literals are read in place by the generated code; the others through a
  // cursor the generated code calls back into (kStreamCallbacks).
  std::vector<const Lit *> literals;
  operandLiterals(root, literals);
  RunState state;
  std::vector<LitStream> streams(literals.size());
  std::vector<const void *> operands(literals.size() + kLitStreamCallbackCount);
  for (size_t k = 0; k < literals.size(); ++k) {
    const Lit &l = *literals[k];
    const uint8_t *bytes = payload.data() + l.payload().offset;
    if (!readsThroughCursor(l, payload)) {
      operands[k] = l.encoding == Encoding::Bitpack ? bitpackBody(bytes) : bytes;
      continue;
    }
    auto cursor = LitCursor::open(l, payload);
    if (!cursor) return cursor.error();
    streams[k] = LitStream{std::move(*cursor), containerBytes(l.type.width), &state};
    operands[k] = &streams[k];
  }
  operands[literals.size()] = reinterpret_cast<const void *>(kStreamCallbacks.read);
  operands[literals.size() + 1] = reinterpret_cast<const void *>(kStreamCallbacks.skip);
  operands[literals.size() + 2] = reinterpret_cast<const void *>(kStreamCallbacks.reset);
  operands[literals.size() + 3] = reinterpret_cast<const void *>(kStreamCallbacks.view);
  static_assert(kLitStreamCallbackCount == 4);

  std::vector<uint64_t> frame(layout.stateSlots);
  auto scratch = std::make_unique_for_overwrite<uint64_t[]>(layout.scratchBytes / 8 + 1);
  std::unique_ptr<uint64_t[]> chunk; // where words go when the sink's buffer is not aligned for them
  for (uint64_t done = 0; done < count;) {
    const uint64_t n = std::min(maxWords, count - done);
    // Written in place: into the sink's own buffer where it has one (the writer's), else into
    // its scratch. The runtime's cursors store whole words there, so it must be aligned for them.
    uint8_t *out = sink.reserve(n * wordBytes);
    const bool inPlace = reinterpret_cast<uintptr_t>(out) % wordBytes == 0;
    if (!inPlace) {
      if (!chunk) chunk = std::make_unique_for_overwrite<uint64_t[]>(kChunkBytes / 8);
      out = reinterpret_cast<uint8_t *>(chunk.get());
    }
    fn(out, done == 0 ? first : 0, n, operands.data(), frame.data(), reinterpret_cast<uint8_t *>(scratch.get()));
    if (state.error) return *state.error;
    BREVIS_TRY(inPlace ? sink.commit(n * wordBytes) : sink.write(out, n * wordBytes));
    done += n;
  }
  return {};
}

} // namespace brevis::jit
