// Tests of the frontend: the parser accepts exactly what the printer prints, places every node,
// and reports each class of error at the right place with a specific message.
#include "frontend/Parser.h"
#include "lang/Printer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>

namespace brevis {
namespace {

/// print(parse(text)), or the rendered diagnostics if parsing failed.
std::string reprint(const std::string &text) {
  Diagnostics diags("t.bdsl", text);
  auto m = parseModule(diags);
  if (!m) return "PARSE FAILED:\n" + diags.render();
  return printModule(*m);
}

/// The first line of the first diagnostic, or "" if the text parsed.
std::string firstError(const std::string &text) {
  Diagnostics diags("t.bdsl", text);
  auto m = parseModule(diags);
  EXPECT_EQ(m.has_value(), !diags.hasErrors());
  if (!diags.hasErrors()) return "";
  std::string rendered = diags.render();
  return rendered.substr(0, rendered.find('\n'));
}

/// A version-1 checkpoint's declarations.
struct SourceFields {
  std::string fileName;
  uint64_t size, xxh64;
};
void expectDeclarations(const Checkpoint &c, const SourceFields &source, const std::string &payload,
                        uint64_t payloadSize) {
  EXPECT_EQ(c.version, 1u);
  EXPECT_EQ(c.source.fileName, source.fileName);
  EXPECT_EQ(c.source.size, source.size);
  EXPECT_EQ(c.source.xxh64, source.xxh64);
  EXPECT_EQ(c.payloadFile, payload);
  EXPECT_EQ(c.payloadSize, payloadSize);
}

Module parseOk(const std::string &text) {
  Diagnostics diags("t.bdsl", text);
  auto m = parseModule(diags);
  EXPECT_TRUE(m.has_value()) << diags.render();
  if (!m) return Module{ExprPtr(Hole::make({8, 0}))};
  return std::move(*m);
}

// --- round trips ---------------------------------------------------------------------------

const char *const kCheckpoint = R"(brevis 1
source "model.safetensors" size 533480 xxh64 0x00ed4cee77c976ca
payload "model.bdsl.bin" size 533489

header @0+2345 = lit raw u8[2345] @0+2345

bytes @5000+12 digest 0x0123456789abcdef = lit raw u8[12] @2345+12

tensor "tok_embeddings.weight" bf16[512, 64] @2345+65536 =
  merge(
    sign: lit bitpack u1[32768] @2357+4097,
    exp: lit raw u8[32768] @6454+32768,
    mant: lit bitpack u7[32768] @39222+28673
  )

tensor "scalar" f32[] @67881+4 digest 0x0000000000000007 = const u32[1] 0x3f800000

tensor "layers.0.attention.wq.weight" f8_e4m3[3, 1, 7] @67885+21 = ? u8[21]
)";

TEST(FrontendRoundTrip, Checkpoint) {
  EXPECT_EQ(reprint(kCheckpoint), kCheckpoint);
  Module m = parseOk(kCheckpoint);
  ASSERT_TRUE(m.isCheckpoint());
  const Checkpoint &c = m.checkpoint();
  expectDeclarations(c, {"model.safetensors", 533480, 0x00ed4cee77c976ca}, "model.bdsl.bin", 533489);
  ASSERT_EQ(c.regions.size(), 5u);
  EXPECT_EQ(c.regions[0].kind, RegionKind::Header);
  EXPECT_EQ(c.regions[1].kind, RegionKind::Bytes);
  EXPECT_EQ(c.regions[1].bytes, (ByteRange{5000, 12}));
  EXPECT_FALSE(c.regions[0].digest);
  EXPECT_EQ(c.regions[1].digest, 0x0123456789abcdefull);
  EXPECT_EQ(c.regions[3].digest, 7u);
  EXPECT_FALSE(c.regions[4].digest);
  const Region &t = c.regions[2];
  EXPECT_EQ(t.kind, RegionKind::Tensor);
  EXPECT_EQ(t.name, "tok_embeddings.weight");
  EXPECT_EQ(t.dtype, DType::BF16);
  EXPECT_EQ(t.shape, (std::vector<uint64_t>{512, 64}));
  const auto &merge = as<Merge>(*t.program);
  ASSERT_EQ(merge.fields.size(), 3u);
  EXPECT_EQ(merge.fields[1].name, "exp");
  const auto &exp = as<Lit>(*merge.fields[1].expr);
  EXPECT_EQ(exp.encoding, Encoding::Raw);
  EXPECT_EQ(exp.type, (StreamType{8, 32768}));
  EXPECT_EQ(exp.payload(), (ByteRange{6454, 32768}));
  EXPECT_EQ(as<Lit>(*merge.fields[2].expr).encoding, Encoding::Bitpack);
  EXPECT_TRUE(c.regions[3].shape.empty());
  EXPECT_EQ(as<Const>(*c.regions[3].program).value, 0x3f800000u);
  EXPECT_EQ(c.regions[4].dtype, DType::F8E4M3);
}

TEST(FrontendRoundTrip, CheckpointWithoutRegionsAndEscapedNames) {
  std::string text = "brevis 1\n"
                     "source \"a\\\"b\\\\c\\x01\\x7f\xc3\xbc.st\" size 0 xxh64 0x0000000000000000\n"
                     "payload \"p.bin\" size 0\n";
  EXPECT_EQ(reprint(text), text);
  EXPECT_EQ(parseOk(text).checkpoint().source.fileName, "a\"b\\c\x01\x7f\xc3\xbc.st");
}

TEST(FrontendRoundTrip, DeclarationsReadWithoutAntlrMatchWhatAntlrReads) {
  // Well-formed declarations are read by recursive descent; anything else by ANTLR, which
  // reports it. Hex and decimal numbers, comments between them, the version saturated.
  Module m = parseOk("# top\nbrevis 1 # one\nsource \"s\" size 0x10 # sixteen\n xxh64 12\npayload \"p\" size 7\n");
  const Checkpoint &c = m.checkpoint();
  expectDeclarations(c, {"s", 16, 12}, "p", 7);
  EXPECT_EQ(c.loc.line, 2u);
  EXPECT_EQ(firstError("brevis 1\nsource \"s\" size 99999999999999999999 xxh64 0\npayload \"p\" size 0\n"),
            "t.bdsl:2:17: error: number 99999999999999999999 does not fit in 64 bits");
  EXPECT_EQ(firstError("brevis 1\nsource \"s\" size 1\npayload \"p\" size 0\n"),
            "t.bdsl:3:1: error: unexpected 'payload'; expected 'xxh64'");
}

TEST(FrontendRoundTrip, SafetensorsHeadersReadWithoutAntlrHaveTheirFields) {
  const std::string prologue = "brevis 1\nsource \"s\" size 0 xxh64 0\npayload \"p\" size 0\n";
  Module last = parseOk(prologue + "header @0+9 digest 0x5 = safetensors(tensors, metadata: '{\"a\": ' '\\'x\\'}')\n");
  const Region &h = last.checkpoint().regions.at(0);
  ASSERT_TRUE(h.index);
  EXPECT_EQ(h.index->placement, SafetensorsIndex::Metadata::Last);
  EXPECT_EQ(h.index->metadata, "{\"a\": 'x'}");
  EXPECT_EQ(h.index->loc.line, 4u);
  EXPECT_EQ(h.index->loc.column, 26u);
  EXPECT_EQ(h.bytes.offset, 0u);
  EXPECT_EQ(h.bytes.size, 9u);
  EXPECT_EQ(h.digest, 5u);
  Module first = parseOk(prologue + "header = safetensors(metadata: '{}', tensors)\n");
  EXPECT_EQ(first.checkpoint().regions.at(0).index->placement, SafetensorsIndex::Metadata::First);
  Module none = parseOk(prologue + "header = safetensors(tensors)\n");
  EXPECT_EQ(none.checkpoint().regions.at(0).index->placement, SafetensorsIndex::Metadata::None);
  // What the fast reader leaves to ANTLR is still reported as before.
  EXPECT_EQ(firstError(prologue + "header = safetensors(tensors, tensors)\n"),
            "t.bdsl:4:31: error: safetensors(…) lists tensors twice");
  EXPECT_EQ(firstError(prologue + "header = safetensors(metadata)\n"),
            "t.bdsl:4:22: error: metadata needs its JSON text: metadata: '{…}'");
}

TEST(FrontendRoundTrip, EveryExpressionForm) {
  const char *forms[] = {
      "lit raw u8[12] @2345+12",
      "lit bitpack u7[32768] @39222+28673",
      "lit u8[3] [1, 2, 3]",
      "lit u64[2] [0, 18446744073709551615]",
      "lit u8[0] []",
      "const u16[64] 0x3f80",
      "const u8[4] 7",
      "const u64[1] 0xffffffffffffffff",
      "concat(lit u8[1] [1], const u8[2] 0, ? u8[3])",
      "repeat 4 (const u8[3] 0)",
      "map xor 0x8000 (? u16[10])",
      "map xor 3 (? u16[10])",
      "map add 5 (? u8[10])",
      "map rotl 3 (? u8[10])",
      "map zigzag (? u8[10])",
      "map gray (? u8[10])",
      "map bitrev (? u8[10])",
      "scan add 0 (? u8[10])",
      "scan xor 0x1f (? u8[10])",
      "merge(sign: ? u1[4], exp: ? u8[4], ? u7[4])",
      "merge(? u4[4], ? u4[4])",
      "? u8[100]",
      "? u99[3]",
      "? u0[3]",
      "concat(lit u8[1] [1] : u8[1], ? u8[2]) : u8[3]",
      "map gray (? u8[3] : u8[3]) : u8[3]",
      "merge(hi: ? u8[2] : u8[2], lo: ? u8[2]) : u16[2]",
      "lit raw u8[3] @0+3 : u8[3]",
      "merge(size: ? u8[1], lit: ? u8[1], map: ? u8[1])",
      "concat()",
      "merge()",
      "text ''",
      "text 'a\\'b\\\\n\\n\\t\\r\\x00\\x7f é \\xc3'",
      "text '{\"k\": \"say \\\"hi\\\" \\u00e9\"} # not a comment'",
      "concat(lit u8[2] [0x60, 0x14], text 'ab') : u8[4]",
      "merge(text: text 'a', b: ? u8[1])",
      "lit u8[3] [0x1, 0x0, 0xff]",
      "const u8[2] 255",
      "repeat 0x10 (? u8[1])",
      "map rotl 0x3 (? u8[10])",
      "scan add 0x0 (? u8[10])",
  };
  for (const char *form : forms) {
    std::string text = std::string(form) + "\n";
    EXPECT_EQ(reprint(text), text);
  }
}

TEST(FrontendRoundTrip, TextLiterals) {
  // Pieces join; escapes decode; a backslash before any other character is itself.
  Module m = parseOk("text 'a\\n' 'b\\\\' '\\x41\\'' '\\\"\\u' ''");
  const auto &lit = as<Lit>(m.expr());
  EXPECT_TRUE(lit.isText());
  EXPECT_EQ(lit.type, (StreamType{8, 10}));
  EXPECT_EQ(lit.textBytes(), std::string("a\nb\\A'\\\"\\u"));
  EXPECT_EQ(lit.inlineCount(), 10u);
  EXPECT_EQ(lit.inlineWord(4), uint64_t{'A'});
  // Every byte value prints and reads back.
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  all += "\\n\\x\\\\\\'\\"; // backslashes before escape letters, and one last
  Module from = Module{Lit::makeText(all)};
  Module back = parseOk(printModule(from));
  EXPECT_TRUE(structurallyEqual(from.expr(), back.expr())) << printModule(from);
  // A long text breaks after each newline and each `},`, one piece a line, and reads back.
  std::string json = "{\"a\":{\"dtype\":\"F32\"},\"b\":{\"dtype\":\"BF16\"},\"__metadata__\":{\"x\":\"" +
                     std::string(80, 'y') + "\"}}  ";
  std::string printed = printModule(Module{Lit::makeText(json)});
  EXPECT_EQ(printed, "text\n  '{\"a\":{\"dtype\":\"F32\"},'\n  '\"b\":{\"dtype\":\"BF16\"},'\n  '\"__metadata__\":{\"x\":\"" +
                         std::string(80, 'y') + "\"}}  '\n");
  EXPECT_EQ(reprint(printed), printed);
  EXPECT_EQ(textPieceEnds("a\nb"), (std::vector<size_t>{2, 3}));
  EXPECT_EQ(textPieceEnds(""), (std::vector<size_t>{0}));
  // A region's text is read by the region reader as ANTLR reads it alone; a '#' inside is text.
  std::string region = "brevis 1\nsource \"a\" size 3 xxh64 0x0\npayload \"b\" size 0\n"
                       "bytes @0+3 = text '#\\'#' # a comment\n";
  Module c = parseOk(region);
  ASSERT_EQ(c.checkpoint().regions.size(), 1u);
  EXPECT_EQ(as<Lit>(*c.checkpoint().regions[0].program).textBytes(), "#'#");
  EXPECT_EQ(c.checkpoint().regions[0].comments, (std::vector<std::string>{"# a comment"}));
}

TEST(FrontendRoundTrip, NumbersKeepTheirRadix) {
  Module m = parseOk("concat(const u8[1] 0x0, const u8[1] 12, lit u8[2] [1, 0x2], scan xor 7 (repeat 0x1 "
                     "(map xor 0xf (? u8[1]))))");
  const auto &c = as<Concat>(m.expr());
  EXPECT_EQ(as<Const>(*c.parts[0]).radix, Radix::Hex);
  EXPECT_EQ(as<Const>(*c.parts[1]).radix, Radix::Decimal);
  EXPECT_EQ(as<Lit>(*c.parts[2]).radix, Radix::Hex);
  const auto &scan = as<Scan>(*c.parts[3]);
  EXPECT_EQ(scan.radix, Radix::Decimal);
  EXPECT_EQ(as<Repeat>(*scan.body).radix, Radix::Hex);
  EXPECT_EQ(as<Map>(*as<Repeat>(*scan.body).body).radix, Radix::Hex);
  // Clones keep it; numbers the tools write (Auto) print hex for bit patterns, decimal counts.
  EXPECT_EQ(printExpr(*cloneExpr(m.expr())), printExpr(m.expr()));
  EXPECT_EQ(printExpr(*Const::make({8, 1}, 12)), "const u8[1] 0xc");
  EXPECT_EQ(printExpr(*Repeat::make(16, Hole::make({8, 1}))), "repeat 16 (? u8[1])");
}

/// Every node of `a` and `b` is placed alike, `b` `lines` lines and `columns` columns further.
void expectPlacedAlike(const Expr &a, const Expr &b, uint32_t lines, uint32_t columns) {
  EXPECT_EQ(a.loc.line + lines, b.loc.line);
  EXPECT_EQ(a.loc.column + columns, b.loc.column);
  auto ca = children(a), cb = children(b);
  ASSERT_EQ(ca.size(), cb.size());
  for (size_t i = 0; i < ca.size(); ++i) expectPlacedAlike(*ca[i], *cb[i], lines, columns);
}

TEST(FrontendRoundTrip, EveryExpressionFormInARegionIsReadAsAlone) {
  // Regions are read without ANTLR when they are well formed; a bare expression never is.
  const char *forms[] = {
      "lit raw u8[12] @2345+12", "lit u64[2] [0, 18446744073709551615]", "lit u8[0] []", "const u16[64] 0x3f80",
      "concat(lit u8[1] [1], const u8[2] 0, ? u8[3])", "repeat 4 (const u8[3] 0)", "map xor 0x8000 (? u16[10])",
      "map gray (? u8[10])", "scan xor 0x1f (? u8[10])", "merge(sign: ? u1[4], exp: ? u8[4], ? u7[4])",
      "merge(hi: ? u8[2] : u8[2], lo: ? u8[2]) : u16[2]", "merge(size: ? u8[1], lit: ? u8[1], map: ? u8[1])",
      "? u99[3]", "concat()", "merge()", "lit auto u8[4]", "lit zstd u8[4]", "merge(a: lit bitpack u1[2], b: ? u3[2])", "map rotl 3 (scan add 0 (map add 5 (? u8[10] : u8[10])))",
      "text 'a\\'\\n' '\\\"b\\x00' : u8[6]", "merge(text: text 'x', y: lit u8[1] [0x1])",
  };
  for (const char *form : forms) {
    Module alone = parseOk(std::string(form) + "\n");
    std::string text = "brevis 1\nsource \"a\" size 1 xxh64 0x0\npayload \"b\" size 0\n"
                       "tensor \"x\\\"\\x41\" u8[1, 2] @0+1 = " + std::string(form) + "\n";
    Module m = parseOk(text);
    EXPECT_EQ(reprint(printModule(m)), printModule(m));
    ASSERT_EQ(m.checkpoint().regions.size(), 1u);
    const Region &r = m.checkpoint().regions[0];
    EXPECT_EQ(r.name, "x\"A");
    EXPECT_EQ(r.shape, (std::vector<uint64_t>{1, 2}));
    EXPECT_TRUE(structurallyEqual(alone.expr(), *r.program)) << form;
    expectPlacedAlike(alone.expr(), *r.program, 3, 33);
  }
}

TEST(FrontendRoundTrip, ParsedFormsHaveTheirFields) {
  Module m = parseOk("scan xor 0x1f (map rotl 3 (repeat 4 (lit u8[3] [1, 2, 3]))) : u8[12]");
  const auto &scan = as<Scan>(m.expr());
  EXPECT_EQ(scan.op, ScanOp::Xor);
  EXPECT_EQ(scan.init, 0x1fu);
  EXPECT_EQ(scan.annotation, (StreamType{8, 12}));
  const auto &map = as<Map>(*scan.body);
  EXPECT_EQ(map.fn, MapFn::Rotl);
  EXPECT_EQ(map.param, 3u);
  EXPECT_FALSE(map.annotation.has_value());
  const auto &repeat = as<Repeat>(*map.body);
  EXPECT_EQ(repeat.count, 4u);
  const auto &lit = as<Lit>(*repeat.body);
  EXPECT_EQ(lit.words(), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(as<Map>(parseOk("map gray (? u8[1])").expr()).fn, MapFn::Gray);
}

/// A program long enough that the printer wraps it over many lines at several depths.
ExprPtr longProgram() {
  std::vector<ExprPtr> parts;
  for (uint64_t i = 0; i < 6; ++i) {
    std::vector<MergeField> fields;
    fields.push_back({"sign", Lit::make({1, 4096}, Encoding::Bitpack, ByteRange{i * 100000, 513})});
    fields.push_back({"exp", Map::make(MapFn::Xor, 0x80, Lit::make({8, 4096}, Encoding::Raw, ByteRange{i, 4096}))});
    fields.push_back({"", Scan::make(ScanOp::Add, 0, Lit::make({7, 4096}, std::vector<uint64_t>(30, 127)))});
    parts.push_back(Merge::make(std::move(fields)));
  }
  auto body = Concat::make(std::move(parts));
  body->annotation = StreamType{16, 6 * 4096};
  return Repeat::make(2, std::move(body));
}

TEST(FrontendRoundTrip, WrappedLongPrograms) {
  std::string expr = printModule(Module{longProgram()});
  EXPECT_GT(std::count(expr.begin(), expr.end(), '\n'), 10);
  EXPECT_EQ(reprint(expr), expr);

  Checkpoint c;
  c.source = {"m.safetensors", 49152, 0xabc};
  c.payloadFile = "m.bin";
  c.payloadSize = 1000;
  Region r;
  r.kind = RegionKind::Tensor;
  r.name = "w";
  r.dtype = DType::F16;
  r.shape = {6, 4096};
  r.bytes = {0, 49152};
  r.program = longProgram();
  c.regions.push_back(std::move(r));
  std::string text = printCheckpoint(c);
  EXPECT_EQ(reprint(text), text);
}

TEST(FrontendRoundTrip, NonCanonicalTextReachesAFixedPoint) {
  const char *text = "# a comment line\n"
                     "  map   xor 0X8000(  # trailing comment\n"
                     "\tconcat( lit raw u8[0x3]@0+3 ,const u8[2] 0x0 ,\r\n"
                     "lit u8[ 2 ] [ 0x1,2 ] ) ) :u16[0005]";
  std::string once = reprint(text);
  // Comments are kept, above the expression; numbers keep their radix (a list is hex if any of
  // its words is), in the printer's spelling.
  EXPECT_EQ(once, "# a comment line\n# trailing comment\n"
                  "map xor 0x8000 (concat(lit raw u8[3] @0+3, const u8[2] 0x0, lit u8[2] [0x1, 0x2])) : u16[5]\n");
  EXPECT_EQ(reprint(once), once);
}

TEST(FrontendRoundTrip, ACommentEndsAtALoneCarriageReturn) {
  // The grammar ends a comment at `\r` as at `\n`: the code after a lone `\r` is the program,
  // and must not be printed as part of the comment (where reading it again would drop it).
  const char *text = "# a comment\r\rconst u8[4] 0x7";
  std::string once = reprint(text);
  EXPECT_EQ(once, "# a comment\nconst u8[4] 0x7\n");
  EXPECT_EQ(reprint(once), once);
}

TEST(FrontendRoundTrip, LongInlineWordList) {
  std::string text = "lit u16[100000] [";
  for (int i = 0; i < 100000; ++i) text += (i ? ", " : "") + std::to_string(i % 65536);
  text += "]\n";
  Module m = parseOk(text);
  EXPECT_EQ(as<Lit>(m.expr()).words().size(), 100000u);
  EXPECT_EQ(as<Lit>(m.expr()).words()[70000], 70000u % 65536);
}

// --- locations -----------------------------------------------------------------------------

TEST(FrontendLocations, EveryNodeIsPlaced) {
  Module m = parseOk("brevis 1\n"
                     "source \"a\" size 3 xxh64 0x0\n"
                     "payload \"b\" size 3\n"
                     "\n"
                     "bytes @0+3 = concat(\n"
                     "  lit u8[1] [1],\n"
                     "  merge(x: map gray (? u8[2]) : u8[2])\n"
                     ")\n");
  const Checkpoint &c = m.checkpoint();
  auto at = [](SourceLoc loc) { return std::make_pair(loc.line, loc.column); };
  using P = std::pair<uint32_t, uint32_t>;
  EXPECT_EQ(at(c.loc), P(1, 1));
  EXPECT_EQ(at(c.sourceLoc), P(2, 1));
  EXPECT_EQ(at(c.payloadLoc), P(3, 1));
  EXPECT_EQ(at(c.regions[0].loc), P(5, 1));
  const auto &concat = as<Concat>(*c.regions[0].program);
  EXPECT_EQ(at(concat.loc), P(5, 14));
  EXPECT_EQ(at(concat.parts[0]->loc), P(6, 3));
  EXPECT_EQ(at(concat.parts[1]->loc), P(7, 3));
  const auto &map = as<Map>(*as<Merge>(*concat.parts[1]).fields[0].expr);
  EXPECT_EQ(at(map.loc), P(7, 12));
  EXPECT_EQ(at(map.body->loc), P(7, 22));
}

TEST(FrontendLocations, ColumnsCountBytes) {
  // Diagnostics places carets by byte, so a two-byte character before a node counts twice.
  Module m = parseOk("brevis 1\nsource \"a\" size 1 xxh64 0x0\npayload \"b\" size 1\n"
                     "tensor \"\xc3\xbc\" u8[1] @0+1 = ? u8[1]\n");
  EXPECT_EQ(m.checkpoint().regions[0].name, "\xc3\xbc");
  EXPECT_EQ(m.checkpoint().regions[0].program->loc.column, 26u);
}

TEST(FrontendLocations, InvalidUtf8InStringsIsKept) {
  // Kept, and printed escaped: program text is UTF-8.
  std::string text = "brevis 1\nsource \"\xff\xfe\" size 1 xxh64 0x0000000000000000\npayload \"b\" size 1\n";
  std::string escaped = "brevis 1\nsource \"\\xff\\xfe\" size 1 xxh64 0x0000000000000000\npayload \"b\" size 1\n";
  EXPECT_EQ(reprint(text), escaped);
  EXPECT_EQ(parseOk(escaped).checkpoint().source.fileName, "\xff\xfe");
  // Printable UTF-8 as itself; invisible and reordering characters escaped.
  EXPECT_EQ(quoteString("caf\xc3\xa9 \xe2\x80\xae \xc2\x85 \xef\xbb\xbf"), "\"café \\xe2\\x80\\xae \\xc2\\x85 \\xef\\xbb\\xbf\"");
  EXPECT_EQ(quoteText("\xe2\x80\x8bzw"), "'\\xe2\\x80\\x8bzw'");
  // A long text with no place to break stays text, on one line.
  std::string longText = "text '" + std::string(150, 'a') + "'\n";
  EXPECT_EQ(reprint(longText), longText);
}

// --- errors --------------------------------------------------------------------------------

TEST(FrontendErrors, UnknownNames) {
  EXPECT_EQ(firstError("lit rawx u8[3] @0+3"), "t.bdsl:1:5: error: unknown encoding 'rawx'; expected raw, bitpack, huffman, rans, zstd, rans_o1 or context");
  EXPECT_EQ(firstError("lit auto u8[3] @0+3"), "t.bdsl:1:5: error: unknown encoding 'auto'; expected raw, bitpack, huffman, rans, zstd, rans_o1 or context");
  EXPECT_EQ(firstError("lit autox u8[3]"), "t.bdsl:1:5: error: unknown encoding 'autox'; expected raw, bitpack, huffman, rans, zstd, rans_o1, context or auto");
  EXPECT_EQ(firstError("lit raw x8[3] @0+3"),
            "t.bdsl:1:9: error: expected a stream type like u8[1024], found 'x8'");
  EXPECT_EQ(firstError("? u[3]"), "t.bdsl:1:3: error: expected a stream type like u8[1024], found 'u'");
  EXPECT_EQ(firstError("map foo (? u8[1])"),
            "t.bdsl:1:5: error: unknown map function 'foo'; expected xor, add, zigzag, gray, rotl or bitrev");
  EXPECT_EQ(firstError("scan mul 0 (? u8[1])"), "t.bdsl:1:6: error: unknown scan operator 'mul'; expected xor or add");
  EXPECT_EQ(firstError("brevis 1\nsource \"a\" size 1 xxh64 0x0\npayload \"b\" size 1\n"
                       "tensor \"w\" bf17[1] @0+2 = ? u16[1]\n"),
            "t.bdsl:4:12: error: unknown dtype 'bf17'");
}

TEST(FrontendErrors, MapParameters) {
  EXPECT_EQ(firstError("map xor (? u8[1])"), "t.bdsl:1:5: error: map xor needs a parameter");
  EXPECT_EQ(firstError("map gray 3 (? u8[1])"), "t.bdsl:1:10: error: map gray takes no parameter");
}

TEST(FrontendErrors, Numbers) {
  EXPECT_EQ(firstError("const u64[1] 123456789012345678901234567890"),
            "t.bdsl:1:14: error: number 123456789012345678901234567890 does not fit in 64 bits");
  EXPECT_EQ(firstError("const u64[1] 18446744073709551616"),
            "t.bdsl:1:14: error: number 18446744073709551616 does not fit in 64 bits");
  EXPECT_EQ(firstError("const u64[1] 0x10000000000000000"),
            "t.bdsl:1:14: error: number 0x10000000000000000 does not fit in 64 bits");
  EXPECT_EQ(firstError("const u8[1] 12ab"), "t.bdsl:1:13: error: malformed number '12ab'");
  EXPECT_EQ(firstError("const u8[1] 0x"), "t.bdsl:1:13: error: malformed number '0x'");
  EXPECT_EQ(firstError("? u8[" + std::string(100, '9') + "]"),
            "t.bdsl:1:6: error: number 9999999999999999999999999999999999999... does not fit in 64 bits");
  // Widths are the type checker's business, but must not wrap around when stored.
  Module m = parseOk("? u99999999999999999999999[3]");
  EXPECT_EQ(as<Hole>(m.expr()).type.width, std::numeric_limits<unsigned>::max());
}

TEST(FrontendErrors, Lexical) {
  EXPECT_EQ(firstError("? u8[1] %"), "t.bdsl:1:9: error: unexpected character '%'");
  EXPECT_EQ(firstError("? u8[1]\n\x01"), "t.bdsl:2:1: error: unexpected character '\\x01'");
  EXPECT_EQ(firstError("brevis 1\nsource \"abc size 1"), "t.bdsl:2:8: error: unterminated string");
  EXPECT_EQ(firstError("brevis 1\nsource \"a\\qb\" size 1 xxh64 0x0\npayload \"b\" size 1\n"),
            "t.bdsl:2:10: error: invalid escape '\\q' in string; expected \\\", \\\\ or \\xNN");
  EXPECT_EQ(firstError("brevis 1\nsource \"a\\x4\" size 1 xxh64 0x0\npayload \"b\" size 1\n"),
            "t.bdsl:2:10: error: invalid escape '\\x' in string; expected \\\", \\\\ or \\xNN");
  EXPECT_EQ(firstError("concat(text 'ab\\x4g')"), "t.bdsl:1:16: error: invalid escape in text: \\x takes two hex digits (\\x0a)");
  EXPECT_EQ(firstError("text 'abc\n'"), "t.bdsl:1:6: error: unterminated string");
  EXPECT_EQ(firstError("text"),
            "t.bdsl:1:5: error: unexpected end of the program; expected '…' (text in single quotes)");
}

TEST(FrontendErrors, Syntax) {
  EXPECT_EQ(firstError("lit raw u8[3] @0+"), "t.bdsl:1:18: error: expected a number before the end of the program");
  EXPECT_EQ(firstError("concat(? u8[1] ? u8[2])"), "t.bdsl:1:16: error: unexpected '?'; expected ')' or ','");
  EXPECT_EQ(firstError("lit raw 5"), "t.bdsl:1:9: error: 'lit raw 5' cannot be read as part of a program");
  EXPECT_EQ(firstError(""), "t.bdsl:1:1: error: unexpected end of the program; expected 'brevis', 'lit', 'text', "
                            "'const', 'concat', 'repeat', 'map', 'scan', 'merge' or '?'");
  EXPECT_EQ(firstError("? u8[1] ? u8[1]"), "t.bdsl:1:9: error: unexpected '?'; expected the end of the program");
  // The words ANTLR's messages are made of may be the input's own: only the text is taken apart.
  EXPECT_EQ(firstError("brevis 1\nsource \"a\" size \"x expecting y\"\n"),
            "t.bdsl:2:17: error: unexpected '\"x expecting y\"'; expected a number");
  EXPECT_EQ(firstError("brevis 1\n\"a at b\" size 1 xxh64 0\npayload \"p\" size 0\n"),
            "t.bdsl:2:1: error: expected 'source' before '\"a at b\"'");
  EXPECT_EQ(firstError("brevis 1\nsource \"a\" size 1 xxh64 0x0\nheader @0+1 = ? u8[1]\n"),
            "t.bdsl:3:1: error: unexpected 'header'; expected 'payload'");
}

TEST(FrontendErrors, RegionDigests) {
  const std::string head = "brevis 1\nsource \"a\" size 1 xxh64 0x0\npayload \"b\" size 0\n";
  EXPECT_EQ(firstError(head + "bytes @0+1 digest = ? u8[1]\n"), "t.bdsl:4:19: error: expected a number before '='");
  EXPECT_EQ(firstError(head + "bytes @0+1 digest 0xg = ? u8[1]\n"), "t.bdsl:4:19: error: malformed number '0xg'");
  EXPECT_EQ(firstError(head + "bytes @0+1 = digest 1 ? u8[1]\n"),
            "t.bdsl:4:14: error: unexpected 'digest'; expected 'lit', 'text', 'const', 'concat', 'repeat', 'map', "
            "'scan', 'merge' or '?'");
  // A field may be named by the keyword.
  EXPECT_EQ(reprint("merge(digest: ? u8[1])\n"), "merge(digest: ? u8[1])\n");
}

TEST(FrontendErrors, MisspelledKeywordsAreNamed) {
  const std::string head = "brevis 1\nsource \"a\" size 1 xxh64 0x0\npayload \"b\" size 0\n";
  EXPECT_EQ(firstError("brevsi 1\n"), "t.bdsl:1:1: error: unknown keyword 'brevsi'; did you mean 'brevis'?");
  EXPECT_EQ(firstError("brevis 1\nsorce \"a\" size 1 xxh64 0x0\n"),
            "t.bdsl:2:1: error: unknown keyword 'sorce'; did you mean 'source'?");
  EXPECT_EQ(firstError(head + "heder @0+1 = ? u8[1]\n"), "t.bdsl:4:1: error: unknown keyword 'heder'; did you mean 'header'?");
  // After a region, where ANTLR expects only the end of the input.
  EXPECT_EQ(firstError(head + "header @0+1 = ? u8[1]\nbyts @1+0 = ? u8[0]\n"),
            "t.bdsl:5:1: error: unknown keyword 'byts'; did you mean 'bytes'?");
  EXPECT_EQ(firstError("merge(a: cnst u8[1] 0)"), "t.bdsl:1:10: error: unknown keyword 'cnst'; did you mean 'const'?");
  EXPECT_EQ(firstError("lti u8[1] [1]"), "t.bdsl:1:1: error: unknown keyword 'lti'; did you mean 'lit'?");
  EXPECT_EQ(firstError("merg(? u8[1])"), "t.bdsl:1:1: error: unknown keyword 'merg'; did you mean 'merge'?");
  EXPECT_EQ(firstError("mreeg(? u8[1])"), "t.bdsl:1:1: error: unknown keyword 'mreeg'; did you mean 'merge'?");
  // Too far from every keyword: ANTLR's message.
  EXPECT_EQ(firstError("xyzzy u8[1] 0"), "t.bdsl:1:1: error: unexpected 'xyzzy'; expected 'brevis', 'lit', "
                                         "'text', 'const', 'concat', 'repeat', 'map', 'scan', 'merge' or '?'");
}

TEST(FrontendErrors, LongTokensAreShortenedInMessages) {
  EXPECT_EQ(firstError("? u8[1] " + std::string(100000, 'a')),
            "t.bdsl:1:9: error: unexpected 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'; expected the end of the program");
  EXPECT_EQ(firstError("lit " + std::string(100, 'b') + " 5"),
            "t.bdsl:1:106: error: 'lit bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb...' cannot be read as part of a program");
  EXPECT_EQ(firstError("? " + std::string(100, 'c') + "[1]"),
            "t.bdsl:1:3: error: expected a stream type like u8[1024], found 'ccccccccccccccccccccccccccccccccccccc...'");
}

TEST(FrontendErrors, OnlyTheFirstSyntaxErrorIsReported) {
  Diagnostics diags("t.bdsl", "concat(? u8[1] ? u8[2] ? ? ?) ) ) merge(,,,");
  EXPECT_FALSE(parseModule(diags).has_value());
  EXPECT_EQ(diags.errorCount(), 1u);
}

TEST(FrontendErrors, SemanticErrorsAreAllReportedInOrder) {
  Diagnostics diags("t.bdsl", "concat(map foo (? u8[1]), lit rawx u8[1] @0+1)");
  EXPECT_FALSE(parseModule(diags).has_value());
  ASSERT_EQ(diags.errorCount(), 2u);
  EXPECT_EQ(diags.all()[0].loc.column, 12u);
  EXPECT_EQ(diags.all()[1].loc.column, 31u);
}

std::string nestedMaps(int depth) {
  std::string text;
  for (int i = 0; i < depth; ++i) text += "map gray (";
  text += "? u8[1]";
  return text + std::string(depth, ')');
}

TEST(FrontendErrors, DeepNesting) {
  // 199 parentheses plus the type's bracket is exactly the limit.
  EXPECT_EQ(firstError(nestedMaps(199)), "");
  EXPECT_EQ(firstError(nestedMaps(200)), "t.bdsl:1:2005: error: expressions nest deeper than 200 levels");
  // The 201st "map gray (" starts at byte 2000; its parenthesis is column 2010.
  EXPECT_EQ(firstError(nestedMaps(10000)), "t.bdsl:1:2010: error: expressions nest deeper than 200 levels");
  EXPECT_EQ(firstError(std::string(100000, '(')), "t.bdsl:1:201: error: expressions nest deeper than 200 levels");
  EXPECT_EQ(firstError(std::string(100000, '[')), "t.bdsl:1:201: error: expressions nest deeper than 200 levels");
}

TEST(FrontendErrors, HostileBytesDoNotCrash) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  EXPECT_NE(firstError(all), "");
  EXPECT_NE(firstError(std::string("lit u8[1] [\0]", 13)), "");
  EXPECT_NE(firstError(std::string(100000, ')')), "");
  EXPECT_NE(firstError("\"" + std::string(100000, 'a') + "\""), "");
}

} // namespace
} // namespace brevis

