#pragma once
// How one region of a checkpoint becomes a program. The driver (synth/Driver.h) tiles the file
// into regions and hands each one to a strategy; a strategy sees one region's stream and
// nothing of the file, the thread pool or the other regions' payloads. Strategies:
//
//   floatfields  Brevis's template: float tensors as a merge of their IEEE fields
//   zipnn        ZipNN's byte grouping, written as a program (for comparisons)
//   dfloat11     DFloat11's BF16 scheme, written as a program (for comparisons)
//   search       a search over programs for each region (synth/search/)
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/common/Bytes.h"
#include "synth/CostModel.h"
#include "synth/search/HoleSearch.h"
#include "synth/search/Prior.h"

#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace brevis {

/// One region's stream: a tensor's words of its dtype's width, little-endian, or the bytes of a
/// header or of a stretch no tensor covers (read as u8).
struct RegionInput {
  RegionKind kind = RegionKind::Bytes;
  std::string_view name;           ///< tensor name (Tensor only)
  DType dtype = DType::U8;         ///< Tensor only
  std::span<const uint64_t> shape; ///< Tensor only
  ByteSpan bytes;
};

/// A region's program and the literal payload it points into: literal offsets are relative to
/// the start of `payload` (the driver moves them when it joins the regions' payloads).
struct RegionProgram {
  ExprPtr program;
  Bytes payload;
};

class Strategy {
public:
  virtual ~Strategy() = default;

  /// Called by the driver once per checkpoint, before any region is synthesized, with every
  /// region in file order: the place for what a strategy learns from the whole checkpoint (the
  /// search's production prior, from a deterministic sample of the tensors). It may use up to
  /// `threads` threads (runtime/execution/ThreadPool.h); what it learns must not depend on them.
  virtual void prepare(std::span<const RegionInput> regions, unsigned threads) {
    (void)regions;
    (void)threads;
  }

  /// Called by the driver from several threads at once, one region per call, so it must not
  /// change shared state. The program must execute to exactly `region`'s bytes, read as words of
  /// its dtype's width (u8 for non-tensor regions), and depend on nothing but `region` and the
  /// strategy's options: archives are the same for any thread count.
  virtual RegionProgram synthesize(const RegionInput &region) const = 0;
};

/// The search's budget at the default level (strategyOptionsForLevel).
inline constexpr uint64_t kDefaultSearchExpansions = 64;

struct StrategyOptions {
  EncodePolicy policy{}; ///< which literal encodings the strategy keeps, where it chooses
  /// The search's budget per region: candidates tried beyond the template (strategies/Search).
  uint64_t searchExpansions = kDefaultSearchExpansions;
  /// The search's prior over productions (strategies/Search): a given one (`--prior FILE`), or
  /// null to learn one in `prepare` from a sample of the checkpoint's tensors; with learnPrior
  /// false and no prior, candidates are tried in a fixed order.
  std::shared_ptr<const ProductionPrior> prior;
  bool learnPrior = true;
  /// Tensors of one role and shape (`model.layers.#.mlp.up_proj.weight`, the same dtype and
  /// shape) take the structure the search found for the first of them, refit to their own words,
  /// and are searched only where it does not carry over (strategies/Search).
  bool reuseStructures = true;
  /// From this many words on, a region's search result and template, where their estimates
  /// come within the estimates' error, are compared on slices of its words before either is
  /// encoded whole (SearchLimits::slicedComparisonMinWords; lower in tests).
  uint64_t slicedComparisonMinWords = SearchLimits{}.slicedComparisonMinWords;
};

/// The options of compression level `level` (1-9, brevisc --level): its encoding policy
/// (policyForLevel) and the search's budget, from none at level 1 (the template's programs) to
/// eight times the default's at level 9.
StrategyOptions strategyOptionsForLevel(int level);

/// The strategies' names, the default first.
std::vector<std::string_view> strategyNames();
inline constexpr std::string_view kDefaultStrategy = "search";

/// The strategy called `name`; an error naming the known ones if there is none.
Result<std::unique_ptr<Strategy>> makeStrategy(std::string_view name, const StrategyOptions &options = {});

} // namespace brevis
