#pragma once
// A safetensors header written as the list of the program's tensors. The header repeats every
// tensor's name, dtype, shape and place, which the tensor regions declare anyway; a writer of
// safetensors files makes it from them by fixed rules, so a program can say
// `safetensors(tensors, metadata: '{…}')` instead of holding the JSON as text (about half of a
// compressed program, docs/benchmarks.md).
#include "lang/Ast.h"
#include "lang/Result.h"

#include <optional>
#include <string>
#include <string_view>

namespace brevis {

/// The largest header safetensors readers accept (the format's limit on its JSON); a program
/// asking for more is refused before its bytes are made.
inline constexpr size_t kMaxSafetensorsHeaderBytes = 100'000'000;

/// The bytes that region `header` of `c` stands for when written as `index`: the JSON object's
/// length as 8 little-endian bytes, then the object — the `__metadata__` member where `index`
/// places it, and for each tensor region after the header, in order,
/// `"NAME":{"dtype":"BF16","shape":[2,3],"data_offsets":[B,E]}`, B and E counted from the
/// header's end — then spaces up to a multiple of 8 bytes. Names are escaped as JSON writers
/// do (`\"`, `\\`, `\n` and the like, other control bytes as `\u00XX`). Every region's size
/// must be known. Errors: a tensor region before the header; a second header written so; a
/// header of more than kMaxSafetensorsHeaderBytes.
Result<std::string> safetensorsHeaderBytes(const Checkpoint &c, size_t header, const SafetensorsIndex &index);

/// How region `header` of `c` is written as an index of the tensors, if one placement of the
/// metadata makes exactly `bytes`; nullopt where none does (a header of another writer, tensors
/// listed in another order), and the header stays text.
std::optional<SafetensorsIndex> matchSafetensorsIndex(const Checkpoint &c, size_t header, std::string_view bytes);

} // namespace brevis
