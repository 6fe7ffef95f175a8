#pragma once
// A checkpoint program declares each tensor region's name, dtype, shape and place in the file,
// and the file's own safetensors header says the same things. Decoding checks bytes, not
// declarations: a tensor renamed in the program rebuilds the same file. These checks hold the
// declarations to the header that the program's header region rebuilds.
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/common/Bytes.h"

#include <vector>

namespace brevis {

/// One error, at its region's location, for each declaration that disagrees with `header`: the
/// bytes the program's header region produces. None when the program has no header region.
std::vector<Error> checkDeclarations(const Checkpoint &c, ByteSpan header);

/// The program's header region, if it has one.
const Region *headerRegion(const Checkpoint &c);

} // namespace brevis
