#pragma once
// `brevisc synth --shape DTYPE=SKETCH`: a sketch for every tensor of a kind. SKETCH is one
// expression with holes in which `[N]` stands for the tensor's element count, so that one line
// fixes the program shape of thousands of tensors (`bf16=merge(sign: ? u1[N], exp: ? u8[N],
// mant: ? u7[N])`); the search fills the holes of each tensor's copy for its own words.
#include "lang/Ast.h"
#include "lang/DType.h"
#include "runtime/common/Bytes.h"

#include <string>
#include <vector>

namespace brevis::cli {

struct ShapeRule {
  DType dtype;
  std::string sketch; ///< as given, `[N]` not yet replaced
  /// How the rule is named in messages: `--shape bf16`.
  std::string name() const;
};

/// The rules of `--shape` values, each checked on its own (parsed and typed with N = 1): a
/// malformed one is a usage error, reported on stderr with its column, and gives the exit
/// status in `status`. At most one rule per dtype.
std::vector<ShapeRule> parseShapeRules(const std::vector<std::string> &given, int &status);

/// Gives every tensor of `c` of a rule's dtype that rule's sketch, then fills the holes with the
/// search at `level` for `file` (the bytes `c` rebuilds), appending their literals to `payload`
/// and dropping the payload bytes no literal reads any more. Errors go to stderr, at their
/// column of the sketch; returns an exit status. `quiet` leaves out the note for a rule no tensor
/// took.
int applyShapeRules(const std::vector<ShapeRule> &rules, Checkpoint &c, ByteSpan file, Bytes &payload, int level,
                    bool quiet);

} // namespace brevis::cli
