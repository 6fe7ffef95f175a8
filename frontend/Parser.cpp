#include "frontend/Parser.h"

#include "frontend/ByteStream.h"
#include "frontend/Lexer.h"
#include "lang/ImpliedParts.h"

#include "BrevisLexer.h"
#include "BrevisParser.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace brevis {

namespace {

using antlr4::Token;
using G = grammar::BrevisParser;

SourceLoc locOf(const Token *t) {
  return {static_cast<uint32_t>(t->getLine()), static_cast<uint32_t>(t->getCharPositionInLine() + 1)};
}

/// Longest piece of user text quoted in a message, so that hostile input cannot make messages huge.
constexpr size_t kExcerptChars = 40;

std::string excerpt(std::string_view s) {
  if (s.size() <= kExcerptChars) return std::string(s);
  return std::string(s.substr(0, kExcerptChars - 3)) + "...";
}

/// One byte as it should appear between quotes in a message.
std::string displayChar(unsigned char c) {
  if (c < 0x20 || c >= 0x7f) return fmt::format("\\x{:02x}", c);
  return std::string(1, static_cast<char>(c));
}

/// Value of a hex digit (which covers decimal ones), or 99 for anything else.
unsigned digitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

/// "a, b or c".
/// Radix of a NUMBER token's text (well formed or not: the value is checked elsewhere).
Radix radixOf(std::string_view number) {
  return number.size() >= 2 && number[0] == '0' && (number[1] == 'x' || number[1] == 'X') ? Radix::Hex
                                                                                          : Radix::Decimal;
}

/// The radix a list of words is written in: hex if any is.
Radix listRadix(const std::vector<Radix> &radixes) {
  if (radixes.empty()) return Radix::Auto;
  return std::find(radixes.begin(), radixes.end(), Radix::Hex) != radixes.end() ? Radix::Hex : Radix::Decimal;
}

/// Decodes the body of a quoted STRING (quote '"') or TEXT_STRING (quote '\'') into `out`.
/// Both take \\, their own quote and \xNN. Text also takes \n, \t and \r, and a backslash
/// before any other character stands for itself, so that JSON's own escapes (\" \u00e9) read as
/// written. Returns the offset in `body` of the first invalid escape's backslash, or npos.
size_t decodeEscapes(std::string_view body, char quote, std::string &out) {
  out.reserve(out.size() + body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\') { // up to the next backslash at once: long texts have few
      const size_t next = std::min(body.find('\\', i), body.size());
      out.append(body.substr(i, next - i));
      i = next - 1;
      continue;
    }
    // The lexer guarantees a character after every backslash inside a terminated string.
    const char next = body[i + 1];
    if (next == quote || next == '\\') {
      out += next;
      ++i;
    } else if (quote == '\'' && (next == 'n' || next == 't' || next == 'r')) {
      out += next == 'n' ? '\n' : next == 't' ? '\t' : '\r';
      ++i;
    } else if (next == 'x' && i + 3 < body.size() && digitValue(body[i + 2]) < 16 && digitValue(body[i + 3]) < 16) {
      out += static_cast<char>(digitValue(body[i + 2]) * 16 + digitValue(body[i + 3]));
      i += 3;
    } else if (quote == '\'' && next != 'x') {
      out += '\\'; // the next character is read as itself
    } else {
      return i;
    }
  }
  return std::string_view::npos;
}

