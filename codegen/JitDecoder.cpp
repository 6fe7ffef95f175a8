// The chunk driver: the RegionDecoder that looks up (or has the ORC session compile) the function
// for a region's program shape and runs it chunk by chunk (docs/jit.md).
#include "codegen/JitDecoder.h"

#include "codegen/DecodeFunctionEmitter.h"
#include "codegen/OrcSession.h"
#include "codegen/ShapeKey.h"
#include "lang/BitpackFormat.h"
#include "runtime/codecs/LitDecode.h"
#include "runtime/execution/Interpreter.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace brevis {

using jit::appendShapeKey;
using jit::operandLiterals;

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

constexpr jit::LitStreamCallbacks kStreamCallbacks{readStream, skipStream, resetStream, viewStream};

} // namespace

struct JitDecoder::Impl {
  Notice notice;
  std::unique_ptr<jit::OrcSession> session;
  /// Compiled functions by shape key (see appendShapeKey).
  std::unordered_map<std::string, jit::OrcSession::Compiled> functions;
  /// Guards functions and compilation when decodeWords() runs on several threads.
  std::mutex mutex;
  std::atomic<size_t> compiled{0};
  /// Programs too large to compile (kMaxCompiledNodes), and those after the session's budget
  /// (kMaxSessionNodes), are decoded by it.
  Interpreter interpreter;
  std::atomic<size_t> interpreted{0};
  /// Nodes of the shapes compiled or loaded so far (under `mutex` when decoding).
  size_t compiledNodes = 0;
  size_t nodeBudget = kMaxSessionNodes;
  bool noticedLarge = false, noticedBudget = false;

  /// Decodes with the interpreter, saying why once per reason.
  Result<void> interpret(const Region &region, const Payload &payload, uint64_t first, uint64_t count, ByteSink &sink,
                         bool overBudget) {
    {
      std::lock_guard lock(mutex);
      bool &noticed = overBudget ? noticedBudget : noticedLarge;
      if (!noticed && notice)
        notice(overBudget ? fmt::format("region at byte {}: the JIT has compiled programs of {} nodes in all, its "
                                        "budget; this and further new shapes are decoded by the interpreter",
                                        region.bytes.offset, nodeBudget)
                          : fmt::format("region at byte {}: a program of more than {} nodes is decoded by the "
                                        "interpreter",
                                        region.bytes.offset, kMaxCompiledNodes));
      noticed = true;
    }
    ++interpreted;
    return interpreter.decodeWords(region, payload, first, count, sink);
  }
  /// Setting up LLVM's session, and compiling (under `mutex` when decoding).
  std::chrono::steady_clock::duration setupTime{}, compileTime{};

  Result<void> compile(std::vector<jit::OrcSession::Batch> &batches) {
    const auto start = std::chrono::steady_clock::now();
    auto done = session->compile(batches, functions);
    compileTime += std::chrono::steady_clock::now() - start;
    return done;
  }
};

JitDecoder::JitDecoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JitDecoder::~JitDecoder() = default;

Result<std::unique_ptr<JitDecoder>> JitDecoder::create(Notice notice, const std::string &emitLlvm,
                                                      const std::string &cacheDir, size_t nodeBudget) {
  const auto start = std::chrono::steady_clock::now();
  auto session = jit::OrcSession::create(emitLlvm, cacheDir);
  if (!session) return session.error();
  auto impl = std::make_unique<Impl>();
  impl->setupTime = std::chrono::steady_clock::now() - start;
  impl->notice = std::move(notice);
  impl->nodeBudget = nodeBudget;
  impl->session = std::move(*session);
  return std::unique_ptr<JitDecoder>(new JitDecoder(std::move(impl)));
}

namespace {

/// The most words one call of a region's function produces: a chunk of output.
uint64_t chunkWords(unsigned width) { return JitDecoder::kChunkBytes / containerBytes(width); }

/// The nodes of `e`, counted up to limit + 1 (where counting stops).
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

} // namespace

Result<void> JitDecoder::prepare(const Checkpoint &c, const Payload &payload) {
  Impl &impl = *impl_;
  std::vector<std::pair<std::string, const Expr *>> todo;
  std::unordered_set<std::string> seen;
  for (const Region &region : c.regions) {
    if (!region.program) continue;
    const size_t nodes = nodesUpTo(*region.program, kMaxCompiledNodes);
    if (nodes > kMaxCompiledNodes) continue;
    std::string key;
    BREVIS_TRY(appendShapeKey(*region.program, payload, key));
    if (impl.functions.count(key) || seen.count(key)) continue;
    if (impl.compiledNodes + nodes > impl.nodeBudget) break; // decoding interprets the rest
    impl.compiledNodes += nodes;
    seen.insert(key);
    todo.emplace_back(std::move(key), region.program.get());
  }

  // One module per shape, so that each is cached on its own; the session compiles them
  // concurrently.
  std::vector<jit::OrcSession::Batch> batches;
  for (auto &[key, root] : todo)
    batches.push_back(impl.session->emit(std::move(key), *root, payload, chunkWords(streamTypeOf(*root).width)));
  return impl.compile(batches);
}

