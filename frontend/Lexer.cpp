#include "frontend/Lexer.h"

#include "BrevisLexer.h"

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

namespace brevis {

namespace {

using L = grammar::BrevisLexer;

// Character classes by table: a program of many small tensors is mostly numbers and names,
// and a load per byte beats a chain of comparisons.
enum : uint8_t { kSpace = 1, kIdentStart = 2, kDigit = 4, kStringStop = 8 };
constexpr std::array<uint8_t, 256> kClasses = [] {
  std::array<uint8_t, 256> t{};
  for (unsigned char c : {' ', '\t', '\r', '\n'}) t[c] = kSpace;
  for (unsigned c = 'a'; c <= 'z'; ++c) t[c] = kIdentStart;
  for (unsigned c = 'A'; c <= 'Z'; ++c) t[c] = kIdentStart;
  t['_'] = kIdentStart;
  for (unsigned c = '0'; c <= '9'; ++c) t[c] = kDigit;
  for (unsigned char c : {'\\', '\r', '\n'}) t[c] |= kStringStop; // a string's escape, or its end
  return t;
}();
bool isSpace(unsigned char c) { return kClasses[c] & kSpace; }
bool isIdentStart(unsigned char c) { return kClasses[c] & kIdentStart; }
bool isDigit(unsigned char c) { return kClasses[c] & kDigit; }
bool isIdentPart(unsigned char c) { return kClasses[c] & (kIdentStart | kDigit); }

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
// The keywords by first byte, as bits of kKeywords' indices: an identifier meets one or two.
constexpr std::array<uint32_t, 128> kKeywordsByFirstByte = [] {
  std::array<uint32_t, 128> t{};
  for (size_t i = 0; i < kKeywords.size(); ++i) t[static_cast<unsigned char>(kKeywords[i].text[0])] |= 1u << i;
  return t;
}();
static_assert(kKeywords.size() <= 32);

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

// The length of the token at pos_ (longest match, as ANTLR's lexer), which is not whitespace
// or a comment, and its type.
size_t Scanner::scanToken(size_t &type) const {
  const size_t n = text_.size();
  const auto c = static_cast<unsigned char>(text_[pos_]);
  size_t end = pos_ + 1;
  if (isIdentStart(c)) {
    while (end < n && isIdentPart(static_cast<unsigned char>(text_[end]))) ++end;
    type = L::IDENT;
    const std::string_view word = text_.substr(pos_, end - pos_);
    for (uint32_t m = kKeywordsByFirstByte[c & 127]; m; m &= m - 1) { // c is an ASCII letter or '_'
      const Keyword &k = kKeywords[static_cast<size_t>(std::countr_zero(m))];
      if (k.text == word) {
        type = k.type;
        break;
      }
    }
  } else if (isDigit(c)) {
    while (end < n && isIdentPart(static_cast<unsigned char>(text_[end]))) ++end;
    type = L::NUMBER;
  } else if (c == '"' || c == '\'') {
    type = L::UNTERMINATED_STRING;
    const auto stops = [c](char d) {
      return d == static_cast<char>(c) || (kClasses[static_cast<unsigned char>(d)] & kStringStop);
    };
    while (end < n) {
      // A short string (a name) byte by byte. Most of a long one (a header's JSON) is plain
      // text: past its first bytes, find its closing quote, and the first backslash or line
      // break before it, with memchr.
      size_t stop = end;
      const size_t shortEnd = std::min(n, end + 64);
      while (stop < shortEnd && !stops(text_[stop])) ++stop;
      if (stop == shortEnd && stop < n) {
        const char *base = text_.data();
        const auto *quote = static_cast<const char *>(std::memchr(base + stop, c, n - stop));
        const size_t from = stop;
        stop = quote ? static_cast<size_t>(quote - base) : n;
        for (const char special : {'\\', '\r', '\n'})
          if (const auto *p = static_cast<const char *>(std::memchr(base + from, special, stop - from)))
            stop = static_cast<size_t>(p - base);
      }
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
  const size_t n = text_.size();
  while (pos_ < n) {
    const auto c = static_cast<unsigned char>(text_[pos_]);
    if (isSpace(c)) { // line and column as ANTLR counts them: only '\n' starts a line
      if (c == '\n') {
        ++line_;
        column_ = 0;
      } else {
        ++column_;
      }
      ++pos_;
      continue;
    }
    if (c == '#') { // a comment, up to its line break
      size_t end = pos_ + 1;
      while (end < n && text_[end] != '\r' && text_[end] != '\n') ++end;
      column_ += end - pos_;
      pos_ = end;
      continue;
    }
    size_t type = 0;
    const size_t length = scanToken(type);
    token = ScannedToken{type, pos_, length, line_, column_};
    // No token holds a line break (strings end at one): its bytes are columns.
    pos_ += length;
    column_ += length;
    return true;
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