std::string alternatives(const std::vector<std::string_view> &names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

/// Edits (insertions, deletions, substitutions, swaps of neighbours) between two words.
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

/// A token as ANTLR's messages name it, in words: the end of the input, and the tokens that
/// have no fixed text by what they are (ANTLR names those by their rule).
std::string tokenInWords(const std::string &token, bool found) {
  if (token == "'<EOF>'" || token == "<EOF>") return found ? "end of the program" : "the end of the program";
  if (token == "NUMBER") return "a number";
  if (token == "IDENT") return "a name";
  if (token == "STRING") return "a \"string\"";
  if (token == "TEXT_STRING") return "'…' (text in single quotes)";
  return token;
}

/// What ANTLR says it expected (`'a'`, or `{'a', 'b'}`), in words: "'a' or 'b'".
std::string expectedInWords(const std::string &expected) {
  std::vector<std::string> tokens;
  if (expected.size() >= 2 && expected.front() == '{' && expected.back() == '}') {
    const std::string list = expected.substr(1, expected.size() - 2);
    for (size_t from = 0;;) { // ", " cannot occur inside a listed token: a comma token is "','"
      const size_t comma = list.find(", ", from);
      tokens.push_back(tokenInWords(list.substr(from, comma - from), false));
      if (comma == std::string::npos) break;
      from = comma + 2;
    }
  } else {
    tokens.push_back(tokenInWords(expected, false));
  }
  // A merge field: any keyword may name one (fieldName in Brevis.g4), so ANTLR lists every
  // keyword, the expressions' first tokens and a name. Said as what it is instead.
  auto has = [&](std::string_view t) { return std::find(tokens.begin(), tokens.end(), t) != tokens.end(); };
  if (has("a name") && has("'digest'") && has("'lit'")) {
    auto keyword = [](const std::string &t) { return t.size() > 2 && t.front() == '\'' && std::isalpha(t[1]); };
    std::erase_if(tokens, [&](const std::string &t) { return t == "a name" || t == "'?'" || keyword(t); });
    tokens.push_back("a merge field (a name followed by ':', or an expression such as 'lit …' or '? u8[64]')");
  }
  std::string words;
  for (size_t i = 0; i < tokens.size(); ++i)
    words += (i == 0 ? "" : i + 1 == tokens.size() ? " or " : ", ") + tokens[i];
  return words;
}

/// ANTLR's message for a syntax error in plain words ("mismatched input 'x' expecting {'a', 'b'}"
/// reads "unexpected 'x'; expected 'a' or 'b'"); a message of another form is kept as it is.
std::string syntaxErrorInWords(const std::string &message) {
  auto after = [&](std::string_view prefix) -> std::optional<std::string> {
    if (message.rfind(prefix, 0) != 0) return std::nullopt;
    return message.substr(prefix.size());
  };
  for (std::string_view prefix : {"mismatched input ", "extraneous input "})
    if (auto rest = after(prefix)) {
      const size_t at = rest->rfind(" expecting "); // the input's text may hold the words, the list not
      if (at == std::string::npos) break;
      return "unexpected " + tokenInWords(rest->substr(0, at), true) + "; expected " +
             expectedInWords(rest->substr(at + 11));
    }
  if (auto rest = after("missing ")) {
    const size_t at = rest->find(" at "); // the expected token cannot hold the words, the input's text may
    if (at != std::string::npos)
      return "expected " + expectedInWords(rest->substr(0, at)) + " before " +
             tokenInWords(rest->substr(at + 4), false);
  }
  if (auto rest = after("no viable alternative at input ")) return *rest + " cannot be read as part of a program";
  return message;
}

/// Keeps the first syntax error; anything after it would be an artefact of recovery.
class FirstErrorListener final : public antlr4::BaseErrorListener {
public:
  void syntaxError(antlr4::Recognizer *recognizer, Token *offending, size_t line, size_t charPositionInLine,
                   const std::string &msg, std::exception_ptr) override {
    if (error_) return;
    std::string words = syntaxErrorInWords(msg);
    // A hole written alone: say how it is written, not only which token came instead.
    auto *parser = dynamic_cast<antlr4::Parser *>(recognizer);
    if (parser && offending && offending->getTokenIndex() > 0 && offending->getTokenIndex() != INVALID_INDEX &&
        parser->getTokenStream()->get(offending->getTokenIndex() - 1)->getText() == "?")
      words = "a hole '?' is followed by the type of what fills it, as in '? u8[64]': " + words;
    error_ = Diagnostic{Severity::Error, {static_cast<uint32_t>(line), static_cast<uint32_t>(charPositionInLine + 1)},
                        std::move(words)};
  }

  const std::optional<Diagnostic> &error() const { return error_; }

private:
  std::optional<Diagnostic> error_;
};

// ANTLR's messages, but no recovery: resynchronizing only produces follow-on errors, and
// stopping at once bounds the work spent on broken input. Quoted input is kept short.
class FirstErrorStrategy final : public antlr4::DefaultErrorStrategy {
public:
  void recover(antlr4::Parser *, std::exception_ptr) override { throw antlr4::ParseCancellationException(); }

  Token *recoverInline(antlr4::Parser *parser) override {
    // Reports the error (or throws InputMismatchException, which the rule reports and hands to recover).
    DefaultErrorStrategy::recoverInline(parser);
    throw antlr4::ParseCancellationException();
  }

  void sync(antlr4::Parser *parser) override {
    DefaultErrorStrategy::sync(parser);
    if (inErrorRecoveryMode(parser)) throw antlr4::ParseCancellationException();
  }

protected:
  /// An identifier where keywords could stand, close to one of them: "unknown keyword 'heder';
  /// did you mean 'header'?" instead of ANTLR's list. Where the end of the input was expected,
  /// a region could have started too (ANTLR names only the end after a region).
  std::optional<std::string> misspelledKeyword(antlr4::Parser *parser, Token *bad,
                                               const antlr4::misc::IntervalSet &expected) {
    if (!bad || bad->getType() != G::IDENT) return std::nullopt;
    const std::string word = bad->getText();
    if (word.size() > 32) return std::nullopt;
    std::vector<ssize_t> candidates = expected.toList();
    if (expected.contains(Token::EOF)) candidates.insert(candidates.end(), {G::HEADER, G::BYTES, G::TENSOR});
    std::optional<std::string> best;
    size_t bestDistance = word.size() <= 4 ? 2 : 3; // one edit in a short word, two in a longer one
    for (ssize_t type : candidates) {
      if (type < 0) continue;
      std::string literal = parser->getVocabulary().getLiteralName(static_cast<size_t>(type));
      if (literal.size() < 3 || literal.front() != '\'' ||
          !std::all_of(literal.begin() + 1, literal.end() - 1, [](char c) { return c >= 'a' && c <= 'z'; }))
        continue;
      literal = literal.substr(1, literal.size() - 2);
      if (size_t d = editDistance(word, literal); d < bestDistance) {
        bestDistance = d;
        best = literal;
      }
    }
    if (!best) return std::nullopt;
    return fmt::format("unknown keyword '{}'; did you mean '{}'?", excerpt(word), *best);
  }

  void reportInputMismatch(antlr4::Parser *parser, const antlr4::InputMismatchException &e) override {
    if (auto msg = misspelledKeyword(parser, e.getOffendingToken(), e.getExpectedTokens()))
      return parser->notifyErrorListeners(e.getOffendingToken(), *msg, std::make_exception_ptr(e));
    DefaultErrorStrategy::reportInputMismatch(parser, e);
  }

  std::string getTokenErrorDisplay(Token *t) override {
    std::string quoted = DefaultErrorStrategy::getTokenErrorDisplay(t);
    // The display is quoted: keep the closing quote when shortening.
    return quoted.size() <= kExcerptChars + 2 ? quoted : excerpt(quoted) + "'";
  }

  void reportNoViableAlternative(antlr4::Parser *parser, const antlr4::NoViableAltException &e) override {
    Token *start = e.getStartToken();
    Token *bad = e.getOffendingToken();
    std::string msg;
    if (start == bad) {
      // The decision failed on its first token, so the expected set is exactly the decision's.
      if (auto misspelled = misspelledKeyword(parser, bad, e.getExpectedTokens()))
        return parser->notifyErrorListeners(bad, *misspelled, std::make_exception_ptr(e));
      msg = fmt::format("mismatched input {} expecting {}", getTokenErrorDisplay(bad),
                        e.getExpectedTokens().toString(parser->getVocabulary()));
    } else {
      // Quote the source text (with its spacing) rather than ANTLR's glued-together tokens.
      antlr4::misc::Interval span(start->getStartIndex(), bad->getStopIndex());
      std::string text = bad->getInputStream()->getText(span);
      msg = "no viable alternative at input " + escapeWSAndQuote(excerpt(text));
    }
    parser->notifyErrorListeners(bad, msg, std::make_exception_ptr(e));
  }
};

/// Where a piece of the program starts. A checkpoint is read piece by piece, each with its own
/// tokens and parse tree: the declarations before the first region, then each region.
struct Piece {
  size_t begin = 0;
  uint32_t line = 1;
  uint32_t column = 0; ///< 0-based, as ANTLR counts
  size_t tokens = 0;
};

bool isRegionKeyword(size_t type) { return type == G::HEADER || type == G::BYTES || type == G::TENSOR; }

/// Splits the text into pieces as it scans it, and finds what must be reported before any
/// parsing: tokens the lexer made only to report them, nesting deeper than the parser's stack
/// allows, and pieces of more than kMaxRegionTokens tokens. Stops at the first such problem.
///
/// A checkpoint's regions start with a region keyword outside any brackets, and nowhere else
/// may a keyword stand there: field names (which may be keywords) lie inside `merge(...)`.
class PieceScanner {
public:
  struct Problem {
    SourceLoc loc;
    std::string message;
  };

  explicit PieceScanner(std::string_view text) : text_(text), scanner_(text) {}

  /// The next piece (the first one starts at the text's start, even if empty) and, if `tokens`
  /// is given, its tokens; false after the last piece, or at a problem.
  bool next(Piece &piece, std::vector<ScannedToken> *tokens) {
    if (done_ || problem_) return false;
    if (tokens) tokens->clear();
    ScannedToken t;
    bool have = pending_.has_value();
    if (have) {
      t = *pending_;
      pending_.reset();
      piece = Piece{t.start, static_cast<uint32_t>(t.line), static_cast<uint32_t>(t.column), 0};
    } else {
      piece = Piece{};
      have = scanner_.next(t);
    }
    const bool first = pieces_++ == 0;
    SourceLoc pieceStart;
    for (; have; have = scanner_.next(t)) {
      const SourceLoc loc{static_cast<uint32_t>(t.line), static_cast<uint32_t>(t.column + 1)};
      if (first && !pieceStart.valid()) {
        checkpoint_ = t.type == G::BREVIS;
      } else if (checkpoint_ && depth_ == 0 && isRegionKeyword(t.type) && piece.tokens > 0) {
        pending_ = t; // the next piece's first token
        return true;
      }
      if (!pieceStart.valid()) pieceStart = loc;
      if (++piece.tokens > kMaxRegionTokens) {
        const char *what = !checkpoint_ ? "the expression has"
                           : first      ? "the declarations before the first region have"
                                        : "the region has";
        return fail(pieceStart, fmt::format("{} more than {} tokens, more than brevisc parses", what, kMaxRegionTokens));
      }
      switch (t.type) {
      case G::UNEXPECTED_CHAR:
        return fail(loc,
                    fmt::format("unexpected character '{}'", displayChar(static_cast<unsigned char>(text_[t.start]))));
      case G::UNTERMINATED_STRING: return fail(loc, "unterminated string");
      case G::LPAREN:
      case G::LBRACKET:
        if (++depth_ > kMaxNestingDepth)
          return fail(loc, fmt::format("expressions nest deeper than {} levels", kMaxNestingDepth));
        break;
      case G::RPAREN:
      case G::RBRACKET:
        if (depth_) --depth_;
        break;
      default: break;
      }
      if (tokens) tokens->push_back(t);
    }
    done_ = true;
    return true;
  }

  const std::optional<Problem> &problem() const { return problem_; }

private:
  bool fail(SourceLoc loc, std::string message) {
    problem_ = Problem{loc, std::move(message)};
    return false;
  }

  std::string_view text_;
  Scanner scanner_;
  std::optional<ScannedToken> pending_;
  std::optional<Problem> problem_;
  size_t pieces_ = 0;
  unsigned depth_ = 0;
  bool checkpoint_ = false;
  bool done_ = false;
};

/// Every piece of the text, or false after reporting the first problem PieceScanner finds.
bool scanPieces(std::string_view text, Diagnostics &diags, std::vector<Piece> &pieces) {
  PieceScanner scanner(text);
  pieces.clear();
  Piece piece;
  while (scanner.next(piece, nullptr)) pieces.push_back(piece);
  if (const auto &problem = scanner.problem()) {
    diags.error(problem->loc, problem->message);
    return false;
  }
  return true;
}

/// ANTLR parses of pieces of the program text, one at a time: a piece's tokens and tree live
/// until the next parse (one parser for all pieces: a parser per region took a tenth of a
/// checkpoint's parse).
class PieceParser {
public:
  explicit PieceParser(std::string fileName) : fileName_(std::move(fileName)) {}

  /// The tree of `rule` (a member function of the parser) over `text`, which starts at
  /// `line`:`column` (0-based) of the program; nullptr after a syntax error.
  template <typename Context>
  Context *parse(std::string_view text, uint32_t line, uint32_t column, Context *(G::*rule)()) {
    G &antlr = parser();
    antlr.setTokenStream(nullptr); // frees the last piece's tree before its tokens go
    listener_ = FirstErrorListener();
    tokens_.reset();
    lexer_.reset();
    input_.emplace(text, fileName_);
    lexer_.emplace(*input_, line, column); // never fails: stray bytes become tokens that scanPieces reports
    tokens_.emplace(&*lexer_);
    antlr.setTokenStream(&*tokens_);
    Context *tree = nullptr;
    try {
      tree = (antlr.*rule)();
    } catch (const antlr4::ParseCancellationException &) {
      // Thrown by FirstErrorStrategy after the listener has kept the error.
    }
    return listener_.error() ? nullptr : tree;
  }

  /// The syntax error that stopped the last parse.
  Diagnostic error() const {
    return listener_.error().value_or(Diagnostic{Severity::Error, {}, "the program could not be parsed"});
  }

private:
  /// Made on the first parse: the generated parser sets up its tables (a fifth of the start-up of
  /// a command) when the first one is made, and a well-formed program seldom needs one.
  G &parser() {
    if (!parser_) {
      parser_.emplace(nullptr);
      parser_->removeErrorListeners();
      parser_->addErrorListener(&listener_);
      parser_->setErrorHandler(std::make_shared<FirstErrorStrategy>());
      // The grammar is SLL: full-context prediction (ANTLR's default) only costs time here.
      parser_->getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(antlr4::atn::PredictionMode::SLL);
    }
    return *parser_;
  }

  std::string fileName_;
  std::optional<ByteStream> input_;
  std::optional<Lexer> lexer_;
  std::optional<antlr4::CommonTokenStream> tokens_;
  FirstErrorListener listener_;
  std::optional<G> parser_;
};

/// Builds the AST from a parse tree without syntax errors, reporting bad names, numbers and
/// escapes. Recursion depth is bounded by scanPieces.
class AstBuilder {
public:
  explicit AstBuilder(Diagnostics &diags) : diags_(diags) {}

  /// program : (checkpoint | expr) EOF
  Module program(G::ProgramContext *ctx) {
    if (auto *c = ctx->checkpoint()) return Module{checkpoint(c)};
    return Module{expr(ctx->expr())};
  }

  /// region : HEADER byteRange? '=' (SAFETENSORS '(' … ')' | expr) | BYTES ... | TENSOR STRING IDENT '[' numberList ']' ...
  Region region(G::RegionContext *ctx) {
    Region r;
    r.loc = locOf(ctx->getStart());
    if (auto *x = dynamic_cast<G::IndexHeaderRegionContext *>(ctx)) {
      r.kind = RegionKind::Header;
      r.index = safetensorsIndex(x);
      r.bytes = regionRange(x->byteRange(), r);
      r.digest = digest(x->regionDigest());
    } else if (auto *h = dynamic_cast<G::HeaderRegionContext *>(ctx)) {
      r.kind = RegionKind::Header;
      r.bytes = regionRange(h->byteRange(), r);
      r.digest = digest(h->regionDigest());
      r.program = expr(h->expr());
    } else if (auto *b = dynamic_cast<G::BytesRegionContext *>(ctx)) {
      r.kind = RegionKind::Bytes;
      r.bytes = regionRange(b->byteRange(), r);
      r.digest = digest(b->regionDigest());
      r.program = expr(b->expr());
    } else {
      auto *t = dynamic_cast<G::TensorRegionContext *>(ctx);
      r.kind = RegionKind::Tensor;
      r.name = unquote(t->name);
      std::string dtype = t->dtype->getText();
      if (auto d = dtypeFromBdslName(dtype))
        r.dtype = *d;
      else
        diags_.error(locOf(t->dtype), fmt::format("unknown dtype '{}'", excerpt(dtype)));
      r.shape = numbers(t->numberList());
      r.bytes = regionRange(t->byteRange(), r);
      r.digest = digest(t->regionDigest());
      r.program = expr(t->expr());
    }
    return r;
  }

private:
  /// checkpoint : BREVIS NUMBER sourceDecl payloadDecl region*
  Checkpoint checkpoint(G::CheckpointContext *ctx) {
    Checkpoint c;
    c.loc = locOf(ctx->getStart());
    // The type checker rejects unsupported versions; saturate so a huge one is not mistaken for 1.
    c.version = static_cast<unsigned>(std::min<uint64_t>(number(ctx->version), std::numeric_limits<unsigned>::max()));
    G::SourceDeclContext *src = ctx->sourceDecl();
    c.sourceLoc = locOf(src->getStart());
    c.payloadLoc = locOf(ctx->payloadDecl()->getStart());
    c.source.fileName = unquote(src->fileName);
    c.source.size = number(src->size);
    c.source.xxh64 = number(src->hash);
    G::PayloadDeclContext *payload = ctx->payloadDecl();
    c.payloadFile = unquote(payload->fileName);
    c.payloadSize = number(payload->size);
    for (G::RegionContext *r : ctx->region()) c.regions.push_back(region(r));
    return c;
  }

  /// regionDigest : DIGEST NUMBER (optional)
  std::optional<uint64_t> digest(G::RegionDigestContext *ctx) {
    if (!ctx) return std::nullopt;
    return number(ctx->hash);
  }

  /// byteRange : '@' NUMBER? '+' NUMBER; a left-out offset is kImpliedOffset
  ByteRange byteRange(G::ByteRangeContext *ctx) {
    ByteRange r;
    r.offset = kImpliedOffset;
    if (ctx->offset) {
      r.offset = number(ctx->offset);
      if (r.offset == kImpliedOffset) diags_.error(locOf(ctx->offset), "an offset must be below 2^64 - 1");
    }
    r.size = number(ctx->size);
    if (r.size == kImpliedSize) diags_.error(locOf(ctx->size), "a size must be below 2^64 - 1");
    return r;
  }

  /// A region's byteRange?: a tensor, or a header written as safetensors(…), may leave it out.
  ByteRange regionRange(G::ByteRangeContext *ctx, const Region &r) {
    if (ctx) return byteRange(ctx);
    if (r.kind == RegionKind::Bytes)
      diags_.error(r.loc, "a bytes region needs its byte range: @OFFSET+SIZE, or @+SIZE after the region before it");
    else if (r.kind == RegionKind::Header && !r.index)
      diags_.error(r.loc, "a header region written as an expression needs its byte range: @OFFSET+SIZE, or @+SIZE");
    return ByteRange{kImpliedOffset, kImpliedSize};
  }

  /// SAFETENSORS '(' indexPart (',' indexPart)* ')': `tensors` once, `metadata: '…'` at most
  /// once, before or after it.
  SafetensorsIndex safetensorsIndex(G::IndexHeaderRegionContext *ctx) {
    SafetensorsIndex index;
    index.loc = locOf(ctx->SAFETENSORS()->getSymbol());
    bool tensors = false, metadata = false;
    for (G::IndexPartContext *part : ctx->indexPart()) {
      const std::string name = part->name->getText();
      const SourceLoc loc = locOf(part->name);
      const bool hasText = !part->TEXT_STRING().empty();
      if (name == "tensors") {
        if (tensors) diags_.error(loc, "safetensors(…) lists tensors twice");
        if (hasText) diags_.error(loc, "tensors takes no text; the metadata is written metadata: '{…}'");
        tensors = true;
      } else if (name == "metadata") {
        if (metadata) diags_.error(loc, "safetensors(…) has metadata twice");
        if (!hasText) diags_.error(loc, "metadata needs its JSON text: metadata: '{…}'");
        metadata = true;
        index.placement = tensors ? SafetensorsIndex::Metadata::Last : SafetensorsIndex::Metadata::First;
        for (antlr4::tree::TerminalNode *piece : part->TEXT_STRING()) index.metadata += unquote(piece->getSymbol());
      } else {
        diags_.error(loc, fmt::format("unknown part '{}' of safetensors(…); expected tensors or metadata", excerpt(name)));
      }
    }
    if (!tensors)
      diags_.error(index.loc, "safetensors(…) must list tensors: safetensors(tensors), or with the metadata "
                              "before or after them: safetensors(metadata: '{…}', tensors)");
    return index;
  }

  /// expr : term (':' streamType)?
  ExprPtr expr(G::ExprContext *ctx) {
    ExprPtr e = term(ctx->term());
    if (ctx->annotation) e->annotation = streamType(ctx->annotation);
    return e;
  }

  /// term : one alternative per expression kind (payloadLit, inlineLit, constExpr, ...)
  ExprPtr term(G::TermContext *ctx) {
    ExprPtr e = termBody(ctx);
    e->loc = locOf(ctx->getStart());
    return e;
  }

  /// term: the node for whichever labelled alternative matched, without its location.
  ExprPtr termBody(G::TermContext *ctx) {
    if (auto *l = dynamic_cast<G::PayloadLitContext *>(ctx)) {
      std::string name = l->encoding->getText();
      auto encoding = encodingFromName(name);
      const bool hole = !l->byteRange();
      if (!encoding && !(hole && name == kAutoEncodingName)) {
        std::vector<std::string_view> names;
        for (Encoding e : kAllEncodings) names.push_back(encodingName(e));
        if (hole) names.push_back(kAutoEncodingName);
        diags_.error(locOf(l->encoding), fmt::format("unknown encoding '{}'; expected {}", excerpt(name), alternatives(names)));
      }
      StreamType type = streamType(l->streamType());
      if (hole) return Hole::makeLiteral(type, encoding);
      return Lit::make(type, encoding.value_or(Encoding::Raw), byteRange(l->byteRange()));
    }
    if (auto *l = dynamic_cast<G::InlineLitContext *>(ctx)) {
      StreamType type = streamType(l->streamType());
      std::vector<Radix> radixes;
      auto lit = Lit::make(type, numbers(l->numberList(), &radixes));
      lit->radix = listRadix(radixes);
      return lit;
    }
    if (auto *t = dynamic_cast<G::TextLitContext *>(ctx)) {
      std::string bytes;
      for (antlr4::tree::TerminalNode *piece : t->TEXT_STRING()) bytes += unquote(piece->getSymbol());
      return Lit::makeText(std::move(bytes));
    }
    if (auto *c = dynamic_cast<G::ConstExprContext *>(ctx)) {
      StreamType type = streamType(c->streamType());
      auto e = Const::make(type, number(c->value));
      e->radix = radixOf(c->value->getText());
      return e;
    }
    if (auto *c = dynamic_cast<G::ConcatExprContext *>(ctx)) {
      std::vector<ExprPtr> parts;
      for (G::ExprContext *part : c->expr()) parts.push_back(expr(part));
      return Concat::make(std::move(parts));
    }
    if (auto *r = dynamic_cast<G::RepeatExprContext *>(ctx)) {
      uint64_t count = number(r->count);
      auto e = Repeat::make(count, expr(r->expr()));
      e->radix = radixOf(r->count->getText());
      return e;
    }
    if (auto *m = dynamic_cast<G::MapExprContext *>(ctx)) return mapExpr(m);
    if (auto *s = dynamic_cast<G::ScanExprContext *>(ctx)) {
      std::string name = s->op->getText();
      auto op = scanOpFromName(name);
      if (!op)
        diags_.error(locOf(s->op), fmt::format("unknown scan operator '{}'; expected {} or {}", excerpt(name),
                                               scanOpName(ScanOp::Xor), scanOpName(ScanOp::Add)));
      uint64_t init = number(s->init);
      auto e = Scan::make(op.value_or(ScanOp::Add), init, expr(s->expr()));
      e->radix = radixOf(s->init->getText());
      return e;
    }
    if (auto *m = dynamic_cast<G::MergeExprContext *>(ctx)) {
      std::vector<MergeField> fields;
      for (G::MergeFieldContext *f : m->mergeField()) fields.push_back(mergeField(f));
      return Merge::make(std::move(fields));
    }
    auto *h = dynamic_cast<G::HoleExprContext *>(ctx);
    return Hole::make(streamType(h->streamType()));
  }

  /// term alternative mapExpr : MAP IDENT (NUMBER | '[' numberList ']' ('per' NUMBER)?)? '(' expr ')'
  ExprPtr mapExpr(G::MapExprContext *ctx) {
    std::string name = ctx->fn->getText();
    auto fn = mapFnFromName(name);
    if (!fn) {
      std::vector<std::string_view> known = {
#define BREVIS_MAPFN(E, kw, param, doc) kw,
#include "lang/MapFns.def"
      };
      diags_.error(locOf(ctx->fn),
                   fmt::format("unknown map function '{}'; expected {}", excerpt(name), alternatives(known)));
    } else if (mapFnTakesParameter(*fn) && !ctx->param && !ctx->numberList()) {
      diags_.error(locOf(ctx->fn), fmt::format("map {} needs a parameter", name));
    } else if (!mapFnTakesParameter(*fn) && ctx->param) {
      diags_.error(locOf(ctx->param), fmt::format("map {} takes no parameter", name));
    } else if (ctx->numberList() && *fn != MapFn::Add && *fn != MapFn::Xor) {
      diags_.error(locOf(ctx->fn), fmt::format("map {} takes no list of constants (add and xor do)", name));
    } else if (ctx->numberList() && ctx->numberList()->NUMBER().empty()) {
      diags_.error(locOf(ctx->fn), fmt::format("map {}'s list of constants is empty", name));
    }
    uint64_t param = ctx->param ? number(ctx->param) : 0;
    auto e = Map::make(fn.value_or(MapFn::Xor), param, expr(ctx->expr()));
    if (ctx->param) e->radix = radixOf(ctx->param->getText());
    if (ctx->numberList()) {
      std::vector<Radix> radixes;
      e->periodic = numbers(ctx->numberList(), &radixes);
      e->radix = listRadix(radixes);
    }
    if (ctx->per) {
      if (ctx->per->getText() != "per")
        diags_.error(locOf(ctx->per), fmt::format("expected 'per' and a word count after the list of constants, found '{}'",
                                                  excerpt(ctx->per->getText())));
      e->per = number(ctx->run);
    }
    return e;
  }

  /// mergeField : (fieldName ':')? expr
  MergeField mergeField(G::MergeFieldContext *ctx) {
    MergeField f;
    if (ctx->fieldName()) f.name = ctx->fieldName()->getText();
    f.expr = expr(ctx->expr());
    return f;
  }

  /// streamType : IDENT '[' NUMBER ']', where IDENT is u<W>
  StreamType streamType(G::StreamTypeContext *ctx) {
    StreamType t;
    std::string name = ctx->name->getText();
    bool wellFormed = name.size() >= 2 && name[0] == 'u' &&
                      name.find_first_not_of("0123456789", 1) == std::string::npos;
    if (!wellFormed) {
      diags_.error(locOf(ctx->name),
                   fmt::format("expected a stream type like u8[1024], found '{}'", excerpt(name)));
    } else {
      // Widths outside 1..64 are the type checker's to report; saturate so huge ones cannot wrap.
      uint64_t width = 0;
      for (size_t i = 1; i < name.size(); ++i)
        width = std::min<uint64_t>(width * 10 + (name[i] - '0'), std::numeric_limits<unsigned>::max());
      t.width = static_cast<unsigned>(width);
    }
    t.length = number(ctx->length);
    return t;
  }

  /// numberList : (NUMBER (',' NUMBER)*)?
  std::vector<uint64_t> numbers(G::NumberListContext *ctx, std::vector<Radix> *radixes = nullptr) {
    // One call: NUMBER(i) rescans the children, which would be quadratic on long word lists.
    std::vector<antlr4::tree::TerminalNode *> nodes = ctx->NUMBER();
    std::vector<uint64_t> out;
    out.reserve(nodes.size());
    for (auto *n : nodes) {
      out.push_back(number(n->getSymbol()));
      if (radixes) radixes->push_back(radixOf(n->getSymbol()->getText()));
    }
    return out;
  }

  /// NUMBER: decimal or 0x-prefixed hex, at most 64 bits. Reports and returns 0 otherwise.
  uint64_t number(Token *t) {
    std::string text = t->getText();
    bool hex = text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    unsigned base = hex ? 16 : 10;
    std::string_view digits = std::string_view(text).substr(hex ? 2 : 0);
    uint64_t value = 0;
    bool overflow = false;
    for (char c : digits) {
      unsigned d = digitValue(c);
      if (d >= base) {
        diags_.error(locOf(t), fmt::format("malformed number '{}'", excerpt(text)));
        return 0;
      }
      overflow |= __builtin_mul_overflow(value, base, &value) || __builtin_add_overflow(value, d, &value);
    }
    if (digits.empty()) {
      diags_.error(locOf(t), fmt::format("malformed number '{}'", excerpt(text)));
      return 0;
    }
    if (overflow) {
      diags_.error(locOf(t), fmt::format("number {} does not fit in 64 bits", excerpt(text)));
      return 0;
    }
    return value;
  }

  /// STRING: the bytes between the quotes, with \" \\ and \xNN decoded. TEXT_STRING: between
  /// single quotes, with \' \\ \n \t \r and \xNN.
  std::string unquote(Token *t) {
    const std::string text = t->getText();
    const char quote = text.front();
    std::string out;
    const size_t bad = decodeEscapes(std::string_view(text).substr(1, text.size() - 2), quote, out);
    if (bad != std::string_view::npos) {
      SourceLoc loc = locOf(t);
      loc.column += static_cast<uint32_t>(bad + 1);
      if (quote == '"')
        diags_.error(loc, fmt::format("invalid escape '\\{}' in string; expected \\\", \\\\ or \\xNN",
                                      displayChar(static_cast<unsigned char>(text[bad + 2]))));
      else
        diags_.error(loc, "invalid escape in text: \\x takes two hex digits (\\x0a)");
    }
    return out;
  }

  Diagnostics &diags_;
};

/// Reads a region piece without ANTLR when it is well formed: the grammar's region rule by
/// recursive descent over the scanner's tokens, building what AstBuilder builds. It gives up at
/// the first token it does not expect and at any name, number or string AstBuilder would report;
/// ANTLR then reads the piece and reports precisely. (ANTLR's parser and trees were four fifths
/// of the time to load a program of many small regions.) Recursion is bounded by PieceScanner.
class FastRegionReader {
public:
  /// The region `text` holds, which starts at `line`:`column` (0-based); nullopt if ANTLR must read it.
  std::optional<Region> read(std::string_view text, uint32_t line, uint32_t column) {
    scan(text, line, column);
    return wholeRegion();
  }
  /// The same for a region whose tokens PieceScanner has scanned from `text` (taken).
  std::optional<Region> read(std::string_view text, std::vector<ScannedToken> &tokens) {
    take(text, tokens);
    return wholeRegion();
  }

  /// The declarations of a checkpoint program before its first region (`brevis 1`, `source`,
  /// `payload`), which `text` holds; nullopt if ANTLR must read them (an expression program,
  /// anything unexpected: ANTLR then gives the exact diagnostic).
  std::optional<Checkpoint> prologue(std::string_view text, uint32_t line, uint32_t column) {
    scan(text, line, column);
    return prologue();
  }
  /// The same for declarations whose tokens PieceScanner has scanned from `text` (taken).
  std::optional<Checkpoint> prologue(std::string_view text, std::vector<ScannedToken> &tokens) {
    take(text, tokens);
    return prologue();
  }

private:
  /// The region the tokens hold, all of them.
  std::optional<Region> wholeRegion() {
    Region r = region();
    if (failed_ || at_ != tokens_.size()) return std::nullopt;
    return r;
  }

  std::optional<Checkpoint> prologue() {
    Checkpoint c;
    const ScannedToken *brevis = expect(G::BREVIS);
    if (!brevis) return std::nullopt;
    c.loc = locOf(*brevis);
    c.version = static_cast<unsigned>(std::min<uint64_t>(number(), std::numeric_limits<unsigned>::max()));
    const ScannedToken *source = expect(G::SOURCE);
    const ScannedToken *sourceName = expect(G::STRING);
    if (failed_ || !unquote(textOf(*sourceName), c.source.fileName)) return std::nullopt;
    c.sourceLoc = locOf(*source);
    expect(G::SIZE);
    c.source.size = number();
    expect(G::XXH64);
    c.source.xxh64 = number();
    const ScannedToken *payload = expect(G::PAYLOAD);
    const ScannedToken *payloadName = expect(G::STRING);
    if (failed_ || !unquote(textOf(*payloadName), c.payloadFile)) return std::nullopt;
    c.payloadLoc = locOf(*payload);
    expect(G::SIZE);
    c.payloadSize = number();
    if (failed_ || at_ != tokens_.size()) return std::nullopt;
    return c;
  }

  void take(std::string_view text, std::vector<ScannedToken> &tokens) {
    text_ = text;
    tokens_.swap(tokens);
    at_ = 0;
    failed_ = false;
  }

  void scan(std::string_view text, uint32_t line, uint32_t column) {
    text_ = text;
    tokens_.clear();
    at_ = 0;
    failed_ = false;
    Scanner scanner(text, line, column);
    ScannedToken t;
    while (scanner.next(t)) tokens_.push_back(t);
  }

  size_t peek(size_t ahead = 0) const { return at_ + ahead < tokens_.size() ? tokens_[at_ + ahead].type : 0; }
  std::string_view textOf(const ScannedToken &t) const { return text_.substr(t.start, t.length); }
  static SourceLoc locOf(const ScannedToken &t) {
    return {static_cast<uint32_t>(t.line), static_cast<uint32_t>(t.column + 1)};
  }

  /// The next token if it has `type`; otherwise marks the read failed.
  const ScannedToken *expect(size_t type) {
    if (failed_ || peek() != type) {
      failed_ = true;
      return nullptr;
    }
    return &tokens_[at_++];
  }

  bool fail() {
    failed_ = true;
    return false;
  }

  Region region() {
    Region r;
    if (at_ >= tokens_.size()) {
      fail();
      return r;
    }
    const ScannedToken &first = tokens_[at_++];
    r.loc = locOf(first);
    if (first.type == G::HEADER) {
      r.kind = RegionKind::Header;
    } else if (first.type == G::BYTES) {
      r.kind = RegionKind::Bytes;
    } else if (first.type == G::TENSOR) {
      r.kind = RegionKind::Tensor;
      const ScannedToken *name = expect(G::STRING);
      if (!name || !unquote(textOf(*name), r.name)) {
        fail();
        return r;
      }
      const ScannedToken *dtype = expect(G::IDENT);
      auto d = dtype ? dtypeFromBdslName(textOf(*dtype)) : std::nullopt;
      if (!d) {
        fail();
        return r;
      }
      r.dtype = *d;
      expect(G::LBRACKET);
      r.shape = numberList();
      expect(G::RBRACKET);
    } else {
      fail();
      return r;
    }
    const bool ranged = peek() == G::AT;
    r.bytes = ranged ? byteRange() : ByteRange{kImpliedOffset, kImpliedSize};
    if (peek() == G::DIGEST) {
      ++at_;
      r.digest = number();
    }
    expect(G::EQUALS);
    if (r.kind == RegionKind::Header && peek() == G::SAFETENSORS) {
      r.index = safetensorsIndex();
      return r;
    }
    // A tensor may leave its range out; the others go to AstBuilder, which reports it.
    if (!ranged && r.kind != RegionKind::Tensor) fail();
    if (!failed_) r.program = expr();
    return r;
  }

  /// safetensors(tensors) with the metadata's text before or after: `metadata: 'JSON' …`. Parts
  /// twice, unknown or without their text go to AstBuilder, which reports them.
  SafetensorsIndex safetensorsIndex() {
    SafetensorsIndex index;
    index.loc = locOf(tokens_[at_++]);
    expect(G::LPAREN);
    bool tensors = false, metadata = false;
    for (bool more = true; more;) {
      const ScannedToken *name = expect(G::IDENT);
      if (!name) break;
      if (textOf(*name) == "tensors" && !tensors) {
        tensors = true;
      } else if (textOf(*name) == "metadata" && !metadata && expect(G::COLON) && peek() == G::TEXT_STRING) {
        metadata = true;
        index.placement = tensors ? SafetensorsIndex::Metadata::Last : SafetensorsIndex::Metadata::First;
        while (peek() == G::TEXT_STRING) {
          const std::string_view piece = textOf(tokens_[at_++]);
          if (decodeEscapes(piece.substr(1, piece.size() - 2), '\'', index.metadata) != std::string_view::npos) fail();
        }
      } else {
        fail();
      }
      more = !failed_ && peek() == G::COMMA;
      if (more) ++at_;
    }
    expect(G::RPAREN);
    if (!tensors) fail();
    return index;
  }

  ByteRange byteRange() {
    ByteRange r;
    expect(G::AT);
    r.offset = kImpliedOffset;
    if (peek() == G::NUMBER) {
      r.offset = number();
      if (r.offset == kImpliedOffset) fail();
    }
    expect(G::PLUS);
    r.size = number();
    if (r.size == kImpliedSize) fail();
    return r;
  }

  ExprPtr expr() {
    ExprPtr e = term();
    if (e && peek() == G::COLON) {
      ++at_;
      e->annotation = streamType();
    }
    return failed_ ? nullptr : std::move(e);
  }

  ExprPtr term() {
    if (failed_ || at_ >= tokens_.size()) return fail(), nullptr;
    const ScannedToken &first = tokens_[at_++];
    ExprPtr e;
    switch (first.type) {
    case G::LIT:
      if (peek() == G::IDENT && peek(1) == G::IDENT) {
        const std::string_view name = textOf(tokens_[at_++]);
        auto encoding = encodingFromName(name);
        StreamType type = streamType();
        if (peek() != G::AT) { // a literal hole
          if (!encoding && name != kAutoEncodingName) return fail(), nullptr;
          e = Hole::makeLiteral(type, encoding);
        } else {
          if (!encoding) return fail(), nullptr;
          e = Lit::make(type, *encoding, byteRange());
        }
      } else {
        StreamType type = streamType();
        expect(G::LBRACKET);
        std::vector<Radix> radixes;
        std::vector<uint64_t> words = numberList(&radixes);
        expect(G::RBRACKET);
        auto lit = Lit::make(type, std::move(words));
        lit->radix = listRadix(radixes);
        e = std::move(lit);
      }
      break;
    case G::TEXT: {
      std::string bytes;
      if (peek() != G::TEXT_STRING) return fail(), nullptr;
      while (peek() == G::TEXT_STRING) {
        const std::string_view piece = textOf(tokens_[at_++]);
        if (decodeEscapes(piece.substr(1, piece.size() - 2), '\'', bytes) != std::string_view::npos)
          return fail(), nullptr;
      }
      e = Lit::makeText(std::move(bytes));
      break;
    }
    case G::CONST: {
      StreamType type = streamType();
      Radix radix = Radix::Auto;
      auto c = Const::make(type, number(&radix));
      c->radix = radix;
      e = std::move(c);
      break;
    }
    case G::CONCAT: {
      std::vector<ExprPtr> parts;
      expect(G::LPAREN);
      if (peek() != G::RPAREN) {
        parts.push_back(expr());
        while (!failed_ && peek() == G::COMMA) {
          ++at_;
          parts.push_back(expr());
        }
      }
      expect(G::RPAREN);
      e = Concat::make(std::move(parts));
      break;
    }
    case G::REPEAT: {
      Radix radix = Radix::Auto;
      uint64_t count = number(&radix);
      auto r = Repeat::make(count, body());
      r->radix = radix;
      e = std::move(r);
      break;
    }
    case G::MAP: {
      const ScannedToken *name = expect(G::IDENT);
      auto fn = name ? mapFnFromName(textOf(*name)) : std::nullopt;
      if (!fn) return fail(), nullptr;
      Radix radix = Radix::Auto;
      std::vector<uint64_t> periodic;
      uint64_t per = 1;
      if (peek() == G::LBRACKET) { // a list of constants: add and xor
        if (*fn != MapFn::Add && *fn != MapFn::Xor) return fail(), nullptr;
        expect(G::LBRACKET);
        std::vector<Radix> radixes;
        periodic = numberList(&radixes);
        expect(G::RBRACKET);
        if (periodic.empty()) return fail(), nullptr;
        radix = listRadix(radixes);
        if (peek() == G::IDENT) { // `per R`
          if (textOf(tokens_[at_]) != "per") return fail(), nullptr;
          ++at_;
          per = number();
        }
      } else if (mapFnTakesParameter(*fn) != (peek() == G::NUMBER)) {
        return fail(), nullptr;
      }
      uint64_t param = peek() == G::NUMBER ? number(&radix) : 0;
      auto m = Map::make(*fn, param, body());
      m->radix = radix;
      m->periodic = std::move(periodic);
      m->per = per;
      e = std::move(m);
      break;
    }
    case G::SCAN: {
      const ScannedToken *name = expect(G::IDENT);
      auto op = name ? scanOpFromName(textOf(*name)) : std::nullopt;
      if (!op) return fail(), nullptr;
      Radix radix = Radix::Auto;
      uint64_t init = number(&radix);
      auto sc = Scan::make(*op, init, body());
      sc->radix = radix;
      e = std::move(sc);
      break;
    }
    case G::MERGE: {
      std::vector<MergeField> fields;
      expect(G::LPAREN);
      if (peek() != G::RPAREN) {
        do {
          if (!fields.empty()) ++at_; // the comma
          MergeField f;
          if (isFieldName(peek()) && peek(1) == G::COLON) {
            f.name = textOf(tokens_[at_]);
            at_ += 2;
          }
          f.expr = expr();
          fields.push_back(std::move(f));
        } while (!failed_ && peek() == G::COMMA);
      }
      expect(G::RPAREN);
      e = Merge::make(std::move(fields));
      break;
    }
    case G::QUESTION: e = Hole::make(streamType()); break;
    default: return fail(), nullptr;
    }
    if (failed_) return nullptr;
    e->loc = locOf(first);
    return e;
  }

  /// '(' expr ')'
  ExprPtr body() {
    expect(G::LPAREN);
    ExprPtr e = failed_ ? nullptr : expr();
    expect(G::RPAREN);
    return e;
  }

  static bool isFieldName(size_t type) {
    switch (type) {
    case G::IDENT: case G::BREVIS: case G::SOURCE: case G::SIZE: case G::XXH64: case G::PAYLOAD: case G::HEADER:
    case G::BYTES: case G::TENSOR: case G::DIGEST: case G::LIT: case G::TEXT: case G::CONST: case G::CONCAT: case G::REPEAT:
    case G::MAP: case G::SCAN: case G::MERGE: case G::SAFETENSORS: return true;
    default: return false;
    }
  }

  /// IDENT '[' NUMBER ']', where IDENT is u<W> (W saturated, as AstBuilder does)
  StreamType streamType() {
    StreamType t;
    const ScannedToken *name = expect(G::IDENT);
    if (!name) return t;
    std::string_view n = textOf(*name);
    if (n.size() < 2 || n[0] != 'u' || n.find_first_not_of("0123456789", 1) != std::string_view::npos) {
      fail();
      return t;
    }
    uint64_t width = 0;
    for (size_t i = 1; i < n.size(); ++i)
      width = std::min<uint64_t>(width * 10 + (n[i] - '0'), std::numeric_limits<unsigned>::max());
    t.width = static_cast<unsigned>(width);
    expect(G::LBRACKET);
    t.length = number();
    expect(G::RBRACKET);
    return t;
  }

  /// (NUMBER (',' NUMBER)*)?, with each number's radix into `radixes` if given
  std::vector<uint64_t> numberList(std::vector<Radix> *radixes = nullptr) {
    std::vector<uint64_t> out;
    if (peek() != G::NUMBER) return out;
    // Sized once: a program of many small literals reads a short list per literal.
    size_t count = 1;
    for (size_t k = at_ + 1; k + 1 < tokens_.size() && tokens_[k].type == G::COMMA && tokens_[k + 1].type == G::NUMBER;
         k += 2)
      ++count;
    out.reserve(count);
    if (radixes) radixes->reserve(radixes->size() + count);
    auto one = [&] {
      Radix radix = Radix::Auto;
      out.push_back(number(&radix));
      if (radixes) radixes->push_back(radix);
    };
    one();
    while (!failed_ && peek() == G::COMMA) {
      ++at_;
      one();
    }
    return out;
  }

  /// NUMBER, decimal or 0x-prefixed hex, at most 64 bits; its radix into `radix` if given
  uint64_t number(Radix *radix = nullptr) {
    const ScannedToken *t = expect(G::NUMBER);
    if (!t) return 0;
    std::string_view text = textOf(*t);
    if (radix) *radix = radixOf(text);
    bool hex = text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    unsigned base = hex ? 16 : 10;
    std::string_view digits = text.substr(hex ? 2 : 0);
    uint64_t value = 0;
    bool bad = digits.empty();
    for (char c : digits) {
      unsigned d = digitValue(c);
      bad |= d >= base || __builtin_mul_overflow(value, base, &value) || __builtin_add_overflow(value, d, &value);
    }
    if (bad) fail();
    return value;
  }

  /// STRING with only \" \\ and \xNN escapes, decoded into `out`
  static bool unquote(std::string_view text, std::string &out) {
    return decodeEscapes(text.substr(1, text.size() - 2), '"', out) == std::string_view::npos;
  }

  std::string_view text_;
  std::vector<ScannedToken> tokens_;
  size_t at_ = 0;
  bool failed_ = false;
};

} // namespace

