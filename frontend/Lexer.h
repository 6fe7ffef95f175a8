#pragma once
// A hand-written lexer producing exactly the tokens of Brevis.g4's lexer rules (same types,
// offsets, lines and columns; a differential test holds them together). ANTLR's generated
// lexer spends most of a parse in per-character DFA lookups behind locks; this one is a
// plain scanner, which halves the time to parse a large checkpoint program. Private to
// frontend/.
#include "frontend/ByteStream.h"

#include "antlr4-runtime.h"

#include <cstddef>
#include <string_view>

namespace brevis {

/// One token as the scanner sees it: its grammar type, where it lies in the scanned text, and
/// its line and (0-based, as ANTLR counts) column.
struct ScannedToken {
  size_t type = 0;
  size_t start = 0;
  size_t length = 0;
  size_t line = 0;
  size_t column = 0;
};

/// The token scanner alone, without ANTLR objects: the parser's pre-scan walks a whole program
/// with it, and Lexer feeds ANTLR from it. Line and column start where the text starts in its file.
class Scanner {
public:
  explicit Scanner(std::string_view text, size_t line = 1, size_t column = 0)
      : text_(text), line_(line), column_(column) {}

  /// The next token, skipping whitespace and comments; false at the end of the text.
  bool next(ScannedToken &token);
  size_t position() const { return pos_; }
  size_t line() const { return line_; }
  size_t column() const { return column_; }

private:
  size_t scanToken(size_t &type) const;

  std::string_view text_;
  size_t pos_ = 0;
  size_t line_;
  size_t column_;
};

class Lexer final : public antlr4::TokenSource {
public:
  /// `line` and `column` are where the input's first byte lies in its file: a piece of a larger
  /// text keeps the locations it has in the whole.
  explicit Lexer(ByteStream &input, size_t line = 1, size_t column = 0);

  std::unique_ptr<antlr4::Token> nextToken() override;
  size_t getLine() const override { return scanner_.line(); }
  size_t getCharPositionInLine() override { return scanner_.column(); }
  antlr4::CharStream *getInputStream() override { return &input_; }
  std::string getSourceName() override { return input_.getSourceName(); }
  antlr4::TokenFactory<antlr4::CommonToken> *getTokenFactory() override { return factory_; }

private:
  ByteStream &input_;
  Scanner scanner_;
  antlr4::TokenFactory<antlr4::CommonToken> *factory_;
};

} // namespace brevis
