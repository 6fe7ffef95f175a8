// The chunk driver: the RegionDecoder that looks up (or has the ORC session compile) the function
// for a region's program shape and runs it chunk by chunk (docs/jit.md).
#include "codegen/JitDecoder.h"

#include "codegen/CompiledRun.h"
#include "codegen/DecodeFunctionEmitter.h"
#include "codegen/OrcSession.h"
#include "codegen/ShapeKey.h"
#include "runtime/execution/Interpreter.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace brevis {

using jit::appendShapeKey;

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
                                                      const std::string &cacheDir, size_t nodeBudget,
                                                      const std::string &shapeIdentity) {
  const auto start = std::chrono::steady_clock::now();
  auto session = jit::OrcSession::create(emitLlvm, cacheDir, shapeIdentity);
  if (!session) return session.error();
  auto impl = std::make_unique<Impl>();
  impl->setupTime = std::chrono::steady_clock::now() - start;
  impl->notice = std::move(notice);
  impl->nodeBudget = nodeBudget;
  impl->session = std::move(*session);
  return std::unique_ptr<JitDecoder>(new JitDecoder(std::move(impl)));
}

using jit::chunkWords;
using jit::nodesUpTo;

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
  BREVIS_TRY(jit::checkWordRange(region, first, count));

  const uint64_t maxWords = chunkWords(streamTypeOf(root).width);
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

  BREVIS_TRY(jit::runCompiled(compiled.fn, compiled.layout, region, payload, first, count, sink));
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
