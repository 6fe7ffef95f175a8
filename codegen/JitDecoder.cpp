// The chunk driver: the RegionDecoder that looks up (or has the ORC session compile) the function
// for a region's program shape and runs it chunk by chunk, with the interpreter for the rest.
#include "codegen/JitDecoder.h"

#include "codegen/DecodeFunctionEmitter.h"
#include "codegen/OrcSession.h"
#include "codegen/ShapeKey.h"
#include "lang/BitpackFormat.h"
#include "runtime/codecs/LitDecode.h"
#include "runtime/execution/Interpreter.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace brevis {

using jit::appendShapeKey;
using jit::DecodeFn;
using jit::operandLiterals;

namespace {

/// Whether the JIT compiles this operator (given children it compiles).
bool compiles(NodeKind kind) {
  switch (kind) {
  case NodeKind::Lit:
  case NodeKind::Const:
  case NodeKind::Merge: return true;
  case NodeKind::Concat:
  case NodeKind::Repeat:
  case NodeKind::Map:
  case NodeKind::Scan:
  case NodeKind::Hole: return false;
  }
  __builtin_trap(); // not a NodeKind
}

/// The operator kinds of `e` the JIT does not compile.
void collectUnsupported(const Expr &e, std::set<NodeKind> &out) {
  if (!compiles(e.kind)) out.insert(e.kind);
  for (const Expr *c : children(e)) collectUnsupported(*c, out);
}

/// Below this many functions per module, splitting a checkpoint across compile threads costs more
/// than it saves.
constexpr size_t kMinFunctionsPerModule = 16;

} // namespace

struct JitDecoder::Impl {
  Notice notice;
  std::unique_ptr<jit::OrcSession> session;
  Interpreter interpreter;
  /// Compiled functions by shape key (see appendShapeKey).
  std::unordered_map<std::string, DecodeFn> functions;
  std::set<NodeKind> reportedKinds;
  /// Guards functions, reportedKinds and compilation when decodeWords() runs on several threads.
  std::mutex mutex;
  std::atomic<size_t> compiled{0};
  std::atomic<size_t> interpreted{0};
  /// Setting up LLVM's session, and compiling (under `mutex` when decoding).
  std::chrono::steady_clock::duration setupTime{}, compileTime{};

  Result<void> compile(std::vector<jit::OrcSession::Batch> &batches) {
    const auto start = std::chrono::steady_clock::now();
    auto done = session->compile(batches, functions);
    compileTime += std::chrono::steady_clock::now() - start;
    return done;
  }

  void report(NodeKind kind, std::string_view regions) {
    if (!reportedKinds.insert(kind).second || !notice) return;
    notice(fmt::format("note: the JIT does not compile '{}' yet; {} the interpreter", nodeKindName(kind), regions));
  }
};

JitDecoder::JitDecoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JitDecoder::~JitDecoder() = default;

Result<std::unique_ptr<JitDecoder>> JitDecoder::create(Notice notice) {
  const auto start = std::chrono::steady_clock::now();
  auto session = jit::OrcSession::create();
  if (!session) return session.error();
  auto impl = std::make_unique<Impl>();
  impl->setupTime = std::chrono::steady_clock::now() - start;
  impl->notice = std::move(notice);
  impl->session = std::move(*session);
  return std::unique_ptr<JitDecoder>(new JitDecoder(std::move(impl)));
}

bool JitDecoder::supports(const Expr &e) {
  if (!compiles(e.kind)) return false;
  bool all = true;
  forEachChild(e, [&](const Expr &c) { all = all && supports(c); });
  // A merge without fields has nothing to compile (and is ill-typed).
  return all && !(e.kind == NodeKind::Merge && as<Merge>(e).fields.empty());
}

Result<void> JitDecoder::prepare(const Checkpoint &c, const Payload &payload) {
  Impl &impl = *impl_;
  std::map<NodeKind, size_t> fallbacks;
  std::vector<std::pair<std::string, const Expr *>> todo;
  std::unordered_set<std::string> seen;
  for (const Region &region : c.regions) {
    if (!region.program) continue;
    if (!supports(*region.program)) {
      std::set<NodeKind> kinds;
      collectUnsupported(*region.program, kinds);
      for (NodeKind k : kinds) ++fallbacks[k];
      continue;
    }
    std::string key;
    BREVIS_TRY(appendShapeKey(*region.program, payload, key));
    if (impl.functions.count(key) || !seen.insert(key).second) continue;
    todo.emplace_back(std::move(key), region.program.get());
  }
  for (const auto &[kind, count] : fallbacks)
    impl.report(kind, count == 1 ? std::string("1 region uses") : fmt::format("{} regions use", count));

  const size_t modules = std::clamp<size_t>(todo.size() / kMinFunctionsPerModule, 1, impl.session->compileThreads());
  std::vector<jit::OrcSession::Batch> batches;
  for (size_t i = 0; i < modules; ++i) batches.push_back(impl.session->newBatch());
  for (size_t i = 0; i < todo.size(); ++i)
    impl.session->emit(batches[i % modules], std::move(todo[i].first), *todo[i].second, payload);
  return impl.compile(batches);
}

