// The hand-written lexer must produce exactly the tokens of the grammar's generated lexer:
// same types, offsets, lines and columns, on real programs and on random and hostile bytes.
#include "frontend/ByteStream.h"
#include "frontend/Lexer.h"

#include "BrevisLexer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

using namespace brevis;

namespace {

struct Tok {
  size_t type, start, stop, line, column;
  bool operator==(const Tok &) const = default;
};

std::ostream &operator<<(std::ostream &os, const Tok &t) {
  return os << "{type " << t.type << ", " << t.start << ".." << t.stop << ", " << t.line << ":" << t.column << "}";
}

std::vector<Tok> drain(antlr4::TokenSource &source) {
  std::vector<Tok> out;
  for (;;) {
    auto t = source.nextToken();
    out.push_back({t->getType(), t->getStartIndex(), t->getStopIndex(), t->getLine(), t->getCharPositionInLine()});
    if (t->getType() == antlr4::Token::EOF) return out;
  }
}

void expectSameTokens(const std::string &text, const std::string &what) {
  ByteStream a(text, "a"), b(text, "b");
  grammar::BrevisLexer generated(&a);
  generated.removeErrorListeners();
  Lexer handWritten(b);
  EXPECT_EQ(drain(handWritten), drain(generated)) << what;
}

} // namespace

TEST(Lexer, MatchesTheGrammarOnEveryLitTestProgram) {
  size_t files = 0;
  for (const auto &entry : std::filesystem::recursive_directory_iterator(BREVIS_TEST_SOURCE "/lit")) {
    if (entry.path().extension() != ".bdsl") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    expectSameTokens(text.str(), entry.path().string());
    ++files;
  }
  EXPECT_GT(files, 40u);
}

TEST(Lexer, MatchesTheGrammarOnTokenSoupAndRandomBytes) {
  const char *pieces[] = {"brevis", "lit", "literal", "u8", "[", "]", "(", ")", "0x1f", "12ab", "\"s\\\"q\"", "\"open",
                          "\"a\\", "#c\n", " ", "\t", "\r\n", "\n", "@", "+", ":", "=", "?", ",", "%", "\xff", "_x9",
                          "merge", "mergex", "digest", "9", "\"\\x41\"", "é", "text", "texts", "'t\\'x'",
                          "'open", "'\\\"u'", "'a\\", "'", "\\"};
  std::mt19937_64 rng(5);
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    size_t n = rng() % 40;
    for (size_t i = 0; i < n; ++i) text += pieces[rng() % std::size(pieces)];
    expectSameTokens(text, "soup round " + std::to_string(round));
  }
  for (int round = 0; round < 500; ++round) {
    std::string text(rng() % 64, '\0');
    for (auto &c : text) c = static_cast<char>(rng() % 256);
    expectSameTokens(text, "bytes round " + std::to_string(round));
  }
}

// Strings are scanned byte by byte up to a point and by memchr past it: an escape, a line break
// or the closing quote at every offset around that point, in short and long strings.
TEST(Lexer, MatchesTheGrammarOnStringsWithTheirEndOrAnEscapeAtAnyOffset) {
  for (size_t length : {0, 1, 63, 64, 65, 127, 128, 300})
    for (size_t at = 0; at <= length + 1; at += at < 2 || at + 3 > length || (at > 60 && at < 70) ? 1 : 17)
      for (const char *special : {"\\\"", "\\", "\n", "\r", "'", "\""}) {
        for (char quote : {'"', '\''}) {
          std::string body(length, 'a');
          body.insert(std::min(at, body.size()), special);
          const std::string text = "lit " + std::string(1, quote) + body + std::string(1, quote) + " x\n";
          expectSameTokens(text, "string of " + std::to_string(length) + " with " + special + " at " + std::to_string(at));
          expectSameTokens(text.substr(0, text.size() / 2), "its first half");
        }
      }
}