TEST(FrontendErrors, TooManyTokensAreRefusedBeforeParsing) {
  using namespace brevis;
  std::string text = "lit u8[1] [";
  const size_t words = kMaxRegionTokens / 2 + 10; // each word adds a number and a comma
  text.reserve(words * 3);
  for (size_t i = 0; i < words; ++i) text += "1,";
  text += "1]";
  Diagnostics diags("big.bdsl", text);
  EXPECT_FALSE(parseModule(diags));
  ASSERT_EQ(diags.all().size(), 1u);
  EXPECT_EQ(diags.render().substr(0, diags.render().find('\n')),
            fmt::format("big.bdsl:1:1: error: the expression has more than {} tokens, more than brevisc parses",
                        kMaxRegionTokens));
}

// --- checkpoints of many regions -------------------------------------------------------------

namespace brevis {
namespace {

/// A checkpoint of `regions` bytes regions of 1000 inline words each (2,000 tokens a region),
/// every region on two lines: region i starts on line 4 + 2i.
std::string manyRegions(size_t regions) {
  std::string words;
  for (int i = 0; i < 1000; ++i) words += i ? ", 7" : "7";
  std::string text =
      fmt::format("brevis 1\nsource \"m\" size {} xxh64 0x0\npayload \"m.bin\" size 0\n", regions * 1000);
  text.reserve(text.size() + regions * (words.size() + 64));
  for (size_t r = 0; r < regions; ++r)
    text += fmt::format("bytes @{}+1000 =\n  lit u8[1000] [{}]\n", r * 1000, words);
  return text;
}

// More tokens than a whole program could hold before programs were parsed region by region.
constexpr size_t kOldWholeProgramTokens = size_t{4} << 20;
const size_t kManyRegions = kOldWholeProgramTokens / 2000 + 10;

TEST(FrontendManyRegions, ProgramsOfMoreTokensThanOneParseHeldParseWithExactLocations) {
  std::string text = manyRegions(kManyRegions);
  // A semantic error in the last region, reported at its place in the whole text.
  text += "tensor \"t\" bf17[1] @0+2 = lit raw u16[1] @0+2\n";
  const size_t last = 4 + 2 * kManyRegions;
  Diagnostics diags("t.bdsl", text);
  EXPECT_FALSE(parseModule(diags));
  ASSERT_EQ(diags.errorCount(), 1u) << diags.render().substr(0, 500);
  EXPECT_EQ(diags.render().substr(0, diags.render().find('\n')),
            fmt::format("t.bdsl:{}:12: error: unknown dtype 'bf17'", last));

  // Without it, every region is there, each placed where it lies.
  text.resize(text.rfind("tensor"));
  Diagnostics ok("t.bdsl", text);
  auto m = parseModule(ok);
  ASSERT_TRUE(m) << ok.render().substr(0, 500);
  const Checkpoint &c = m->checkpoint();
  ASSERT_EQ(c.regions.size(), kManyRegions);
  const Region &r = c.regions.back();
  EXPECT_EQ(r.bytes.offset, (kManyRegions - 1) * 1000);
  EXPECT_EQ(r.loc.line, last - 2);
  EXPECT_EQ(r.loc.column, 1u);
  EXPECT_EQ(r.program->loc.line, last - 1);
  EXPECT_EQ(r.program->loc.column, 3u);
  EXPECT_EQ(as<Lit>(*r.program).words().size(), 1000u);
}

TEST(FrontendManyRegions, SyntaxErrorsAreTheWholeProgramsFirst) {
  std::string text = manyRegions(kManyRegions);
  // Region 3 unfinished: the error is at the next region's keyword, as a parse of the whole gives.
  size_t third = 0;
  for (int i = 0; i < 3; ++i) third = text.find("bytes @", third + 1);
  size_t cut = text.find('\n', third) + 1;
  std::string broken = text.substr(0, cut) + "  lit u8[1000]\n" + text.substr(text.find("bytes @", cut));
  EXPECT_EQ(firstError(broken), "t.bdsl:10:1: error: unexpected 'bytes'; expected '['");
  // A semantic error before a syntax error is not reported: only the syntax error is.
  broken = "brevis 1\nsource \"m\" size 2 xxh64 0x0\npayload \"m.bin\" size 0\n"
           "bytes @0+1 = lit rawx u8[1] @0+1\nbytes @1+1 = lit raw u8[1] @0+1 )\n" + text.substr(text.find("bytes @"));
  Diagnostics diags("t.bdsl", broken);
  EXPECT_FALSE(parseModule(diags));
  ASSERT_EQ(diags.errorCount(), 1u);
  EXPECT_EQ(diags.render().substr(0, diags.render().find('\n')),
            "t.bdsl:5:33: error: unexpected ')'; expected the end of the program");
  // In the opening declarations, followed by the first region.
  EXPECT_EQ(firstError("brevis 1\nsource \"m\" size 2 xxh64 0x0\nbytes @0+1 = lit raw u8[1] @0+1\n" +
                       text.substr(text.find("bytes @"))),
            "t.bdsl:3:1: error: unexpected 'bytes'; expected 'payload'");
}

// A well-formed program is read as it is scanned; a problem the scan finds anywhere, even
// after regions already read, or after a region with a syntax error, is the one reported.
TEST(FrontendManyRegions, AProblemOfTheScanAnywhereIsReportedFirst) {
  const std::string text = manyRegions(20);
  const size_t lines = 4 + 2 * 20;
  EXPECT_EQ(firstError(text + "bytes @20000+1 = const u8[1] 0 %\n"),
            fmt::format("t.bdsl:{}:32: error: unexpected character '%'", lines));
  EXPECT_EQ(firstError(text + "tensor \"open\n"), fmt::format("t.bdsl:{}:8: error: unterminated string", lines));
  // Region 3 unfinished, and a stray character in the last: the stray character.
  size_t third = 0;
  for (int i = 0; i < 3; ++i) third = text.find("bytes @", third + 1);
  const size_t cut = text.find('\n', third) + 1;
  const std::string broken = text.substr(0, cut) + "  lit u8[1000]\n" + text.substr(text.find("bytes @", cut));
  EXPECT_EQ(firstError(broken + "bytes @20000+1 = const u8[1] 0 %\n"),
            fmt::format("t.bdsl:{}:32: error: unexpected character '%'", lines));
}

TEST(FrontendManyRegions, OneHugeRegionIsRefusedBeforeParsing) {
  std::string text = "brevis 1\nsource \"m\" size 1 xxh64 0x0\npayload \"m.bin\" size 0\nbytes @0+1 = const u8[1] 0\n"
                     "  bytes @1+1 = lit u8[1] [";
  const size_t words = kMaxRegionTokens / 2 + 10; // each word adds a number and a comma
  text.reserve(text.size() + words * 2 + 8);
  for (size_t i = 0; i < words; ++i) text += "1,";
  text += "1]\n";
  Diagnostics diags("big.bdsl", text);
  EXPECT_FALSE(parseModule(diags));
  ASSERT_EQ(diags.all().size(), 1u);
  EXPECT_EQ(diags.render().substr(0, diags.render().find('\n')),
            fmt::format("big.bdsl:5:3: error: the region has more than {} tokens, more than brevisc parses",
                        kMaxRegionTokens));
}

// --- ranges left out; a header as the list of the tensors -----------------------------------

/// A program in the archive form: every range that the rest of the program gives is left out.
const char *const kArchiveForm = R"(brevis 1
source "m.safetensors" size 0 xxh64 0x0000000000000000
payload "m.bin" size 14

header = safetensors(metadata: '{"format":"pt"}', tensors)

tensor "a" bf16[2, 2] = merge(hi: lit raw u8[4] @+4, lo: lit bitpack u8[4] @+2)

bytes @+4 = lit raw u8[4] @+4

tensor "b" u8[4] = lit raw u8[4] @0+4

tensor "c" u8[2] = concat(lit raw u8[1] @+1, lit raw u8[1] @3+1)
)";

TEST(FrontendImpliedParts, RangesLeftOutAreFilledIn) {
  Module m = parseOk(kArchiveForm);
  const Checkpoint &c = m.checkpoint();
  ASSERT_EQ(c.regions.size(), 5u);
  std::string json = R"({"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]},)"
                     R"("b":{"dtype":"U8","shape":[4],"data_offsets":[12,16]},)"
                     R"("c":{"dtype":"U8","shape":[2],"data_offsets":[16,18]}})";
  json.append((8 - json.size() % 8) % 8, ' ');
  const uint64_t h = 8 + json.size();
  EXPECT_EQ(c.regions[0].bytes, (ByteRange{0, h}));
  ASSERT_TRUE(c.regions[0].index);
  EXPECT_EQ(c.regions[0].index->placement, SafetensorsIndex::Metadata::First);
  EXPECT_EQ(c.regions[0].index->metadata, R"({"format":"pt"})");
  const auto &header = as<Lit>(*c.regions[0].program);
  ASSERT_EQ(header.inlineCount(), h);
  const std::string &bytes = header.textBytes();
  EXPECT_EQ(bytes.substr(8), json);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), json.size());
  EXPECT_EQ(header.loc.line, 5u);
  EXPECT_EQ(header.loc.column, 10u);

  EXPECT_EQ(c.regions[1].bytes, (ByteRange{h, 8}));
  const auto &merge = as<Merge>(*c.regions[1].program);
  EXPECT_EQ(as<Lit>(*merge.fields[0].expr).payload(), (ByteRange{0, 4}));
  EXPECT_EQ(as<Lit>(*merge.fields[1].expr).payload(), (ByteRange{4, 2}));
  EXPECT_EQ(c.regions[2].bytes, (ByteRange{h + 8, 4}));
  EXPECT_EQ(as<Lit>(*c.regions[2].program).payload(), (ByteRange{6, 4}));
  EXPECT_EQ(c.regions[3].bytes, (ByteRange{h + 12, 4}));
  EXPECT_EQ(as<Lit>(*c.regions[3].program).payload(), (ByteRange{0, 4}));
  EXPECT_EQ(c.regions[4].bytes, (ByteRange{h + 16, 2}));
  const auto &parts = as<Concat>(*c.regions[4].program).parts;
  EXPECT_EQ(as<Lit>(*parts[0]).payload(), (ByteRange{4, 1})); // after the literal before it: @0+4
  EXPECT_EQ(as<Lit>(*parts[1]).payload(), (ByteRange{3, 1}));

  // The archive form prints back as written; the editable form in full, and reads back the same.
  EXPECT_EQ(printCheckpoint(c, CheckpointForm::Archive), kArchiveForm);
  const std::string full = printCheckpoint(c);
  EXPECT_NE(full.find(fmt::format("header @0+{} = safetensors(metadata: '{{\"format\":\"pt\"}}', tensors)", h)),
            std::string::npos)
      << full;
  EXPECT_NE(full.find(fmt::format("tensor \"b\" u8[4] @{}+4 = lit raw u8[4] @0+4", h + 12)), std::string::npos) << full;
  EXPECT_EQ(reprint(full), full);
  EXPECT_EQ(printCheckpoint(parseOk(full).checkpoint(), CheckpointForm::Archive), kArchiveForm);
  // A tensor's range written `@+SIZE` is the same range.
  std::string sized = kArchiveForm;
  sized.replace(sized.find("u8[2] ="), 7, "u8[2] @+2 =");
  EXPECT_EQ(printCheckpoint(parseOk(sized).checkpoint(), CheckpointForm::Archive), kArchiveForm);
}