Result<void> JitDecoder::decodeWords(const Region &region, const Payload &payload, uint64_t first, uint64_t count,
                                     ByteSink &sink) {
  Impl &impl = *impl_;
  if (!region.program) return Error{fmt::format("region at byte {} has no program", region.bytes.offset)};
  const Expr &root = *region.program;
  const size_t nodes = nodesUpTo(root, kMaxCompiledNodes);
  if (nodes > kMaxCompiledNodes) return impl.interpret(region, payload, first, count, sink, /*overBudget=*/false);
  std::string key;
  BREVIS_TRY(appendShapeKey(root, payload, key)); // checks the types the code relies on
  const StreamType type = streamTypeOf(root);
  const unsigned wordBytes = containerBytes(type.width);
  const uint64_t words = type.length;
  uint64_t bytes;
  if (__builtin_mul_overflow(words, wordBytes, &bytes) || bytes != region.bytes.size)
    return Error{fmt::format("region at byte {} holds {} bytes, but its program produces {} words of {} bytes",
                             region.bytes.offset, region.bytes.size, words, wordBytes)};
  if (first > words || count > words - first)
    return Error{fmt::format("words {}+{} lie outside the region's {} words", first, count, words)};

  const uint64_t maxWords = chunkWords(type.width);
  jit::OrcSession::Compiled compiled;
  {
    std::unique_lock lock(impl.mutex);
    auto it = impl.functions.find(key);
    if (it == impl.functions.end() && impl.compiledNodes + nodes > impl.nodeBudget) {
      lock.unlock();
      return impl.interpret(region, payload, first, count, sink, /*overBudget=*/true);
    }
    if (it == impl.functions.end()) {
      impl.compiledNodes += nodes;
      std::vector<jit::OrcSession::Batch> batches;
      batches.push_back(impl.session->emit(key, root, payload, maxWords));
      BREVIS_TRY(impl.compile(batches));
      it = impl.functions.find(key);
    }
    compiled = it->second;
  }

  // Raw and bit-packed literals are read in place by the generated code; the others through a
  // cursor the generated code calls back into (kStreamCallbacks).
  std::vector<const Lit *> literals;
  operandLiterals(root, literals);
  RunState state;
  std::vector<LitStream> streams(literals.size());
  std::vector<const void *> operands(literals.size() + jit::kLitStreamCallbackCount);
  for (size_t k = 0; k < literals.size(); ++k) {
    const Lit &l = *literals[k];
    const uint8_t *bytes = payload.data() + l.payload().offset;
    if (!jit::readsThroughCursor(l, payload)) {
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
  static_assert(jit::kLitStreamCallbackCount == 4);

  std::vector<uint64_t> frame(compiled.layout.stateSlots);
  auto scratch = std::make_unique_for_overwrite<uint64_t[]>(compiled.layout.scratchBytes / 8 + 1);
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
    compiled.fn(out, done == 0 ? first : 0, n, operands.data(), frame.data(),
                reinterpret_cast<uint8_t *>(scratch.get()));
    if (state.error) return *state.error;
    BREVIS_TRY(inPlace ? sink.commit(n * wordBytes) : sink.write(out, n * wordBytes));
    done += n;
  }
  ++impl.compiled;
  return {};
}

std::string JitDecoder::summary() const {
  std::lock_guard lock(impl_->mutex);
  auto ms = [](std::chrono::steady_clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  const size_t functions = impl_->functions.size(), pieces = impl_->compiled, interpreted = impl_->interpreted;
  const size_t cached = impl_->session->cacheHits();
  return fmt::format("jit: {} function{} ({} compiled, {} from the cache) in {:.0f} ms (session set-up {:.0f} ms); "
                     "{} region piece{} decoded{}",
                     functions, functions == 1 ? "" : "s", functions - cached, cached, ms(impl_->compileTime),
                     ms(impl_->setupTime), pieces, pieces == 1 ? "" : "s",
                     interpreted ? fmt::format(", {} by the interpreter (programs of more than {} nodes, or past the "
                                               "budget of {} nodes compiled)",
                                               interpreted, kMaxCompiledNodes, impl_->nodeBudget)
                                 : "");
}

size_t JitDecoder::compiledRegions() const { return impl_->compiled; }
size_t JitDecoder::interpretedRegions() const { return impl_->interpreted; }
size_t JitDecoder::compiledFunctions() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->functions.size();
}

size_t JitDecoder::cachedFunctions() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->session->cacheHits();
}

} // namespace brevis
