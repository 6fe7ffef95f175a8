#pragma once
// The JIT without LLVM where the cache allows (docs/jit.md, "Across runs"): a RegionDecoder that
// runs compiled code loaded from the cache by its program shape (ShapeCodeCache, LoadedObject),
// and hands every region whose shape the cache lacks to the JIT proper, made (and the JIT module
// and LLVM loaded) only when the first such region comes. A checkpoint decoded before with --jit
// then decodes with --jit at the interpreter's start-up cost.
#include "codegen/DecodeFunctionEmitter.h"
#include "codegen/ObjectLoader.h"
#include "codegen/ShapeCodeCache.h"
#include "lang/Result.h"
#include "runtime/execution/RegionDecoder.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace brevis {

class CachedCodeDecoder final : public RegionDecoder {
public:
  using Fallback = std::function<Result<std::unique_ptr<RegionDecoder>>()>;

  /// Loads code from `cache` (not null); `fallback` makes the JIT for the shapes it lacks, and
  /// for programs too large to compile (which the JIT hands to the interpreter, with a notice).
  /// `nodeBudget` bounds the nodes of the shapes loaded (JitDecoder::kMaxSessionNodes): past it,
  /// regions of further shapes go to the fallback.
  CachedCodeDecoder(std::unique_ptr<jit::ShapeCodeCache> cache, Fallback fallback, size_t nodeBudget);
  ~CachedCodeDecoder() override;

  /// Loads the code of every region's shape the cache has; if a shape is missing, the fallback
  /// prepares the checkpoint (compiling the missing shapes in one batch).
  Result<void> prepare(const Checkpoint &c, const Payload &payload) override;
  Result<void> decodeWords(const Region &region, const Payload &payload, uint64_t first, uint64_t count,
                           ByteSink &sink) override;
  /// "jit: N functions (0 compiled, N from the cache) in T ms (LLVM not loaded); R region pieces
  /// decoded", or the fallback's summary and what was loaded without it.
  std::string summary() const override;

  /// Functions loaded from the cache without LLVM, and whether the fallback was made.
  size_t loadedFunctions() const;
  bool usedFallback() const;

private:
  struct Function {
    jit::DecodeFn fn = nullptr;
    jit::FrameLayout layout;
  };
  /// The function for shape `key` of `nodes` nodes, loaded now if the cache has it (under mutex_).
  const Function *find(const std::string &key, size_t nodes);
  /// Loads the cache's code for `wanted` (shape keys and their nodes) at once (under mutex_).
  void load(const std::vector<std::pair<std::string, size_t>> &wanted);
  /// The fallback, made on first use (takes mutex_).
  Result<RegionDecoder *> fallback();

  std::unique_ptr<jit::ShapeCodeCache> cache_;
  Fallback makeFallback_;
  size_t nodeBudget_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Function> functions_;
  std::vector<std::unique_ptr<jit::LoadedCode>> code_; ///< what functions_ point into
  std::unordered_set<std::string> missing_;
  size_t loadedNodes_ = 0;
  std::unique_ptr<RegionDecoder> fallback_;
  std::chrono::steady_clock::duration loadTime_{};
  std::atomic<size_t> pieces_{0};
};

} // namespace brevis