TEST(FrontendImpliedParts, MetadataAfterTheTensorsOrNone) {
  const std::string head = "brevis 1\nsource \"a\" size 1 xxh64 0x0000000000000000\npayload \"b\" size 0\n\n";
  for (const std::string index : {"safetensors(tensors, metadata: '{}')", "safetensors(tensors)"}) {
    const std::string text = head + "header = " + index + "\n\ntensor \"t\" u8[1] = const u8[1] 0\n";
    const Module m = parseOk(text);
    EXPECT_EQ(printCheckpoint(m.checkpoint(), CheckpointForm::Archive), text);
  }
  // A long metadata text is broken as text is.
  const std::string metadata = "{\"k\":\"" + std::string(120, 'v') + "\"}";
  const std::string text = head + "header =\n  safetensors(\n    tensors,\n    metadata:\n      '" + metadata + "'\n  )\n";
  EXPECT_EQ(printCheckpoint(parseOk(text).checkpoint(), CheckpointForm::Archive), text);
  EXPECT_EQ(reprint(text), printModule(parseOk(text)));
}

TEST(FrontendImpliedParts, Errors) {
  const std::string head = "brevis 1\nsource \"a\" size 1 xxh64 0x0\npayload \"b\" size 1\n";
  EXPECT_EQ(firstError(head + "bytes = lit raw u8[1] @0+1\n"),
            "t.bdsl:4:1: error: a bytes region needs its byte range: @OFFSET+SIZE, or @+SIZE after the region before it");
  EXPECT_EQ(firstError(head + "header = lit raw u8[1] @0+1\n"),
            "t.bdsl:4:1: error: a header region written as an expression needs its byte range: @OFFSET+SIZE, or @+SIZE");
  EXPECT_EQ(firstError(head + "header = safetensors(metadata: '{}')\n"),
            "t.bdsl:4:10: error: safetensors(…) must list tensors: safetensors(tensors), or with the metadata before or "
            "after them: safetensors(metadata: '{…}', tensors)");
  EXPECT_EQ(firstError(head + "header = safetensors(tensors, tensors)\n"), "t.bdsl:4:31: error: safetensors(…) lists tensors twice");
  EXPECT_EQ(firstError(head + "header = safetensors(tensors: '{}')\n"),
            "t.bdsl:4:22: error: tensors takes no text; the metadata is written metadata: '{…}'");
  EXPECT_EQ(firstError(head + "header = safetensors(tensors, metadata)\n"),
            "t.bdsl:4:31: error: metadata needs its JSON text: metadata: '{…}'");
  EXPECT_EQ(firstError(head + "header = safetensors(metadata: '1', metadata: '2', tensors)\n"),
            "t.bdsl:4:37: error: safetensors(…) has metadata twice");
  EXPECT_EQ(firstError(head + "header = safetensors(tensors, names)\n"),
            "t.bdsl:4:31: error: unknown part 'names' of safetensors(…); expected tensors or metadata");
  EXPECT_EQ(firstError(head + "header = safetensors()\n"), "t.bdsl:4:22: error: expected a name before ')'");
  EXPECT_EQ(firstError(head + "bytes @0+1 = safetensors(tensors)\n"),
            "t.bdsl:4:14: error: unexpected 'safetensors'; expected 'lit', 'text', 'const', 'concat', 'repeat', "
            "'map', 'scan', 'merge' or '?'");
  EXPECT_EQ(firstError(head + "tensor \"w\" u8[1] = const u8[1] 0\nheader = safetensors(tensors)\n"),
            "t.bdsl:5:1: error: safetensors(…) lists the tensors after it, but tensor \"w\" comes before it");
  EXPECT_EQ(firstError(head + "header = safetensors(tensors)\nheader = safetensors(tensors)\n"),
            "t.bdsl:5:1: error: only one header region can be written as safetensors(…)");
  EXPECT_EQ(firstError(head + "bytes @18446744073709551615+1 = const u8[1] 0\n"),
            "t.bdsl:4:8: error: an offset must be below 2^64 - 1");
  EXPECT_EQ(firstError("lit raw u8[1] @18446744073709551615+1"), "t.bdsl:1:16: error: an offset must be below 2^64 - 1");
  // Implied offsets of a bare expression count from 0.
  const Module e = parseOk("concat(lit raw u8[2] @+2, lit raw u8[1] @+1)");
  EXPECT_EQ(as<Lit>(*as<Concat>(e.expr()).parts[1]).payload(), (ByteRange{2, 1}));
  // A field may be named by the keyword.
  EXPECT_EQ(reprint("merge(safetensors: ? u8[1])\n"), "merge(safetensors: ? u8[1])\n");
}

} // namespace
} // namespace brevis
