#pragma once
// Parts of a program that its text may leave out because the rest of the program gives them
// (docs/language.md, "Ranges left out"): archives store programs so, since offsets are most of
// what their compressed text does not repeat.
#include "lang/Ast.h"
#include "lang/Diagnostics.h"

#include <unordered_set>

namespace brevis {

/// Fills in, in place:
/// - a region's offset left out (`@+SIZE`): where the region before it ends (0 for the first);
/// - a tensor region's range left out: that offset, and the bytes of its dtype and shape; a
///   header written as `safetensors(…)`: that offset, and the size of the bytes it stands for;
/// - a payload literal's offset left out (`@+SIZE`): where the payload literal before it, in
///   text order, ends (0 for the first);
/// and makes the program of a header written as `safetensors(…)` (lang/SafetensorsIndex.h).
/// Errors are reported into `diags` at their place; returns whether there were none.
bool resolveImpliedParts(Module &m, Diagnostics &diags);

/// The payload literals of `c` that start where the payload literal before them, in text order,
/// ends (the first: at 0): those whose offset the archive form of the text leaves out.
std::unordered_set<const Lit *> literalsAtCursor(const Checkpoint &c);

/// The bytes a tensor of `dtype` and `shape` holds; nullopt on overflow.
std::optional<uint64_t> tensorBytes(DType dtype, const std::vector<uint64_t> &shape);

} // namespace brevis
