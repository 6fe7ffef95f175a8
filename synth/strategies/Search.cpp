#include "synth/strategies/Search.h"

#include "runtime/execution/ThreadPool.h"
#include "synth/Literals.h"

namespace brevis {

namespace {

/// The budget of the search whose winners the prior counts: every candidate, as at level 9.
constexpr uint64_t kLearningExpansions = 512;
/// A sampled tensor is learned from at most this many words, in 16 runs at evenly spaced
/// positions: the prior's contexts are statistics of a stream, and learning from the whole of
/// a large tensor would cost as much as compressing it.
constexpr size_t kLearningRuns = 16, kLearningRunWords = 4096;

std::vector<uint64_t> learningWords(ByteSpan bytes, unsigned wordBytes) {
  const size_t n = bytes.size() / wordBytes;
  if (n <= kLearningRuns * kLearningRunWords) return readWords(bytes, wordBytes);
  std::vector<uint64_t> words;
  const size_t stride = (n - kLearningRunWords) / (kLearningRuns - 1);
  for (size_t r = 0; r < kLearningRuns; ++r) {
    const auto run = readWords(bytes.subspan(r * stride * wordBytes, kLearningRunWords * wordBytes), wordBytes);
    words.insert(words.end(), run.begin(), run.end());
  }
  return words;
}

} // namespace

const DTypeInfo &regionWordType(const RegionInput &region) {
  return dtypeInfo(region.kind == RegionKind::Tensor ? region.dtype : DType::U8);
}

HoleContext regionContext(const RegionInput &region) {
  const DTypeInfo &info = regionWordType(region);
  const bool tensor = region.kind == RegionKind::Tensor;
  return HoleContext{tensor && info.isFloat() ? &info : nullptr, tensor ? region.shape : std::span<const uint64_t>{}};
}

SearchLimits searchLimits(const StrategyOptions &options) {
  return SearchLimits{SearchLimits{}.maxDepth, options.searchExpansions};
}

ProductionPrior learnPrior(std::span<const RegionInput> regions, EncodePolicy policy, unsigned threads) {
  std::vector<size_t> tensors;
  for (size_t i = 0; i < regions.size(); ++i)
    if (regions[i].kind == RegionKind::Tensor && !regions[i].bytes.empty()) tensors.push_back(i);
  std::vector<size_t> sample;
  const size_t k = std::min(tensors.size(), kPriorSampleTensors);
  for (size_t j = 0; j < k; ++j) sample.push_back(tensors[j * tensors.size() / k]);
  std::vector<ProductionPrior> learned(sample.size());
  parallelFor(sample.size(), threads, [&](size_t j) {
    const RegionInput &region = regions[sample[j]];
    const DTypeInfo &info = regionWordType(region);
    const std::vector<uint64_t> words = learningWords(region.bytes, info.wordBits / 8);
    HoleSearch search(policy, SearchLimits{SearchLimits{}.maxDepth, kLearningExpansions});
    search.recordWinners(&learned[j]);
    HoleContext context = regionContext(region);
    if (words.size() * (info.wordBits / 8) != region.bytes.size()) context.shape = {}; // a sample has no shape
    search.solve(words, info.wordBits, context);
  });
  ProductionPrior prior;
  for (const ProductionPrior &p : learned) prior.add(p);
  return prior;
}

void SearchStrategy::prepare(std::span<const RegionInput> regions, unsigned threads) {
  threads_ = std::max(1u, threads);
  if (prior_ || !learnPrior_ || limits_.maxExpansions == 0 || limits_.maxExpansions >= kPriorUsefulBelowExpansions)
    return;
  prior_ = std::make_shared<const ProductionPrior>(learnPrior(regions, policy_, threads));
}

RegionProgram SearchStrategy::synthesize(const RegionInput &region) const {
  if (region.kind == RegionKind::Header)
    if (ExprPtr text = makeHeaderText(region.bytes)) return RegionProgram{std::move(text), {}};
  const DTypeInfo &info = regionWordType(region);
  const unsigned width = info.wordBits;
  WordBuffer copy; // only where the bytes are not aligned for their words
  const WordsView words = viewWords(region.bytes, width / 8, copy);
  const HoleContext context = regionContext(region);

  HoleSearch search(policy_, limits_);
  search.usePrior(prior_.get());
  search.emitOnThreads(threads_);
  const Plan best = search.solve(words, width, context);
  RegionProgram out;
  // Room for the tensor's own size, which a literal seldom exceeds: reserved, not touched, so it
  // costs address space only, where growing by doubling copied the payload and faulted in twice
  // its pages (a tenth of level 1's time on a large tensor).
  out.payload.reserve(region.bytes.size() + 4096);
  out.program = search.emit(best, words, width, out.payload);

  // Estimates err by up to kEstimateRelative + kEstimateAbsolute: where the template's estimate
  // is within that of the winner's, both are encoded and the smaller kept, so that a search result
  // is never larger than the template's.
  if (limits_.maxExpansions == 0) return out; // the template's plan is the only one tried
  const Plan baseline = search.solvedTemplate() ? *search.solvedTemplate() : search.templatePlan(words, width, context);
  if (!samePlanShape(best, baseline) &&
      baseline.cost - best.cost < kEstimateRelative * baseline.cost + static_cast<double>(kEstimateAbsolute)) {
    RegionProgram alternative;
    alternative.program = search.emit(baseline, words, width, alternative.payload);
    if (static_cast<double>(alternative.payload.size()) + planTextBytes(baseline) <
        static_cast<double>(out.payload.size()) + planTextBytes(best))
      out = std::move(alternative);
  }
  return out;
}

} // namespace brevis