namespace {

/// Keeps the text's `#` comments in the module (the grammar skips them), each with the region
/// it is written in or just before; see Ast.h's Region::comments and Module.
void attachComments(std::string_view text, Module &module) {
  if (text.find('#') == std::string_view::npos) return; // most programs: not a byte at a time
  struct Comment {
    uint32_t line;
    bool afterCode; ///< code before it on its line
    std::string text;
  };
  std::vector<Comment> comments;
  std::vector<bool> lineHasCode{false, false}; // 1-based
  uint32_t line = 1;
  char inString = 0; // the quote of the string the scan is in
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      lineHasCode.push_back(false);
      inString = 0;
      continue;
    }
    if (inString) {
      if (c == '\\') ++i;
      else if (c == inString) inString = 0;
      continue;
    }
    if (c == '#') {
      // A comment ends where the grammar's COMMENT does, at `\r` or `\n`: code after a lone
      // `\r` on the same line is code, and printing it inside the comment would hide it.
      size_t end = text.find_first_of("\r\n", i);
      if (end == std::string_view::npos) end = text.size();
      std::string_view body = text.substr(i, end - i);
      while (!body.empty() && (body.back() == ' ' || body.back() == '\t')) body.remove_suffix(1);
      comments.push_back({line, lineHasCode[line], std::string(body)});
      i = end - 1;
      continue;
    }
    if (c == '"' || c == '\'') inString = c;
    if (c != ' ' && c != '\t' && c != '\r') lineHasCode[line] = true;
  }
  if (comments.empty()) return;
  auto codeBetween = [&](uint32_t from, uint32_t to) { // lines (from, to)
    for (uint32_t l = from + 1; l < to && l < lineHasCode.size(); ++l)
      if (lineHasCode[l]) return true;
    return false;
  };
  if (!module.isCheckpoint()) {
    for (Comment &c : comments) module.leadingComments.push_back(std::move(c.text));
    return;
  }
  std::vector<Region> &regions = module.checkpoint().regions;
  const uint32_t endLine = static_cast<uint32_t>(lineHasCode.size());
  for (Comment &c : comments) {
    // The last region whose head is at or above the comment (regions are in file order).
    auto after = std::upper_bound(regions.begin(), regions.end(), c.line,
                                  [](uint32_t line, const Region &r) { return line < r.loc.line; });
    const size_t j = after == regions.begin() ? regions.size() : static_cast<size_t>(after - regions.begin()) - 1;
    const size_t next = j == regions.size() ? 0 : j + 1;
    const uint32_t nextLine = next < regions.size() ? regions[next].loc.line : endLine;
    if (j == regions.size()) {
      // Before the first region: among the declarations, or in the gap just before the region.
      if (!regions.empty() && !c.afterCode && !codeBetween(c.line, regions[0].loc.line))
        regions[0].comments.push_back(std::move(c.text));
      else
        module.leadingComments.push_back(std::move(c.text));
    } else if (c.afterCode || codeBetween(c.line, nextLine)) {
      regions[j].comments.push_back(std::move(c.text)); // inside region j: moves up to its head
    } else if (next < regions.size()) {
      regions[next].comments.push_back(std::move(c.text));
    } else {
      module.trailingComments.push_back(std::move(c.text));
    }
  }
}

