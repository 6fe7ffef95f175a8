// Unit tests for lang/: the type checker's rules and the printer's canonical form.
#include "lang/Ast.h"
#include "lang/Diagnostics.h"
#include "lang/MergeLayout.h"
#include "lang/OperatorTyping.h"
#include "lang/Printer.h"
#include "lang/SafetensorsIndex.h"
#include "lang/TypeChecker.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace brevis;

namespace {

ExprPtr rawLit(unsigned w, uint64_t n, uint64_t offset = 0) {
  return Lit::make(StreamType{w, n}, Encoding::Raw, ByteRange{offset, n * containerBytes(w)});
}

/// Type of `e`, with the first diagnostic (if any) in `firstError`.
std::optional<StreamType> typeOf(const Expr &e, std::string *firstError = nullptr,
                                 std::optional<uint64_t> payloadSize = std::nullopt) {
  Diagnostics diags("t.bdsl", "");
  TypeChecker checker(diags);
  auto t = checker.check(e, payloadSize);
  if (firstError) *firstError = diags.all().empty() ? "" : diags.all().front().message;
  return t;
}

std::vector<MergeField> fields(ExprPtr a, ExprPtr b) {
  std::vector<MergeField> f;
  f.push_back({"hi", std::move(a)});
  f.push_back({"lo", std::move(b)});
  return f;
}

} // namespace

TEST(TypeChecker, DerivesTypesOfEveryOperator) {
  EXPECT_EQ(typeOf(*rawLit(7, 10)), (StreamType{7, 10}));
  EXPECT_EQ(typeOf(*Const::make({16, 64}, 0x3f80)), (StreamType{16, 64}));
  std::vector<ExprPtr> parts;
  parts.push_back(rawLit(8, 3));
  parts.push_back(Const::make({8, 5}, 1));
  EXPECT_EQ(typeOf(*Concat::make(std::move(parts))), (StreamType{8, 8}));
  EXPECT_EQ(typeOf(*Repeat::make(4, Const::make({8, 3}, 1))), (StreamType{8, 12}));
  EXPECT_EQ(typeOf(*Map::make(MapFn::Xor, 0x80, rawLit(8, 4))), (StreamType{8, 4}));
  EXPECT_EQ(typeOf(*Scan::make(ScanOp::Add, 0, rawLit(16, 9))), (StreamType{16, 10}));
  EXPECT_EQ(typeOf(*Merge::make(fields(rawLit(1, 5), rawLit(15, 5)))), (StreamType{16, 5}));
  EXPECT_EQ(typeOf(*Hole::make({32, 7})), (StreamType{32, 7}));
}

