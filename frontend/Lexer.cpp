#include "frontend/Lexer.h"

#include "BrevisLexer.h"

#include <array>
#include <cstring>

namespace brevis {

namespace {

using L = grammar::BrevisLexer;

bool isIdentStart(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isDigit(unsigned char c) { return c >= '0' && c <= '9'; }
bool isIdentPart(unsigned char c) { return isIdentStart(c) || isDigit(c); }

struct Keyword {
  std::string_view text;
  size_t type;
};
// Keyword rules come before IDENT in the grammar, so on equal length the keyword wins.
constexpr std::array kKeywords = {
    Keyword{"brevis", L::BREVIS}, Keyword{"source", L::SOURCE}, Keyword{"size", L::SIZE},
    Keyword{"xxh64", L::XXH64},   Keyword{"payload", L::PAYLOAD}, Keyword{"header", L::HEADER},
    Keyword{"bytes", L::BYTES},   Keyword{"tensor", L::TENSOR}, Keyword{"lit", L::LIT},
    Keyword{"const", L::CONST},   Keyword{"concat", L::CONCAT}, Keyword{"repeat", L::REPEAT},
    Keyword{"map", L::MAP},       Keyword{"scan", L::SCAN},     Keyword{"merge", L::MERGE},
    Keyword{"digest", L::DIGEST}, Keyword{"text", L::TEXT},     Keyword{"safetensors", L::SAFETENSORS},
};

size_t punctuation(unsigned char c) {
  switch (c) {
  case '(': return L::LPAREN;
  case ')': return L::RPAREN;
  case '[': return L::LBRACKET;
  case ']': return L::RBRACKET;
  case ',': return L::COMMA;
  case ':': return L::COLON;
  case '=': return L::EQUALS;
  case '@': return L::AT;
  case '+': return L::PLUS;
  case '?': return L::QUESTION;
  default: return 0;
  }
}

} // namespace

void Scanner::advance(size_t n) {
  for (size_t end = pos_ + n; pos_ < end; ++pos_) {
    if (text_[pos_] == '\n') {
      ++line_;
      column_ = 0;
    } else {
      ++column_;
    }
  }
}

// The length of the token at pos_ (longest match, as ANTLR's lexer), and its type; 0 for
// skipped text (whitespace, comments).
size_t Scanner::scanToken(size_t &type) const {
  const size_t n = text_.size();
  const auto c = static_cast<unsigned char>(text_[pos_]);
  size_t end = pos_ + 1;
  if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
    while (end < n && (text_[end] == ' ' || text_[end] == '\t' || text_[end] == '\r' || text_[end] == '\n')) ++end;
    type = 0;
  } else if (c == '#') {
    while (end < n && text_[end] != '\r' && text_[end] != '\n') ++end;
    type = 0;
  } else if (isIdentStart(c)) {
    while (end < n && isIdentPart(static_cast<unsigned char>(text_[end]))) ++end;
    type = L::IDENT;
    std::string_view word = text_.substr(pos_, end - pos_);
    for (const auto &k : kKeywords)
      if (k.text == word) type = k.type;
  } else if (isDigit(c)) {
    while (end < n && isIdentPart(static_cast<unsigned char>(text_[end]))) ++end;
    type = L::NUMBER;
  } else if (c == '"' || c == '\'') {
    type = L::UNTERMINATED_STRING;
    while (end < n) {
      // Most of a long string (a header's JSON) is plain text: find its closing quote, and the
      // first backslash or line break before it, with memchr rather than a byte at a time.
      const char *base = text_.data();
      const auto *quote = static_cast<const char *>(std::memchr(base + end, c, n - end));
      size_t stop = quote ? static_cast<size_t>(quote - base) : n;
      for (const char special : {'\\', '\r', '\n'})
        if (const auto *p = static_cast<const char *>(std::memchr(base + end, special, stop - end)))
          stop = static_cast<size_t>(p - base);
      end = stop;
      if (end == n) break;
      char d = text_[end];
      if (d == static_cast<char>(c)) {
        ++end;
        type = c == '"' ? L::STRING : L::TEXT_STRING;
        break;
      }
      if (d == '\r' || d == '\n') break;
      if (d == '\\') {
        if (end + 1 >= n || text_[end + 1] == '\r' || text_[end + 1] == '\n') break;
        end += 2;
        continue;
      }
      ++end;
    }
  } else if (size_t p = punctuation(c)) {
    type = p;
  } else {
    type = L::UNEXPECTED_CHAR;
  }
  return end - pos_;
}

bool Scanner::next(ScannedToken &token) {
  while (pos_ < text_.size()) {
    size_t type = 0;
    size_t length = scanToken(type);
    token = ScannedToken{type, pos_, length, line_, column_};
    if (type != 0) {
      // No token holds a line break (strings end at one): its bytes are columns.
      pos_ += length;
      column_ += length;
      return true;
    }
    advance(length);
  }
  return false;
}

Lexer::Lexer(ByteStream &input, size_t line, size_t column)
    : input_(input), scanner_(input.bytes(), line, column), factory_(antlr4::CommonTokenFactory::DEFAULT.get()) {}

std::unique_ptr<antlr4::Token> Lexer::nextToken() {
  ScannedToken t;
  if (!scanner_.next(t)) {
    // ANTLR's EOF token sits just past the end: start = size, stop = size - 1.
    size_t end = scanner_.position();
    return factory_->create({this, &input_}, antlr4::Token::EOF, "", antlr4::Token::DEFAULT_CHANNEL, end, end - 1,
                            scanner_.line(), scanner_.column());
  }
  return factory_->create({this, &input_}, t.type, "", antlr4::Token::DEFAULT_CHANNEL, t.start, t.start + t.length - 1,
                          t.line, t.column);
}

} // namespace brevis
