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
/// How a checkpoint is written: for reading and editing, every range in full, with the regions'
/// digests; or as an archive stores it, without digests (its index holds them) and without the
/// ranges and offsets the rest of the program gives (lang/ImpliedParts.h), which are most of
/// what compresses poorly in a program's text. Both forms read back to the same program.
enum class CheckpointForm { Editable, Archive };
std::string printCheckpoint(const Checkpoint &c, CheckpointForm form = CheckpointForm::Editable);

/// A double-quoted string literal with `"`, `\` and control bytes escaped.
std::string quoteString(std::string_view s);

/// A single-quoted text piece: printable ASCII and valid UTF-8 as themselves; `'` and `\`
/// escaped; newline, tab and carriage return as \n, \t, \r; other bytes as \xNN.
std::string quoteText(std::string_view s);

/// Where a text literal's canonical pieces end: after each newline, and in a text too long
/// for one line, after each `},` (one JSON object member a line). The last ends at s.size().
std::vector<size_t> textPieceEnds(std::string_view s);

} // namespace brevis