TEST(TypeChecker, RejectsEachBrokenRule) {
  std::string err;
  EXPECT_FALSE(typeOf(*Const::make({65, 1}, 0), &err));
  EXPECT_EQ(err, "constant word width must be between 1 and 64 bits, but is 65");

  EXPECT_FALSE(typeOf(*Const::make({4, 1}, 16), &err));
  EXPECT_EQ(err, "constant 0x10 does not fit in 4 bits");

  std::vector<ExprPtr> parts;
  parts.push_back(rawLit(8, 3));
  parts.push_back(rawLit(16, 3));
  EXPECT_FALSE(typeOf(*Concat::make(std::move(parts)), &err));
  EXPECT_EQ(err, "concat part 2 is u16[3], but the first part has width 8");

  EXPECT_FALSE(typeOf(*Repeat::make(1, rawLit(8, 3)), &err));
  EXPECT_EQ(err, "repeat count must be at least 2, but is 1");
  EXPECT_FALSE(typeOf(*Repeat::make(2, rawLit(8, 0)), &err));
  EXPECT_EQ(err, "repeat needs a non-empty child stream, but it has length 0");
  EXPECT_FALSE(typeOf(*Repeat::make(UINT64_MAX, rawLit(8, 3)), &err));
  EXPECT_EQ(err, "repeat length overflows 64 bits");

  EXPECT_FALSE(typeOf(*Map::make(MapFn::Rotl, 8, rawLit(8, 3)), &err));
  EXPECT_EQ(err, "rotl amount must be below the width 8, but is 8");
  EXPECT_FALSE(typeOf(*Map::make(MapFn::Xor, 0x100, rawLit(8, 3)), &err));
  EXPECT_EQ(err, "map xor constant 0x100 does not fit in 8 bits");

  EXPECT_FALSE(typeOf(*Scan::make(ScanOp::Xor, 0x100, rawLit(8, 3)), &err));
  EXPECT_EQ(err, "scan initial word 0x100 does not fit in 8 bits");

  EXPECT_FALSE(typeOf(*Merge::make(fields(rawLit(1, 5), rawLit(15, 6))), &err));
  EXPECT_EQ(err, "merge field 2 has length 6, but the first field has length 5");
  EXPECT_FALSE(typeOf(*Merge::make(fields(rawLit(60, 5), rawLit(8, 5))), &err));
  EXPECT_EQ(err, "merge field widths sum to 68, more than 64 bits");

  auto annotated = rawLit(8, 4);
  annotated->annotation = StreamType{8, 5};
  EXPECT_FALSE(typeOf(*annotated, &err));
  EXPECT_EQ(err, "annotated type u8[5] does not match the derived type u8[4]");

  EXPECT_FALSE(typeOf(*Lit::make({8, 3}, Encoding::Raw, ByteRange{0, 2}), &err));
  EXPECT_EQ(err, "raw literal u8[3] needs 3 payload bytes, but the range holds 2");
  EXPECT_FALSE(typeOf(*rawLit(8, 3, 10), &err, 12));
  EXPECT_EQ(err, "payload range @10+3 lies outside the payload of 12 bytes");
  EXPECT_FALSE(typeOf(*Lit::make({4, 2}, std::vector<uint64_t>{1, 16}), &err));
  EXPECT_EQ(err, "inline word 1 (16) does not fit in 4 bits");

  // Entropy- and LZ-coded literals: the widest words each holds, and a non-empty range (zstd's
  // holds its block size even for no words).
  EXPECT_FALSE(typeOf(*Lit::make({9, 2}, Encoding::Zstd, ByteRange{0, 20}), &err));
  EXPECT_EQ(err, "zstd literals hold words of at most 8 bits, but this one is u9[2]");
  EXPECT_TRUE(typeOf(*Lit::make({8, 2}, Encoding::Zstd, ByteRange{0, 20}), &err));
  EXPECT_TRUE(typeOf(*Lit::make({1, 2}, Encoding::Zstd, ByteRange{0, 20}), &err));
  EXPECT_FALSE(typeOf(*Lit::make({8, 2}, Encoding::Zstd, ByteRange{0, 0}), &err));
  EXPECT_EQ(err, "zstd literal u8[2] has an empty payload range");
  EXPECT_FALSE(typeOf(*Lit::make({8, 0}, Encoding::Zstd, ByteRange{0, 0}), &err));
  EXPECT_EQ(err, "zstd literal u8[0] has an empty payload range");
  EXPECT_FALSE(typeOf(*Lit::make({8, 0}, Encoding::Huffman, ByteRange{0, 0}), &err));
  EXPECT_EQ(err, "huffman literals hold at least one word; write an empty stream as lit u8[0] []");
}

TEST(OperatorTyping, NamesTheChildThatBreaksARule) {
  std::vector<ExprPtr> parts;
  parts.push_back(rawLit(8, 3));
  parts.push_back(rawLit(16, 3));
  auto concat = Concat::make(std::move(parts));
  const StreamType childTypes[] = {{8, 3}, {16, 3}};
  Typing t = typeOperator(*concat, childTypes);
  ASSERT_TRUE(std::holds_alternative<TypeError>(t));
  EXPECT_EQ(std::get<TypeError>(t).child, 1u);

  auto repeat = Repeat::make(1, rawLit(8, 3));
  const StreamType body[] = {{8, 3}};
  t = typeOperator(*repeat, body);
  ASSERT_TRUE(std::holds_alternative<TypeError>(t));
  EXPECT_EQ(std::get<TypeError>(t).child, std::nullopt); // the count is the node's own field
  EXPECT_EQ(streamTypeOf(*Repeat::make(3, rawLit(8, 3))), (StreamType{8, 9}));
}

