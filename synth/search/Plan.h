#pragma once
// A program the search chose for a hole, before any literal is encoded: the operator, its
// parameters, its children's plans and the bytes it is estimated to cost. A plan holds no words:
// emitting it (synth/search/HoleSearch.h) derives each child's stream from its parent's again,
// through the operator's inverse, so that only the chosen literals are ever encoded.
#include "lang/Ast.h"

#include <cstdint>
#include <string>
#include <vector>

namespace brevis {

enum class PlanOp { Lit, Const, Repeat, Concat, Map, Scan, Merge };

struct Plan {
  PlanOp op = PlanOp::Lit;
  uint64_t count = 0;                  ///< Repeat: how many times the body repeats
  MapFn mapFn = MapFn::Xor;            ///< Map
  uint64_t mapParam = 0;               ///< Map
  std::vector<uint64_t> mapPeriodic;   ///< Map: constants by position modulo their count, or none
  uint64_t mapPer = 1;                 ///< Map: words each of mapPeriodic's constants holds for
  ScanOp scanOp = ScanOp::Add;         ///< Scan
  std::vector<unsigned> fieldWidths;   ///< Merge, most significant first
  std::vector<std::string> fieldNames; ///< Merge
  std::vector<uint64_t> pieceLengths;  ///< Concat
  std::vector<Plan> children;
  double cost = 0; ///< estimated bytes of payload and program text
  /// Lit: the search's estimate found `context` losing to a faster encoding, so emitting does
  /// not estimate it again (on a stream scored whole, the same estimate of the same words; on a
  /// sample, only at levels that ask a gain).
  bool contextLost = false;
  std::string production; ///< which candidate it is ("merge:exp+1", "repeat"), as the prior counts it
};

/// Same operators, parameters and children (costs aside).
bool samePlanShape(const Plan &a, const Plan &b);

/// One line for people: `merge(sign: lit u1, exp: lit u8, mant: const u7)`, `repeat 64 (lit)`.
std::string describePlan(const Plan &plan);
/// The line describePlan gives the plan a program was emitted from: how a stored program is
/// found among the search's candidates.
std::string describeProgram(const Expr &program);

/// The estimated bytes of the program text `plan` prints as (no payload).
double planTextBytes(const Plan &plan);

} // namespace brevis
