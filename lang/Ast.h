#pragma once
// The Brevis AST. Every expression denotes a stream u<W>[N]; node kinds are listed once in
// NodeKinds.def. Nodes own their children; every node carries its source location and an
// optional type annotation written by the user (`expr : u8[1024]`).
#include "DType.h"
#include "Encoding.h"
#include "SourceLoc.h"
#include "StreamType.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace brevis {

enum class NodeKind {
#define BREVIS_NODE(Class, kw, doc) Class,
#include "NodeKinds.def"
};
std::string_view nodeKindName(NodeKind); ///< the keyword: "lit", "merge", "?"

enum class MapFn {
#define BREVIS_MAPFN(E, kw, param, doc) E,
#include "MapFns.def"
};
std::string_view mapFnName(MapFn);
std::optional<MapFn> mapFnFromName(std::string_view);
bool mapFnTakesParameter(MapFn);

enum class ScanOp { Xor, Add };
std::string_view scanOpName(ScanOp);
std::optional<ScanOp> scanOpFromName(std::string_view);

/// A byte range [offset, offset + size) in the payload sidecar (or in the output file).
/// Text may leave a range's offset out (`@+SIZE`), and a region's whole range where its
/// declaration gives it; the parser marks them with these values and lang/ImpliedParts fills
/// them in before anything else sees the program.
inline constexpr uint64_t kImpliedOffset = UINT64_MAX;
inline constexpr uint64_t kImpliedSize = UINT64_MAX;

struct ByteRange {
  uint64_t offset = 0;
  uint64_t size = 0;
  bool operator==(const ByteRange &) const = default;
};

/// How the user wrote a number: the printer writes it back the same way. Auto is the printer's
/// own choice (hex for bit patterns, decimal for counts), for numbers the tools write.
enum class Radix : uint8_t { Auto, Decimal, Hex };

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

/// Base of all expression nodes.
struct Expr {
  const NodeKind kind;
  SourceLoc loc;
  std::optional<StreamType> annotation; ///< user-written `: u<W>[N]`, checked against the derived type

  virtual ~Expr() = default;
  Expr(const Expr &) = delete;
  Expr &operator=(const Expr &) = delete;

protected:
  explicit Expr(NodeKind k) : kind(k) {}
};

/// `lit raw u8[N] @off+size` (payload reference), `lit u8[3] [1, 2, 3]` (inline words) or
/// `text 'abc'` (inline bytes written as text: u8 words).
struct Lit final : Expr {
  static constexpr NodeKind Kind = NodeKind::Lit;
  StreamType type;
  Encoding encoding = Encoding::Raw; ///< meaningful for payload references only
  /// A payload range, an inline word list, or a text's bytes (a safetensors header runs to
  /// megabytes: a word apiece took eight times its size).
  std::variant<ByteRange, std::vector<uint64_t>, std::string> data;
  Radix radix = Radix::Auto; ///< how inline words are written, when not as text
  bool isInline() const { return data.index() != 0; }
  /// Inline u8 words written (and printed) as `text '…'`: data holds their bytes.
  bool isText() const { return data.index() == 2; }
  const ByteRange &payload() const { return std::get<ByteRange>(data); }
  /// The words of an inline word list (not of a text).
  const std::vector<uint64_t> &words() const { return std::get<std::vector<uint64_t>>(data); }
  /// The bytes of a text.
  const std::string &textBytes() const { return std::get<std::string>(data); }
  /// Inline word i, of a word list or a text.
  uint64_t inlineWord(size_t i) const {
    return isText() ? static_cast<unsigned char>(textBytes()[i]) : words()[i];
  }
  /// How many inline words there are.
  size_t inlineCount() const { return isText() ? textBytes().size() : words().size(); }
  static std::unique_ptr<Lit> make(StreamType, Encoding, ByteRange);
  static std::unique_ptr<Lit> make(StreamType, std::vector<uint64_t> words);
  static std::unique_ptr<Lit> makeText(std::string_view bytes); ///< `text '…'`: u8[bytes.size()]
  static std::unique_ptr<Lit> makeText(std::string &&bytes);     ///< the same, the bytes moved in
  /// The same from a C string (which would convert to either of the above alike).
  static std::unique_ptr<Lit> makeText(const char *bytes) { return makeText(std::string_view(bytes)); }
  Lit() : Expr(Kind) {}
};

/// `const u16[64] 0x3f80`: one word repeated.
struct Const final : Expr {
  static constexpr NodeKind Kind = NodeKind::Const;
  StreamType type;
  uint64_t value = 0;
  Radix radix = Radix::Auto;
  static std::unique_ptr<Const> make(StreamType, uint64_t value);
  Const() : Expr(Kind) {}
};