TEST(MergeLayout, FieldShiftsAgreeWithShiftingInFieldByField) {
  const unsigned widths[] = {1, 8, 7};
  EXPECT_EQ(mergeFieldShifts(widths), (std::vector<unsigned>{15, 7, 0}));
  const uint16_t values[] = {1, 0x85, 0x3a};
  uint16_t byShifts = 0, byFields = 0;
  auto shifts = mergeFieldShifts(widths);
  for (size_t k = 0; k < 3; ++k) {
    byShifts = static_cast<uint16_t>(byShifts | values[k] << shifts[k]);
    byFields = mergeShiftIn(byFields, values[k], widths[k]);
  }
  EXPECT_EQ(byShifts, byFields);
  EXPECT_EQ(byFields, 0xc2ba); // sign 1, exponent 0x85, mantissa 0x3a: most significant first
}

TEST(Encoding, NamesRoundTrip) {
  for (Encoding e : kAllEncodings) EXPECT_EQ(encodingFromName(encodingName(e)), e);
  EXPECT_EQ(encodingName(Encoding::RansO1), "rans_o1");
  EXPECT_EQ(maxEncodingWidth(Encoding::Rans), 16u);
  EXPECT_EQ(encodingFromName("rawx"), std::nullopt);
}

TEST(TypeChecker, ChecksCheckpointLayout) {
  Checkpoint c;
  c.source = SourceInfo{"m.safetensors", 10, 0};
  c.payloadSize = 100;
  Region h;
  h.kind = RegionKind::Header;
  h.bytes = ByteRange{0, 4};
  h.program = rawLit(8, 4);
  c.regions.push_back(std::move(h));
  Region t;
  t.kind = RegionKind::Tensor;
  t.name = "w";
  t.dtype = DType::BF16;
  t.shape = {3};
  t.bytes = ByteRange{4, 6};
  t.program = rawLit(8, 3); // wrong: a bf16 tensor needs u16[3]
  c.regions.push_back(std::move(t));
  Module m{std::move(c)};
  Diagnostics diags("m.bdsl", "");
  TypeChecker checker(diags);
  EXPECT_FALSE(checker.checkModule(m));
  ASSERT_EQ(diags.all().size(), 1u);
  EXPECT_EQ(diags.all()[0].message, "program produces u8[3], but the tensor needs u16[3]");
}

TEST(Printer, PrintsEachFormCanonically) {
  EXPECT_EQ(printExpr(*rawLit(7, 10, 4)), "lit raw u7[10] @4+10");
  EXPECT_EQ(printExpr(*Lit::make({8, 3}, std::vector<uint64_t>{1, 2, 3})), "lit u8[3] [1, 2, 3]");
  EXPECT_EQ(printExpr(*Const::make({16, 64}, 0x3f80)), "const u16[64] 0x3f80");
  EXPECT_EQ(printExpr(*Repeat::make(4, Const::make({8, 3}, 1))), "repeat 4 (const u8[3] 1)");
  EXPECT_EQ(printExpr(*Map::make(MapFn::Xor, 0x80, rawLit(8, 4))), "map xor 0x80 (lit raw u8[4] @0+4)");
  EXPECT_EQ(printExpr(*Map::make(MapFn::ZigZag, 0, rawLit(8, 4))), "map zigzag (lit raw u8[4] @0+4)");
  EXPECT_EQ(printExpr(*Scan::make(ScanOp::Add, 0, rawLit(8, 4))), "scan add 0 (lit raw u8[4] @0+4)");
  EXPECT_EQ(printExpr(*Hole::make({8, 100})), "? u8[100]");
  EXPECT_EQ(printExpr(*Lit::makeText("{}")), "text '{}'"); // a C string: neither overload preferred
  EXPECT_EQ(printExpr(*Lit::makeText(std::string("ab\n"))), "text 'ab\\n'");
  EXPECT_EQ(printExpr(*Merge::make(fields(rawLit(1, 5), rawLit(15, 5, 5)))),
            "merge(hi: lit raw u1[5] @0+5, lo: lit raw u15[5] @5+10)");
}

