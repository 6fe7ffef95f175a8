#pragma once
// Compiler-style diagnostics for program text: `file:line:col: error: message`, followed by
// the source line and a caret. Messages are lowercase, specific, with no trailing period.
#include "SourceLoc.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace brevis {

enum class Severity { Error, Note };

struct Diagnostic {
  Severity severity;
  SourceLoc loc;
  std::string message;
};

/// `text` with its control characters (all but tab and newline, unless !keepLineBreaks) written
/// as \xHH: a hostile program's line, or an archive member's name, would otherwise reach a
/// terminal as commands (set its title, clear it). A name on a line of a listing keeps no line
/// break.
std::string withControlsEscaped(std::string_view text, bool keepLineBreaks = true);

class Diagnostics {
public:
  /// Errors beyond this count are dropped (a summary line says how many).
  static constexpr size_t kMaxReported = 20;
  /// A longer source line is shown as this many bytes around the column, marked "..." where cut
  /// (a program's line may be megabytes long).
  static constexpr size_t kMaxShownLine = 160;

  Diagnostics(std::string fileName, std::string text);

  void error(SourceLoc loc, std::string message);
  void note(SourceLoc loc, std::string message);

  /// What has been reported so far. The parser reports each region's errors as it reads the
  /// region, and takes them back (`rollback`) when a later syntax error supersedes them.
  struct Mark {
    size_t errors = 0;
    size_t stored = 0;
  };
  Mark mark() const { return {errorCount_, diagnostics_.size()}; }
  void rollback(Mark m) {
    errorCount_ = m.errors;
    diagnostics_.resize(m.stored);
  }

  bool hasErrors() const { return errorCount_ != 0; }
  size_t errorCount() const { return errorCount_; }
  const std::vector<Diagnostic> &all() const { return diagnostics_; }
  const std::string &fileName() const { return fileName_; }
  const std::string &text() const { return text_; }

  /// All diagnostics, each with its source line and caret, in the order reported.
  std::string render() const;
  std::string render(const Diagnostic &) const;

private:
  std::string_view line(uint32_t lineNumber) const;

  std::string fileName_;
  std::string text_;
  std::vector<Diagnostic> diagnostics_;
  size_t errorCount_ = 0;
};

} // namespace brevis