Result<void> JitDecoder::decodeWords(const Region &region, const Payload &payload, uint64_t first, uint64_t count,
                                     ByteSink &sink) {
  Impl &impl = *impl_;
  if (!region.program) return Error{fmt::format("region at byte {} has no program", region.bytes.offset)};
  const Expr &root = *region.program;
  // Generated code starts at multiples of 8 words (DecodeFn); other ranges are rare (pieces of
  // a region start at multiples of 2^24 bytes) and go to the interpreter.
  if (!supports(root) || first % 8 != 0) {
    if (!supports(root)) {
      std::set<NodeKind> kinds;
      collectUnsupported(root, kinds);
      std::lock_guard lock(impl.mutex);
      for (NodeKind k : kinds) impl.report(k, "regions using it run in");
    }
    ++impl.interpreted;
    return impl.interpreter.decodeWords(region, payload, first, count, sink);
  }

  const auto type = jit::typeOf(root);
  if (!type) return type.error();
  const unsigned wordBytes = containerBytes(type->width);
  const uint64_t words = type->length;
  uint64_t bytes;
  if (__builtin_mul_overflow(words, wordBytes, &bytes) || bytes != region.bytes.size)
    return Error{fmt::format("region at byte {} holds {} bytes, but its program produces {} words of {} bytes",
                             region.bytes.offset, region.bytes.size, words, wordBytes)};
  if (first > words || count > words - first)
    return Error{fmt::format("words {}+{} lie outside the region's {} words", first, count, words)};

  std::string key;
  BREVIS_TRY(appendShapeKey(root, payload, key));
  DecodeFn fn;
  {
    std::lock_guard lock(impl.mutex);
    auto it = impl.functions.find(key);
    if (it == impl.functions.end()) {
      std::vector<jit::OrcSession::Batch> batches;
      batches.push_back(impl.session->newBatch());
      impl.session->emit(batches.back(), key, root, payload);
      BREVIS_TRY(impl.compile(batches));
      it = impl.functions.find(key);
    }
    fn = it->second;
  }

  // Raw and bit-packed literals are read in place; entropy-coded ones are decoded chunk by
  // chunk by the runtime's kernels into buffers.
  std::vector<const Lit *> literals;
  operandLiterals(root, literals);
  const uint64_t chunkWords = kChunkBytes / wordBytes;
  static_assert(kChunkBytes % 64 == 0, "chunks must start at multiples of 8 words (DecodeFn)");
  std::vector<uint8_t> chunk(kChunkBytes);
  std::vector<const void *> pointers(literals.size());
  std::vector<std::unique_ptr<LitCursor>> cursors(literals.size());
  // Chunk buffers of 64-bit words, each read as narrow words of its literal's container.
  std::vector<std::vector<uint64_t>> buffers(literals.size());
  for (size_t k = 0; k < literals.size(); ++k) {
    const Lit &l = *literals[k];
    const uint8_t *bytes = payload.data() + l.payload().offset;
    switch (l.encoding) {
    case Encoding::Raw: pointers[k] = bytes; continue;
    case Encoding::Bitpack: pointers[k] = bitpackBody(bytes); continue;
    case Encoding::Huffman:
    case Encoding::Rans:
    case Encoding::RansO1:
    case Encoding::Zstd:
    case Encoding::Context: break;
    }
    auto cursor = LitCursor::open(l, payload);
    if (!cursor) return cursor.error();
    BREVIS_TRY((*cursor)->skip(first));
    cursors[k] = std::move(*cursor);
    buffers[k].resize(chunkWords);
    pointers[k] = buffers[k].data();
  }
  auto fill = [&](size_t k, size_t n) -> Result<void> {
    void *buffer = buffers[k].data();
    switch (containerBytes(literals[k]->type.width)) {
    case 1: return cursors[k]->read8(static_cast<uint8_t *>(buffer), n);
    case 2: return cursors[k]->read16(static_cast<uint16_t *>(buffer), n);
    case 4: return cursors[k]->read32(static_cast<uint32_t *>(buffer), n);
    default: return cursors[k]->read(static_cast<uint64_t *>(buffer), n);
    }
  };
  for (uint64_t done = 0; done < count; done += chunkWords) {
    const uint64_t n = std::min(chunkWords, count - done);
    for (size_t k = 0; k < cursors.size(); ++k)
      if (cursors[k]) BREVIS_TRY(fill(k, n));
    fn(chunk.data(), first + done, n, pointers.data());
    BREVIS_TRY(sink.write(chunk.data(), n * wordBytes));
  }
  ++impl.compiled;
  return {};
}

std::string JitDecoder::summary() const {
  std::lock_guard lock(impl_->mutex);
  auto ms = [](std::chrono::steady_clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  const size_t functions = impl_->functions.size(), compiled = impl_->compiled, interpreted = impl_->interpreted;
  return fmt::format("jit: {} function{} compiled in {:.0f} ms (session set-up {:.0f} ms); {} region piece{} ran "
                     "compiled code, {} the interpreter",
                     functions, functions == 1 ? "" : "s", ms(impl_->compileTime), ms(impl_->setupTime), compiled,
                     compiled == 1 ? "" : "s", interpreted);
}

size_t JitDecoder::compiledRegions() const { return impl_->compiled; }
size_t JitDecoder::interpretedRegions() const { return impl_->interpreted; }
size_t JitDecoder::compiledFunctions() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->functions.size();
}

} // namespace brevis