TEST(Printer, WrapsLongProgramsOneChildPerLine) {
  std::vector<ExprPtr> parts;
  for (int i = 0; i < 6; ++i) parts.push_back(rawLit(8, 1000, 1000 * i));
  std::string text = printExpr(*Concat::make(std::move(parts)));
  EXPECT_EQ(text, "concat(\n"
                  "  lit raw u8[1000] @0+1000,\n"
                  "  lit raw u8[1000] @1000+1000,\n"
                  "  lit raw u8[1000] @2000+1000,\n"
                  "  lit raw u8[1000] @3000+1000,\n"
                  "  lit raw u8[1000] @4000+1000,\n"
                  "  lit raw u8[1000] @5000+1000\n"
                  ")");
  for (size_t start = 0, end; start < text.size(); start = end + 1) {
    end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    EXPECT_LE(end - start, kPrintWidth);
  }
}

TEST(Printer, QuotesStrings) {
  EXPECT_EQ(quoteString("a\"b\\c\n"), "\"a\\\"b\\\\c\\x0a\"");
}

TEST(Diagnostics, RendersLocationSourceLineAndCaret) {
  Diagnostics diags("f.bdsl", "first\n  second line\n");
  diags.error(SourceLoc{2, 3}, "something is wrong");
  EXPECT_EQ(diags.render(), "f.bdsl:2:3: error: something is wrong\n  second line\n  ^\n");
  EXPECT_TRUE(diags.hasErrors());
}

TEST(Diagnostics, ALongLineIsShownAroundItsColumn) {
  // A line of a megabyte, wrong at column 500,000: a window of it, cut at both ends, with the
  // caret under the same character; near the start, cut at the end only.
  std::string text(1000000, 'a');
  text[499999] = 'X';
  for (const uint32_t column : {500000u, 3u}) {
    Diagnostics diags("f.bdsl", text);
    diags.error(SourceLoc{1, column}, "bad");
    const std::string out = diags.render();
    const size_t first = out.find('\n'), second = out.find('\n', first + 1);
    const std::string shown = out.substr(first + 1, second - first - 1);
    const std::string caret = out.substr(second + 1, out.size() - second - 2);
    EXPECT_LE(shown.size(), Diagnostics::kMaxShownLine + 6);
    EXPECT_EQ(shown.starts_with("..."), column > Diagnostics::kMaxShownLine);
    EXPECT_TRUE(shown.ends_with("..."));
    ASSERT_EQ(caret.back(), '^');
    EXPECT_EQ(caret.find_first_not_of(' '), caret.size() - 1);
    EXPECT_EQ(shown[caret.size() - 1], column == 500000u ? 'X' : 'a') << shown;
  }
  // Cut ends never split a UTF-8 character ("é" is two bytes).
  std::string accents;
  for (int i = 0; i < 1000; ++i) accents += "\xc3\xa9";
  Diagnostics diags("f.bdsl", accents);
  diags.error(SourceLoc{1, 1002}, "bad"); // the window would start and end inside a character
  const std::string out = diags.render();
  const size_t first = out.find('\n'), second = out.find('\n', first + 1);
  const std::string shown = out.substr(first + 4, second - first - 7); // without the "..."s
  ASSERT_FALSE(shown.empty());
  EXPECT_EQ(static_cast<uint8_t>(shown.front()), 0xc3);
  EXPECT_EQ(static_cast<uint8_t>(shown.back()), 0xa9);
}

TEST(Diagnostics, ControlCharactersAreShownEscaped) {
  // A program line (and a file name, an archive member's) holding terminal commands: set the
  // title (ESC ] 0 ; ... BEL), clear the screen (ESC [ 2 J). None reaches the output raw, and the
  // caret stays under the character it points at.
  const std::string text = "merge(\x1b]0;X\x07\x1b[2J, \xc2\x9b" "2J \xc3\xa9%)"; // CSI as U+009B; an "é"
  Diagnostics diags("m\x1b[2J.bdsl", text);
  diags.error(SourceLoc{1, static_cast<uint32_t>(text.find('%') + 1)}, "unexpected token '\x1b[31m'");
  const std::string out = diags.render();
  for (const char c : out) EXPECT_TRUE(c == '\n' || static_cast<uint8_t>(c) >= 0x20) << out;
  EXPECT_TRUE(out.starts_with("m\\x1b[2J.bdsl:1:")) << out;
  const size_t first = out.find('\n'), second = out.find('\n', first + 1);
  const std::string shown = out.substr(first + 1, second - first - 1);
  EXPECT_EQ(shown, "merge(\\x1b]0;X\\x07\\x1b[2J, \\u009b2J \xc3\xa9%)");
  EXPECT_NE(out.find("unexpected token '\\x1b[31m'"), std::string::npos) << out;
  const std::string caret = out.substr(second + 1, out.size() - second - 2);
  ASSERT_EQ(caret.back(), '^');
  EXPECT_EQ(shown[caret.size()], '%') << shown << "\n" << caret; // after the two bytes of "é", one column
  // A name on a line of a listing keeps neither a line break nor a tab; a message keeps both.
  EXPECT_EQ(withControlsEscaped("new\nline\t.st\x1b", false), "new\\x0aline\\x09.st\\x1b");
  EXPECT_EQ(withControlsEscaped("two\nlines\t.st"), "two\nlines\t.st");
  // The line saying how many more errors there were names the file escaped too.
  Diagnostics many("m\x1b[2J.bdsl", text);
  for (size_t i = 0; i <= Diagnostics::kMaxReported; ++i) many.error(SourceLoc{1, 1}, "bad");
  const std::string all = many.render();
  for (const char c : all) EXPECT_TRUE(c == '\n' || static_cast<uint8_t>(c) >= 0x20) << all;
}

