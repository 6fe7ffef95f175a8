#pragma once
// A way to run a literal's independently coded blocks, which its caller chooses: one after
// another, or on threads (the cost model hands a large literal's blocks to the pool).
#include <cstddef>
#include <functional>

namespace brevis {

/// Runs codeBlock(b) for each of `blocks` blocks, in any order and on any threads; each block
/// is coded into a buffer of its own, so the result is the same bytes however they run.
using RunBlocks = std::function<void(size_t blocks, const std::function<void(size_t)> &codeBlock)>;

} // namespace brevis