/// `concat(a, b, ...)`: children of one width, lengths add.
struct Concat final : Expr {
  static constexpr NodeKind Kind = NodeKind::Concat;
  std::vector<ExprPtr> parts;
  static std::unique_ptr<Concat> make(std::vector<ExprPtr> parts);
  Concat() : Expr(Kind) {}
};

/// `repeat k (body)`: body's stream k times.
struct Repeat final : Expr {
  static constexpr NodeKind Kind = NodeKind::Repeat;
  uint64_t count = 0;
  Radix radix = Radix::Auto; ///< of the count
  ExprPtr body;
  static std::unique_ptr<Repeat> make(uint64_t count, ExprPtr body);
  Repeat() : Expr(Kind) {}
};

/// `map xor 0x8000 (body)`: a bijection word by word. `map add [c0, c1, …] (body)`: word i
/// takes the constant c(i mod P), P the list's length (per-column offsets of a row-major
/// tensor, whose channels differ in scale); `map add [c0, …] per R (body)`: word i takes
/// c((i / R) mod P), each constant holding for R consecutive words (per-row offsets: a layout
/// whose rows are the channels).
struct Map final : Expr {
  static constexpr NodeKind Kind = NodeKind::Map;
  MapFn fn = MapFn::Xor;
  uint64_t param = 0; ///< constant for xor/add, rotation for rotl; 0 otherwise
  Radix radix = Radix::Auto; ///< of the parameter (or of the list)
  /// xor/add with a list of constants, one per position modulo its length (then `param` is
  /// unused); empty for one constant.
  std::vector<uint64_t> periodic;
  uint64_t per = 1; ///< words each constant of the list holds for (1 without a list)
  ExprPtr body;
  /// The constant word i takes: the parameter, or its entry of the list.
  uint64_t constantFor(uint64_t i) const { return periodic.empty() ? param : periodic[(i / per) % periodic.size()]; }
  static std::unique_ptr<Map> make(MapFn, uint64_t param, ExprPtr body);
  Map() : Expr(Kind) {}
};

/// `scan add 0 (body)`: out[0] = init, out[i] = out[i-1] op body[i-1].
struct Scan final : Expr {
  static constexpr NodeKind Kind = NodeKind::Scan;
  ScanOp op = ScanOp::Add;
  uint64_t init = 0;
  Radix radix = Radix::Auto; ///< of init
  ExprPtr body;
  static std::unique_ptr<Scan> make(ScanOp, uint64_t init, ExprPtr body);
  Scan() : Expr(Kind) {}
};

/// One bit field of a merge, optionally named (`exp: ...`).
struct MergeField {
  std::string name;
  ExprPtr expr;
};

/// `merge(sign: a, exp: b, mant: c)`: fields packed most significant first.
struct Merge final : Expr {
  static constexpr NodeKind Kind = NodeKind::Merge;
  std::vector<MergeField> fields;
  static std::unique_ptr<Merge> make(std::vector<MergeField> fields);
  Merge() : Expr(Kind) {}
};

/// `? u8[1024]`: a typed hole.
struct Hole final : Expr {
  static constexpr NodeKind Kind = NodeKind::Hole;
  StreamType type;
  /// A literal hole, `lit ENC u<W>[N]` (or `lit auto u<W>[N]`): only a literal fills it, coded
  /// in that encoding (the smallest, for auto), with the words it must produce. A plain hole
  /// (`? u<W>[N]`) takes any program.
  bool literalOnly = false;
  std::optional<Encoding> encoding; ///< a literal hole's encoding; none for auto
  static std::unique_ptr<Hole> make(StreamType);
  static std::unique_ptr<Hole> makeLiteral(StreamType, std::optional<Encoding>);
  Hole() : Expr(Kind) {}
};

/// Checked downcast by kind (asserts on a wrong kind: that is an internal bug).
template <typename T> const T &as(const Expr &e) {
  if (e.kind != T::Kind) __builtin_trap();
  return static_cast<const T &>(e);
}
template <typename T> T &as(Expr &e) {
  if (e.kind != T::Kind) __builtin_trap();
  return static_cast<T &>(e);
}
template <typename T> const T *dynAs(const Expr &e) {
  return e.kind == T::Kind ? static_cast<const T *>(&e) : nullptr;
}

/// Calls f(child) for each child of any node, in order (none for leaves).
template <typename F> void forEachChild(const Expr &e, F &&f) {
  switch (e.kind) {
  case NodeKind::Lit:
  case NodeKind::Const:
  case NodeKind::Hole: return;
  case NodeKind::Concat:
    for (const auto &p : as<Concat>(e).parts) f(*p);
    return;
  case NodeKind::Repeat: f(*as<Repeat>(e).body); return;
  case NodeKind::Map: f(*as<Map>(e).body); return;
  case NodeKind::Scan: f(*as<Scan>(e).body); return;
  case NodeKind::Merge:
    for (const auto &field : as<Merge>(e).fields) f(*field.expr);
    return;
  }
}