// --- a safetensors header as the list of the tensors (lang/SafetensorsIndex.h) --------------

namespace {

Region tensorRegion(std::string name, DType dtype, std::vector<uint64_t> shape, uint64_t offset, uint64_t size) {
  Region r;
  r.kind = RegionKind::Tensor;
  r.name = std::move(name);
  r.dtype = dtype;
  r.shape = std::move(shape);
  r.bytes = ByteRange{offset, size};
  return r;
}

/// A header region, two tensors and a gap of bytes between them, at `headerSize`.
Checkpoint indexCheckpoint(uint64_t headerSize) {
  Checkpoint c;
  Region h;
  h.kind = RegionKind::Header;
  h.bytes = ByteRange{0, headerSize};
  c.regions.push_back(std::move(h));
  c.regions.push_back(tensorRegion("w\"\\\n\x01\xc3\xa9", DType::BF16, {2, 3}, headerSize, 12));
  Region gap;
  gap.kind = RegionKind::Bytes;
  gap.bytes = ByteRange{headerSize + 12, 4};
  c.regions.push_back(std::move(gap));
  c.regions.push_back(tensorRegion("s", DType::F32, {}, headerSize + 16, 4));
  return c;
}

/// What a writer makes of `json`: its length, itself, spaces up to a multiple of 8.
std::string framedJson(std::string json) {
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int b = 0; b < 8; ++b) out[b] = static_cast<char>(json.size() >> (8 * b));
  return out + json;
}

} // namespace

TEST(SafetensorsIndex, WritesTheHeaderAWriterMakes) {
  const Checkpoint c = indexCheckpoint(0);
  const std::string tensors = R"("w\"\\\n\u0001é":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},)"
                              R"("s":{"dtype":"F32","shape":[],"data_offsets":[16,20]})";
  const std::string metadata = R"({"format":"pt"})";
  using M = SafetensorsIndex::Metadata;
  const std::pair<SafetensorsIndex, std::string> cases[] = {
      {{M::None, "", {}}, "{" + tensors + "}"},
      {{M::First, metadata, {}}, "{\"__metadata__\":" + metadata + "," + tensors + "}"},
      {{M::Last, metadata, {}}, "{" + tensors + ",\"__metadata__\":" + metadata + "}"},
  };
  for (const auto &[index, json] : cases) {
    auto bytes = safetensorsHeaderBytes(c, 0, index);
    ASSERT_TRUE(bytes) << bytes.error().message;
    EXPECT_EQ(*bytes, framedJson(json));
    EXPECT_EQ(bytes->size() % 8, 0u);
    // And the header is read back as the index that made it.
    auto matched = matchSafetensorsIndex(c, 0, *bytes);
    ASSERT_TRUE(matched);
    EXPECT_EQ(*matched, index);
  }
  // No tensors: the metadata alone, or an empty object.
  Checkpoint empty;
  empty.regions.emplace_back();
  empty.regions[0].kind = RegionKind::Header;
  EXPECT_EQ(*safetensorsHeaderBytes(empty, 0, {M::First, metadata, {}}), framedJson("{\"__metadata__\":" + metadata + "}"));
  EXPECT_EQ(*safetensorsHeaderBytes(empty, 0, {M::None, "", {}}), framedJson("{}"));
  EXPECT_EQ(matchSafetensorsIndex(empty, 0, framedJson("{}")), (SafetensorsIndex{M::None, "", {}}));
}

