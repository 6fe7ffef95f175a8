#pragma once
// The search-based strategy: each region's program is searched for (synth/search/HoleSearch.h)
// among field splits, constants, repeats, concatenations at runs, scans and maps, scored by the
// cost model, and never one the cost model scores above the template's (strategies/FloatFields).
#include "synth/Strategy.h"
#include "synth/search/HoleSearch.h"

namespace brevis {

class SearchStrategy final : public Strategy {
public:
  explicit SearchStrategy(const StrategyOptions &options)
      : policy_(options.policy), limits_{SearchLimits{}.maxDepth, options.searchExpansions} {}
  RegionProgram synthesize(const RegionInput &region) const override;

private:
  EncodePolicy policy_;
  SearchLimits limits_;
};

} // namespace brevis
