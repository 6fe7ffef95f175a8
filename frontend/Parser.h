#pragma once
// Program text to AST. The grammar is frontend/Brevis.g4; the accepted syntax is exactly what
// lang/Printer.cpp prints (print(parse(print(m))) == print(m)). ANTLR stays an implementation
// detail: nothing here needs its headers.
#include "lang/Ast.h"
#include "lang/Diagnostics.h"

#include <optional>

namespace brevis {

/// Expressions may nest at most this deep (parentheses and brackets together); deeper input is
/// rejected before parsing, because the recursive-descent parser would overflow the stack.
inline constexpr unsigned kMaxNestingDepth = 200;

/// Programs of more tokens are refused: ANTLR keeps every token and parse-tree node in memory
/// (several hundred bytes each), so this bounds a parse to a few GB. A checkpoint of 200,000
/// tensors in the synthesizer's usual form stays below it.
inline constexpr size_t kMaxTokens = size_t{4} << 20;

/// Parses diags.text() (file name diags.fileName()) into a Module. Syntax errors are reported to
/// `diags` as `file:line:col: error: ...` (1-based columns); returns nullopt if there was any.
std::optional<Module> parseModule(Diagnostics &diags);

} // namespace brevis