TEST(SafetensorsIndex, AHeaderSizeTheProgramDeclaresReservesNoMoreThanItsMembersNeed) {
  // A hostile program may declare a header of 100 GB: building the header's text must not
  // reserve that (the region's size is checked against the text afterwards).
  Checkpoint c = indexCheckpoint(0);
  c.regions[0].bytes.size = 99'999'999'999;
  auto bytes = safetensorsHeaderBytes(c, 0, {});
  ASSERT_TRUE(bytes) << bytes.error().message;
  EXPECT_LT(bytes->capacity(), 4096u);
  c.regions[0].bytes.size = kImpliedSize;
  auto implied = safetensorsHeaderBytes(c, 0, {});
  ASSERT_TRUE(implied);
  EXPECT_EQ(*implied, *bytes);
}

TEST(SafetensorsIndex, OtherHeadersStayText) {
  const Checkpoint c = indexCheckpoint(0);
  const std::string tensors = R"("w\"\\\n\u0001é":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},)"
                              R"("s":{"dtype":"F32","shape":[],"data_offsets":[16,20]})";
  EXPECT_TRUE(matchSafetensorsIndex(c, 0, framedJson("{" + tensors + "}")));
  // Spaces after separators, another order, no padding, padding of another byte, an escape
  // written otherwise, a different length: none is what the list of the tensors makes.
  std::string spaced = "{" + tensors + "}";
  spaced.replace(spaced.find("\"dtype\":"), 8, "\"dtype\": ");
  EXPECT_FALSE(matchSafetensorsIndex(c, 0, framedJson(spaced)));
  const std::string s = R"("s":{"dtype":"F32","shape":[],"data_offsets":[16,20]})";
  const std::string w = R"("w\"\\\n\u0001é":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]})";
  EXPECT_FALSE(matchSafetensorsIndex(c, 0, framedJson("{" + s + "," + w + "}")));
  std::string unpadded = framedJson("{" + tensors + "}");
  unpadded.erase(unpadded.find_last_not_of(' ') + 1);
  unpadded[0] = static_cast<char>(unpadded.size() - 8);
  EXPECT_FALSE(matchSafetensorsIndex(c, 0, unpadded));
  std::string tabs = framedJson("{" + tensors + "}");
  std::replace(tabs.begin() + 9, tabs.end(), ' ', '\t');
  EXPECT_FALSE(matchSafetensorsIndex(c, 0, tabs));
  std::string escaped = "{" + tensors + "}";
  escaped.replace(escaped.find("\\n"), 2, "\\u000a");
  EXPECT_FALSE(matchSafetensorsIndex(c, 0, framedJson(escaped)));
  std::string longer = framedJson("{" + tensors + "}");
  longer[0] = static_cast<char>(longer[0] + 8);
  EXPECT_FALSE(matchSafetensorsIndex(c, 0, longer));
  EXPECT_FALSE(matchSafetensorsIndex(c, 0, ""));
  EXPECT_FALSE(matchSafetensorsIndex(c, 0, std::string(8, '\0')));
}

TEST(SafetensorsIndex, RefusesTensorsBeforeItAndASecondIndex) {
  Checkpoint c = indexCheckpoint(0);
  std::swap(c.regions[0], c.regions[1]);
  c.regions[1].loc = SourceLoc{7, 1};
  auto before = safetensorsHeaderBytes(c, 1, {});
  ASSERT_FALSE(before);
  EXPECT_EQ(before.error().message,
            "safetensors(…) lists the tensors after it, but tensor \"w\\\"\\\\\\x0a\\x01é\" comes before it");
  EXPECT_EQ(before.error().loc.line, 7u);
  Checkpoint twice = indexCheckpoint(0);
  twice.regions[2].kind = RegionKind::Header;
  twice.regions[2].index = SafetensorsIndex{};
  EXPECT_EQ(safetensorsHeaderBytes(twice, 0, {}).error().message, "only one header region can be written as safetensors(…)");
}
