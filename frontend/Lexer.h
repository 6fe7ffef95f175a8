#pragma once
// A hand-written lexer producing exactly the tokens of Brevis.g4's lexer rules (same types,
// offsets, lines and columns; a differential test holds them together). ANTLR's generated
// lexer spends most of a parse in per-character DFA lookups behind locks; this one is a
// plain scanner, which halves the time to parse a large checkpoint program. Private to
// frontend/.
#include "frontend/ByteStream.h"

#include "antlr4-runtime.h"

namespace brevis {

class Lexer final : public antlr4::TokenSource {
public:
  explicit Lexer(ByteStream &input);

  std::unique_ptr<antlr4::Token> nextToken() override;
  /// True once the text holds more than `limit` tokens; the lexer then reports end of input.
  bool overLimit() const { return overLimit_; }
  void setLimit(size_t limit) { limit_ = limit; }
  size_t getLine() const override { return line_; }
  size_t getCharPositionInLine() override { return column_; }
  antlr4::CharStream *getInputStream() override { return &input_; }
  std::string getSourceName() override { return input_.getSourceName(); }
  antlr4::TokenFactory<antlr4::CommonToken> *getTokenFactory() override { return factory_; }

private:
  /// Advances over `n` bytes, keeping line and column as ANTLR counts them.
  void advance(size_t n);
  size_t scanToken(size_t &type) const;

  ByteStream &input_;
  std::string_view text_;
  antlr4::TokenFactory<antlr4::CommonToken> *factory_;
  size_t pos_ = 0;
  size_t produced_ = 0;
  size_t limit_ = SIZE_MAX;
  bool overLimit_ = false;
  size_t line_ = 1;
  size_t column_ = 0;
};

} // namespace brevis
