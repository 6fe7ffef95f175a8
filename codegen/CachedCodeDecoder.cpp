#include "codegen/CachedCodeDecoder.h"

#include "codegen/CompiledRun.h"
#include "codegen/ShapeKey.h"

#include <fmt/format.h>

#include <utility>

namespace brevis {

// Programs of more than jit::kMaxCompiledNodes nodes are the fallback's (it interprets them).
using jit::kMaxCompiledNodes;

CachedCodeDecoder::CachedCodeDecoder(std::unique_ptr<jit::ShapeCodeCache> cache, Fallback fallback,
                                     size_t nodeBudget)
    : cache_(std::move(cache)), makeFallback_(std::move(fallback)), nodeBudget_(nodeBudget) {}

CachedCodeDecoder::~CachedCodeDecoder() = default;

void CachedCodeDecoder::load(const std::vector<std::pair<std::string, size_t>> &wanted) {
  const auto start = std::chrono::steady_clock::now();
  // A missing, damaged or unloadable entry is a miss: the JIT compiles the shape and replaces it.
  std::vector<std::pair<std::string, size_t>> shapes;
  std::vector<jit::ShapeCodeCache::Entry> entries;
  for (const auto &[key, nodes] : wanted) {
    if (functions_.count(key) || missing_.count(key)) continue;
    auto entry = loadedNodes_ + nodes <= nodeBudget_ ? cache_->find(key) : std::nullopt;
    if (!entry) {
      missing_.insert(key);
      continue;
    }
    loadedNodes_ += nodes;
    shapes.emplace_back(key, nodes);
    entries.push_back(std::move(*entry));
  }
  std::vector<ByteSpan> objects;
  for (const auto &entry : entries) objects.emplace_back(entry.object);
  std::vector<Result<void>> outcomes;
  std::unique_ptr<jit::LoadedCode> code = jit::LoadedCode::load(objects, outcomes);
  for (size_t i = 0; i < shapes.size(); ++i) {
    void *fn = outcomes[i] ? code->function(jit::decodeFunctionName(shapes[i].first)) : nullptr;
    if (!fn) {
      missing_.insert(shapes[i].first);
      loadedNodes_ -= shapes[i].second;
      continue;
    }
    functions_[shapes[i].first] = Function{reinterpret_cast<jit::DecodeFn>(fn), entries[i].layout};
  }
  if (code) code_.push_back(std::move(code));
  loadTime_ += std::chrono::steady_clock::now() - start;
}

const CachedCodeDecoder::Function *CachedCodeDecoder::find(const std::string &key, size_t nodes) {
  auto it = functions_.find(key);
  if (it == functions_.end() && !missing_.count(key)) {
    load({{key, nodes}});
    it = functions_.find(key);
  }
  return it == functions_.end() ? nullptr : &it->second;
}

Result<RegionDecoder *> CachedCodeDecoder::fallback() {
  std::lock_guard lock(mutex_);
  if (!fallback_) {
    auto made = makeFallback_();
    if (!made) return made.error();
    fallback_ = std::move(*made);
  }
  return fallback_.get();
}

Result<void> CachedCodeDecoder::prepare(const Checkpoint &c, const Payload &payload) {
  bool missed = false;
  {
    std::lock_guard lock(mutex_);
    // Every shape's code in one mapping.
    std::vector<std::pair<std::string, size_t>> wanted;
    std::unordered_set<std::string> seen;
    for (const Region &region : c.regions) {
      if (!region.program) continue;
      const size_t nodes = jit::nodesUpTo(*region.program, kMaxCompiledNodes);
      if (nodes > kMaxCompiledNodes) {
        missed = true;
        continue;
      }
      std::string key;
      BREVIS_TRY(jit::appendShapeKey(*region.program, payload, key));
      if (seen.insert(key).second) wanted.emplace_back(std::move(key), nodes);
    }
    load(wanted);
    for (const auto &[key, nodes] : wanted) missed = missed || !functions_.count(key);
  }
  if (!missed) return {};
  auto other = fallback();
  if (!other) return other.error();
  return (*other)->prepare(c, payload);
}

Result<void> CachedCodeDecoder::decodeWords(const Region &region, const Payload &payload, uint64_t first,
                                            uint64_t count, ByteSink &sink) {
  if (!region.program) return Error{fmt::format("region at byte {} has no program", region.bytes.offset)};
  const size_t nodes = jit::nodesUpTo(*region.program, kMaxCompiledNodes);
  const Function *function = nullptr;
  if (nodes <= kMaxCompiledNodes) {
    std::string key;
    BREVIS_TRY(jit::appendShapeKey(*region.program, payload, key)); // checks the types the code relies on
    BREVIS_TRY(jit::checkWordRange(region, first, count));
    std::lock_guard lock(mutex_);
    function = find(key, nodes);
  }
  if (function) {
    BREVIS_TRY(jit::runCompiled(function->fn, function->layout, region, payload, first, count, sink));
    ++pieces_;
    return {};
  }
  auto other = fallback();
  if (!other) return other.error();
  return (*other)->decodeWords(region, payload, first, count, sink);
}

std::string CachedCodeDecoder::summary() const {
  std::lock_guard lock(mutex_);
  const size_t loaded = functions_.size(), pieces = pieces_;
  const double ms = std::chrono::duration<double, std::milli>(loadTime_).count();
  auto plural = [](size_t n) { return n == 1 ? "" : "s"; };
  if (!fallback_)
    return fmt::format("jit: {} function{} (0 compiled, {} from the cache) in {:.0f} ms (LLVM not loaded); {} region "
                       "piece{} decoded",
                       loaded, plural(loaded), loaded, ms, pieces, plural(pieces));
  const std::string jit = fallback_->summary();
  if (loaded == 0) return jit;
  return fmt::format("{}; and {} function{} loaded from the cache without LLVM in {:.0f} ms, {} region piece{} "
                     "decoded by them",
                     jit, loaded, plural(loaded), ms, pieces, plural(pieces));
}

size_t CachedCodeDecoder::loadedFunctions() const {
  std::lock_guard lock(mutex_);
  return functions_.size();
}

bool CachedCodeDecoder::usedFallback() const {
  std::lock_guard lock(mutex_);
  return fallback_ != nullptr;
}

} // namespace brevis
