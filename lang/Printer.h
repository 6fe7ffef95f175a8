#pragma once
// The one canonical printer. Its output is the golden format for tests and the text users
// edit; print(parse(print(m))) == print(m).
#include "Ast.h"

#include <string>
#include <vector>

namespace brevis {

/// Lines are wrapped so that none is longer than this, where the structure allows it.
inline constexpr unsigned kPrintWidth = 100;

/// Prints an expression whose first line starts at column `indent` (0-based).
std::string printExpr(const Expr &e, unsigned indent = 0);
std::string printModule(const Module &m);
/// With `withDigests` false, regions are printed without their digests (an archive's program
/// text: its index holds them).
std::string printCheckpoint(const Checkpoint &c, bool withDigests = true);

/// A double-quoted string literal with `"`, `\` and control bytes escaped.
std::string quoteString(std::string_view s);

/// A single-quoted text piece: printable ASCII and valid UTF-8 as themselves; `'` and `\`
/// escaped; newline, tab and carriage return as \n, \t, \r; other bytes as \xNN.
std::string quoteText(std::string_view s);

/// Where a text literal's canonical pieces end: after each newline, and in a text too long
/// for one line, after each `},` (one JSON object member a line). The last ends at s.size().
std::vector<size_t> textPieceEnds(std::string_view s);

} // namespace brevis
