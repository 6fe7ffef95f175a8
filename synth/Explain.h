#pragma once
// Why a region got its program: the program with the bytes of each literal, the order-0
// entropies it can be held against, and the candidates the search scored for it with their
// estimated costs (brevisc explain).
#include "lang/Ast.h"
#include "runtime/containers/Payload.h"
#include "synth/Strategy.h"

#include <string>
#include <vector>

namespace brevis {

struct LiteralReport {
  std::string path; ///< where in the program: "merge.exp", "concat[2]", "repeat.merge.mant"
  std::string encoding; ///< "huffman", or "inline" for words in the program text
  unsigned width = 0;
  uint64_t length = 0;
  uint64_t bytes = 0; ///< payload bytes (0 for inline words)
  /// The settings an encoding reads from its payload, where it has any worth showing: a
  /// `context` literal's rate, escape word and raw low bits ("rate 4, escape 0, 8 raw bits").
  std::string detail;
};

struct CandidateReport {
  std::string program; ///< describePlan's line
  double estimatedBytes = 0;
  bool chosen = false;
};

struct RegionReport {
  RegionKind kind = RegionKind::Tensor;
  std::string name;
  DType dtype = DType::U8;
  std::vector<uint64_t> shape;
  uint64_t words = 0, originalBytes = 0;
  std::string program;   ///< as printed, without the region line
  uint64_t payloadBytes = 0;
  std::vector<LiteralReport> literals;
  double wordEntropyBits = 0; ///< order-0 entropy of whole words, bits per word (no tables)
  std::vector<std::pair<std::string, double>> fieldEntropyBits; ///< float dtypes: sign, exp, mant
  std::vector<CandidateReport> candidates; ///< by estimated cost, cheapest first
};

/// Searches `region` as the search strategy does with `options` and reports the result. With a
/// stored program (an archive's, reading `storedPayload`), reports that program's literals
/// instead of the search's.
RegionReport explainRegion(const RegionInput &region, const StrategyOptions &options, const Expr *storedProgram = nullptr,
                           const Payload *storedPayload = nullptr);

} // namespace brevis