/// A well-formed checkpoint program read in one scan, each piece's tokens read by recursive
/// descent as they come; nullopt at anything else (an expression, a problem, a piece that
/// FastRegionReader gives up on), which the pieces' full parse then reads or reports as before.
std::optional<Module> readWellFormed(std::string_view text) {
  PieceScanner scanner(text);
  FastRegionReader fast;
  std::vector<ScannedToken> tokens;
  Piece piece;
  if (!scanner.next(piece, &tokens)) return std::nullopt;
  std::optional<Checkpoint> c = fast.prologue(text, tokens);
  if (!c) return std::nullopt;
  Module module{std::move(*c)};
  std::vector<Region> &regions = module.checkpoint().regions;
  while (scanner.next(piece, &tokens)) {
    std::optional<Region> r = fast.read(text, tokens);
    if (!r) return std::nullopt;
    regions.push_back(std::move(*r));
  }
  if (scanner.problem()) return std::nullopt;
  return module;
}

/// The program, its pieces parsed by FastRegionReader or, where it gives up, by ANTLR, after a
/// scan of the whole text for the problems to report first; nullopt after reporting an error.
std::optional<Module> parsePieces(std::string_view text, Diagnostics &diags) {
  std::vector<Piece> pieces;
  if (!scanPieces(text, diags, pieces)) return std::nullopt;
  auto textOf = [&](size_t first, size_t end) {
    size_t stop = end < pieces.size() ? pieces[end].begin : text.size();
    return text.substr(pieces[first].begin, stop - pieces[first].begin);
  };

  // Semantic errors are reported piece by piece, but a syntax error anywhere is the only one
  // reported, as if the whole text had been parsed at once.
  const Diagnostics::Mark start = diags.mark();
  PieceParser parser(diags.fileName());
  auto syntaxError = [&](size_t failed, Diagnostic error) {
    if (failed + 1 < pieces.size()) {
      // The parse of the whole text would have met the next region's first tokens where this
      // piece ended, and error messages quote and look ahead of the offending token: parse the
      // piece again followed by at least two more tokens, for the message the whole would give.
      size_t end = failed + 1, after = 0;
      while (end < pieces.size() && after < 2) after += pieces[end++].tokens;
      std::string_view window = textOf(failed, end);
      bool failedAgain = failed == 0
                             ? !parser.parse(window, pieces[failed].line, pieces[failed].column, &G::program)
                             : !parser.parse(window, pieces[failed].line, pieces[failed].column, &G::regions);
      if (failedAgain) error = parser.error();
    }
    diags.rollback(start);
    diags.error(error.loc, std::move(error.message));
    return std::nullopt;
  };

  AstBuilder builder(diags);
  FastRegionReader fast;
  std::optional<Module> module;
  if (std::optional<Checkpoint> c = fast.prologue(textOf(0, 1), pieces[0].line, pieces[0].column)) {
    module = Module{std::move(*c)};
  } else {
    G::ProgramContext *program = parser.parse(textOf(0, 1), pieces[0].line, pieces[0].column, &G::program);
    if (!program) return syntaxError(0, parser.error());
    module = builder.program(program);
  }
  if (pieces.size() > 1) {
    std::vector<Region> &regions = module->checkpoint().regions;
    regions.reserve(regions.size() + pieces.size() - 1);
    for (size_t i = 1; i < pieces.size(); ++i) {
      if (auto r = fast.read(textOf(i, i + 1), pieces[i].line, pieces[i].column)) {
        regions.push_back(std::move(*r));
        continue;
      }
      G::RegionsContext *tree = parser.parse(textOf(i, i + 1), pieces[i].line, pieces[i].column, &G::regions);
      if (!tree) return syntaxError(i, parser.error());
      for (G::RegionContext *r : tree->regionList()->region()) regions.push_back(builder.region(r));
    }
  }
  if (diags.errorCount() != start.errors) return std::nullopt;
  return module;
}

} // namespace

std::optional<Module> parseModule(Diagnostics &diags) {
  const std::string_view text = diags.text();
  std::optional<Module> module = readWellFormed(text);
  if (!module) module = parsePieces(text, diags);
  if (!module || !resolveImpliedParts(*module, diags)) return std::nullopt;
  attachComments(text, *module);
  return module;
}

} // namespace brevis
