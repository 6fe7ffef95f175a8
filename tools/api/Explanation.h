#pragma once
// Why each tensor of an archive or a checkpoint got its program (synth/Explain.h's report for
// every tensor, or one): what brevisc explain prints and brevis.explain returns.
#include "lang/Result.h"
#include "runtime/containers/FileIO.h"
#include "synth/Explain.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace brevis {

struct ExplainedTensor {
  RegionReport report;
  std::string file;     ///< the member file, in a directory archive; empty otherwise
  std::string repeatOf; ///< the tensor whose bytes (program and payload) this one repeats
};

struct ExplainSettings {
  /// Only tensors of this name (every file's, in a directory archive); all where unset.
  std::optional<std::string> tensor;
  int level = kDefaultLevel;
  unsigned threads = 1;
  /// The search's options where they are not the level's alone (a prior given, as compress
  /// --prior takes it).
  std::optional<StrategyOptions> strategy;
};

/// The report of every tensor of `file` (`name` in messages): an archive's stored programs, or
/// a safetensors checkpoint searched now. Archive tensors are decoded (and checked) to search
/// them again for the candidates.
Result<std::vector<ExplainedTensor>> explainTensors(std::shared_ptr<const MappedFile> file, const std::string &name,
                                                    const ExplainSettings &settings);

/// The candidates a report lists: the `candidates` cheapest, and the chosen one wherever it
/// ranks (indices into r.candidates, cheapest first); none for 0.
std::vector<size_t> shownCandidates(const RegionReport &r, size_t candidates);

/// One report as JSON (docs/cli.md, explain), with shownCandidates' candidates.
nlohmann::json explanationJson(const ExplainedTensor &t, size_t candidates);

/// Bits per word of `bytes` holding `words` words (0 for none).
double bitsPerWord(uint64_t bytes, uint64_t words);

} // namespace brevis
