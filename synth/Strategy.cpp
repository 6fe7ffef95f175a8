#include "synth/Strategy.h"

#include "synth/strategies/DFloat11.h"
#include "synth/strategies/FloatFields.h"
#include "synth/strategies/Search.h"
#include "synth/strategies/ZipNN.h"

#include <algorithm>
#include <string>

namespace brevis {

namespace {

struct StrategyEntry {
  std::string_view name;
  std::unique_ptr<Strategy> (*make)(const StrategyOptions &);
};

constexpr StrategyEntry kStrategies[] = {
    {"search", [](const StrategyOptions &o) -> std::unique_ptr<Strategy> { return std::make_unique<SearchStrategy>(o); }},
    {"floatfields", [](const StrategyOptions &o) -> std::unique_ptr<Strategy> { return std::make_unique<FloatFieldsStrategy>(o); }},
    {"zipnn", [](const StrategyOptions &) -> std::unique_ptr<Strategy> { return std::make_unique<ZipNNStrategy>(); }},
    {"dfloat11", [](const StrategyOptions &) -> std::unique_ptr<Strategy> { return std::make_unique<DFloat11Strategy>(); }},
};
static_assert(kStrategies[0].name == kDefaultStrategy, "the default comes first");

} // namespace

StrategyOptions strategyOptionsForLevel(int level) {
  static constexpr uint64_t kExpansions[] = {0, 4, 16, 32, kDefaultSearchExpansions, 96, 128, 256, 512};
  static_assert(kExpansions[kDefaultLevel - 1] == kDefaultSearchExpansions);
  StrategyOptions options;
  options.policy = policyForLevel(level);
  options.searchExpansions = kExpansions[std::clamp(level, 1, 9) - 1];
  // Level 9 searches every tensor: the smallest archive, whatever it costs.
  options.reuseStructures = level < 9;
  return options;
}

std::vector<std::string_view> strategyNames() {
  std::vector<std::string_view> names;
  for (const StrategyEntry &s : kStrategies) names.push_back(s.name);
  return names;
}

Result<std::unique_ptr<Strategy>> makeStrategy(std::string_view name, const StrategyOptions &options) {
  std::string known;
  for (const StrategyEntry &s : kStrategies) {
    if (s.name == name) return s.make(options);
    known += (known.empty() ? "" : ", ") + std::string(s.name);
  }
  return Error{"unknown synthesis strategy '" + std::string(name) + "' (known: " + known + ")"};
}

} // namespace brevis
