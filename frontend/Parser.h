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

/// A single expression, each region of a checkpoint, and a checkpoint's declarations before its
/// first region may each hold at most this many tokens; more are refused before parsing. The
/// parser reads a checkpoint region by region and frees each region's tokens and parse tree
/// (several hundred bytes a token) before the next, so this bounds a parse's memory to a few GB
/// however many regions there are; the length of the whole is bounded by whoever supplies the text
/// (kMaxProgramTextSize in runtime/Archive.h for archives).
inline constexpr size_t kMaxRegionTokens = size_t{4} << 20;

/// Parses diags.text() (file name diags.fileName()) into a Module. Syntax errors are reported to
/// `diags` as `file:line:col: error: ...` (1-based columns); returns nullopt if there was any.
std::optional<Module> parseModule(Diagnostics &diags);

} // namespace brevis