/// Children of any node, in order (empty for leaves).
std::vector<const Expr *> children(const Expr &e);
std::vector<Expr *> children(Expr &e);

/// A deep copy of `e`: the same nodes, locations and annotations (payload references point at
/// the same bytes).
ExprPtr cloneExpr(const Expr &e);
/// Adds `base` to the payload offset of every literal of `e` that has one: a program coded into a
/// payload of its own, moved to where that payload lands in a larger one.
void rebasePayload(Expr &e, uint64_t base);

/// The stream type of a well-typed expression (the type checker's result, derived again by the
/// same rules, lang/OperatorTyping.h, without diagnostics). Precondition: the expression has
/// passed the checker.
StreamType streamTypeOf(const Expr &e);

/// Same kind, fields, annotations, field names and children, recursively; locations are ignored.
bool structurallyEqual(const Expr &a, const Expr &b);

// ---------------------------------------------------------------------------------------
// Checkpoint programs: how a whole file is rebuilt.

/// Which part of the output file a region produces.
enum class RegionKind {
  Header, ///< the verbatim safetensors header (length prefix + JSON + padding), u8 stream
  Tensor, ///< one tensor's bytes, read as words of its dtype's width
  Bytes,  ///< bytes no tensor covers (or a whole non-safetensors file), u8 stream
};

std::string_view regionKindName(RegionKind); ///< the keyword: "header", "tensor", "bytes"

/// A safetensors header written as the list of the program's tensors:
/// `safetensors(metadata: '{…}', tensors)`. It stands for the header a safetensors writer makes
/// of the tensor regions that follow it (lang/SafetensorsIndex.h has the exact bytes).
struct SafetensorsIndex {
  /// Where the `__metadata__` entry stands among the JSON object's members, if there is one.
  enum class Metadata : uint8_t { None, First, Last };
  Metadata placement = Metadata::None;
  std::string metadata; ///< the `__metadata__` value's JSON text, as written in the file
  SourceLoc loc;        ///< of the `safetensors` keyword
  bool operator==(const SafetensorsIndex &o) const { return placement == o.placement && metadata == o.metadata; }
};

struct Region {
  RegionKind kind = RegionKind::Bytes;
  SourceLoc loc;
  std::string name;              ///< tensor name (Tensor only)
  DType dtype = DType::U8;       ///< Tensor only
  std::vector<uint64_t> shape;   ///< Tensor only
  ByteRange bytes;               ///< where the region lies in the output file
  /// The digest of the original bytes the region must rebuild (`digest 0x…` in program text;
  /// docs/format/archive.md defines it). Programs written for editing carry it so that a region
  /// that no longer rebuilds its bytes is reported where it is written; an archive keeps it in
  /// its index instead, and its program text has none.
  std::optional<uint64_t> digest;
  /// A header region written as `safetensors(…)`; its program is then the text that it stands
  /// for, made when the program is read (or built).
  std::optional<SafetensorsIndex> index;
  ExprPtr program;
  /// `#` comments printed above the region: those written just before it, and those written
  /// inside it (which move up to its head).
  std::vector<std::string> comments;
};

/// The file a checkpoint program reproduces.
struct SourceInfo {
  std::string fileName;
  uint64_t size = 0;
  uint64_t xxh64 = 0; ///< of the whole file, verified after decoding
};

struct Checkpoint {
  unsigned version = 1;
  SourceLoc loc;
  SourceLoc sourceLoc, payloadLoc; ///< of the `source` and `payload` lines
  SourceInfo source;
  std::string payloadFile; ///< sidecar file name, relative to the program file
  uint64_t payloadSize = 0;
  std::vector<Region> regions; ///< in file order
};

inline constexpr unsigned kLanguageVersion = 1;

/// A parsed `.bdsl` file: a whole checkpoint, or a single expression (for experiments).
struct Module {
  std::variant<Checkpoint, ExprPtr> body;
  /// `#` comments at the top (a checkpoint's, those among its declarations too) and after the
  /// last region; an expression's comments all go above it.
  std::vector<std::string> leadingComments = {};
  std::vector<std::string> trailingComments = {};
  bool isCheckpoint() const { return body.index() == 0; }
  Checkpoint &checkpoint() { return std::get<Checkpoint>(body); }
  const Checkpoint &checkpoint() const { return std::get<Checkpoint>(body); }
  const Expr &expr() const { return *std::get<ExprPtr>(body); }
  Expr &expr() { return *std::get<ExprPtr>(body); }
};

/// Element count of a shape (1 for a scalar); nullopt on overflow.
std::optional<uint64_t> elementCount(const std::vector<uint64_t> &shape);

} // namespace brevis
