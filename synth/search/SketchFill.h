#pragma once
// Filling the holes of a program written by hand (a sketch): each hole gets the program the
// search finds for the exact stream it must produce. The streams come from the tensor's words,
// pushed down through the operators above the hole by their inverses: merge splits the words
// into its fields' widths, concat cuts them at its parts' lengths, repeat takes one period,
// map applies the inverse bijection, scan takes differences. Where an operator cannot produce
// the words (a repeat whose period does not repeat, a scan whose first word differs), the error
// names it at its location. Nodes that are not holes are kept as written.
#include "lang/Ast.h"
#include "lang/Result.h"
#include "lang/SourceLoc.h"
#include "runtime/common/Bytes.h"
#include "synth/search/HoleSearch.h"

#include <span>

namespace brevis {

struct FillError {
  SourceLoc loc;
  std::string message;
};

/// Fills every hole of `program`, which must produce `words` (of the region's width); a hole's
/// literals are appended to `payload`. `context` describes the region (a float tensor's dtype
/// and shape), used for a hole that stands for the whole region. Returns how many holes were
/// filled, or the first operator that cannot produce its words.
std::variant<size_t, FillError> fillHoles(ExprPtr &program, std::span<const uint64_t> words, const HoleContext &context,
                                          HoleSearch &search, Bytes &payload);

/// Drops the payload bytes no literal of `c` reads: the bytes that are read keep their order, and
/// every literal is pointed at its bytes' new place (a payload whose every byte is read comes
/// back the same). The caller has checked that every range lies inside `payload`.
Bytes compactPayload(Checkpoint &c, ByteSpan payload);

} // namespace brevis
