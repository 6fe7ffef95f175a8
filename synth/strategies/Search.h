#pragma once
// The search-based strategy: each region's program is searched for (synth/search/HoleSearch.h)
// among field splits, constants, repeats, concatenations at runs, scans and maps, scored by the
// cost model, and never one the cost model scores above the template's (strategies/FloatFields).
#include "synth/Strategy.h"
#include "synth/search/HoleSearch.h"

namespace brevis {

/// The words a region is read as: its dtype's for a tensor, bytes otherwise.
const DTypeInfo &regionWordType(const RegionInput &region);
/// What the search knows of a region beyond its words: a float tensor's dtype, a tensor's shape.
HoleContext regionContext(const RegionInput &region);
/// The search's limits under `options`.
SearchLimits searchLimits(const StrategyOptions &options);

class SearchStrategy final : public Strategy {
public:
  explicit SearchStrategy(const StrategyOptions &options)
      : policy_(options.policy), limits_(searchLimits(options)), prior_(options.prior),
        learnPrior_(options.learnPrior) {}
  /// Learns the prior from a sample of the tensors, unless one was given or the budget is 0 or
  /// at least kPriorUsefulBelowExpansions.
  void prepare(std::span<const RegionInput> regions, unsigned threads) override;
  /// The prior that orders candidates: given, learned by prepare, or none (the fixed order).
  const ProductionPrior *prior() const { return prior_.get(); }
  RegionProgram synthesize(const RegionInput &region) const override;

private:
  EncodePolicy policy_;
  SearchLimits limits_;
  std::shared_ptr<const ProductionPrior> prior_;
  bool learnPrior_ = true;
  unsigned threads_ = 1; ///< prepare's: a large tensor's fields are coded on as many
};

/// The prior learned from `regions`: the winners of a search with a large budget, in the fixed
/// order, on at most kPriorSampleTensors tensors at evenly spaced positions of the file order.
/// The same for any thread count.
inline constexpr size_t kPriorSampleTensors = 16;
/// From this budget on, a search tries nearly every candidate of a tensor (over the corpus,
/// archives without a prior are 16 bytes larger in 50.6 MB): prepare learns none, which was two
/// fifths of level 5's time on a 16 MB checkpoint of 146 tensors.
inline constexpr uint64_t kPriorUsefulBelowExpansions = 64;
ProductionPrior learnPrior(std::span<const RegionInput> regions, EncodePolicy policy, unsigned threads);

} // namespace brevis
