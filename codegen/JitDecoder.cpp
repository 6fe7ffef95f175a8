#include "codegen/JitDecoder.h"

#include "runtime/execution/Interpreter.h"
#include "runtime/codecs/LitDecode.h"

#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/IRTransformLayer.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace brevis {

namespace {

/// Produces words [first, first + count) of one region's program, each stored little-endian in
/// containerBytes(W) bytes at out; `first` is a multiple of 8. operands[k] is where the k-th
/// payload literal's words come from (operandLiterals() order): for an entropy-coded literal, a
/// buffer holding its words [first, first + count), decoded by the runtime's kernels, each in
/// containerBytes of that literal's width (a byte for an 8-bit exponent, not eight); for a raw
/// literal, its payload bytes; for a bit-packed one, its payload bytes after the bit count.
/// Addresses are arguments, not constants, so that every region of one shape (a model's layers)
/// shares one compiled function.
using DecodeFn = void (*)(uint8_t *out, uint64_t first, uint64_t count, const void *const *operands);

/// Whether the generated code reads this literal's words from a pre-decoded stream buffer
/// (entropy-coded) rather than straight from the payload.
bool isStreamed(const Lit &l) { return !isRandomAccess(l); }

/// The payload literals (every literal but inline ones) of a supported program, in pre-order:
/// their index is their slot in the generated function's `operands` argument.
void operandLiterals(const Expr &e, std::vector<const Lit *> &out) {
  if (auto *l = dynAs<Lit>(e); l && !l->isInline()) out.push_back(l);
  for (const Expr *c : children(e)) operandLiterals(*c, out);
}

// Bitpack fields wider than 57 bits are read with a 16-byte load starting at any byte of the literal.
static_assert(kPayloadSlack >= 15, "generated bitpack loads read up to 15 bytes past a literal's last byte");

Error toError(llvm::Error e, std::string_view what) {
  return Error{fmt::format("{}: {}", what, llvm::toString(std::move(e)))};
}

/// Width of a supported expression's words.
unsigned widthOf(const Expr &e) {
  switch (e.kind) {
  case NodeKind::Lit: return as<Lit>(e).type.width;
  case NodeKind::Const: return as<Const>(e).type.width;
  case NodeKind::Merge: {
    unsigned w = 0;
    for (const auto &f : as<Merge>(e).fields) w += widthOf(*f.expr);
    return w;
  }
  default: __builtin_trap();
  }
}

/// Length of a supported expression's stream (merge fields all have the first field's length).
uint64_t lengthOf(const Expr &e) {
  switch (e.kind) {
  case NodeKind::Lit: return as<Lit>(e).type.length;
  case NodeKind::Const: return as<Const>(e).type.length;
  case NodeKind::Merge: return lengthOf(*as<Merge>(e).fields.front().expr);
  default: __builtin_trap();
  }
}

/// The operator kinds of `e` the JIT does not compile.
void collectUnsupported(const Expr &e, std::set<NodeKind> &out) {
  if (e.kind != NodeKind::Lit && e.kind != NodeKind::Const && e.kind != NodeKind::Merge) out.insert(e.kind);
  for (const Expr *c : children(e)) collectUnsupported(*c, out);
}

void appendU64(std::string &key, uint64_t v) { key.append(reinterpret_cast<const char *>(&v), sizeof v); }

/// Appends to `key` everything the generated code for `e` depends on: the program's structure and
/// constants, each literal's kind, width and whether it is empty, and the bitpack bit counts
/// read from the payload (not the literals' lengths or offsets: those are arguments). Equal keys
/// mean interchangeable code. Also checks, in O(1) per literal, that every load the code will make stays inside the
/// payload (plus its slack), so that even an unvalidated payload cannot make it read wild memory.
Result<void> appendKey(const Expr &e, const Payload &payload, std::string &key) {
  switch (e.kind) {
  case NodeKind::Const: {
    const auto &c = as<Const>(e);
    if (c.type.width < 1 || c.type.width > kMaxWordWidth)
      return Error{fmt::format("constant width {} is not 1..64", c.type.width)};
    key += 'C';
    appendU64(key, c.type.width);
    appendU64(key, c.value & widthMask(c.type.width));
    return {};
  }
  case NodeKind::Merge: {
    const auto &m = as<Merge>(e);
    // The loop runs over the first field's length and shifts by the widths: both must be sound
    // for the loads to stay inside every field's literal.
    if (m.fields.empty()) return Error{"merge has no fields"};
    for (const auto &f : m.fields)
      if (lengthOf(*f.expr) != lengthOf(*m.fields.front().expr)) return Error{"merge fields differ in length"};
    if (widthOf(e) > kMaxWordWidth) return Error{"merge fields are wider than 64 bits in total"};
    key += 'M';
    appendU64(key, m.fields.size());
    for (const auto &f : m.fields) BREVIS_TRY(appendKey(*f.expr, payload, key));
    return {};
  }
  case NodeKind::Lit: break;
  default: __builtin_trap();
  }

  const auto &l = as<Lit>(e);
  const unsigned width = l.type.width;
  const uint64_t n = l.type.length;
  if (width < 1 || width > kMaxWordWidth) return Error{fmt::format("literal width {} is not 1..64", width)};
  if (l.isInline()) {
    if (l.words().size() != n) return Error{"inline literal word count does not match its type"};
    key += 'I';
    appendU64(key, width);
    appendU64(key, n);
    for (uint64_t w : l.words()) appendU64(key, w & widthMask(width));
    return {};
  }
  const ByteRange &r = l.payload();
  if (!payload.contains(r))
    return Error{fmt::format("literal range @{}+{} lies outside the payload of {} bytes", r.offset, r.size,
                             payload.size())};
  if (isStreamed(l)) {
    // Read from a buffer the runtime fills: the code depends only on the word width.
    key += 'E';
    appendU64(key, width);
    key += n == 0 ? '0' : '+';
    return {};
  }
  if (l.encoding == Encoding::Raw) {
    if (r.size / containerBytes(width) != n || r.size % containerBytes(width) != 0)
      return Error{fmt::format("raw literal {} does not match its range @{}+{}", toString(l.type), r.offset, r.size)};
    key += 'R';
    appendU64(key, width);
    key += n == 0 ? '0' : '+';
    return {};
  }
  if (r.size < 1) return Error{fmt::format("bitpack literal at @{} has no bit count byte", r.offset)};
  const unsigned b = payload.data()[r.offset];
  if (b > width)
    return Error{fmt::format("bitpack literal at @{} packs {} bits, more than its {}-bit words", r.offset, b, width)};
  if (bitpackPayloadSize(n, b) > r.size)
    return Error{fmt::format("bitpack literal at @{} holds {} bytes, too few for {} words of {} bits", r.offset,
                             r.size - 1, n, b)};
  key += 'B';
  appendU64(key, width);
  key += n == 0 ? '0' : '+';
  appendU64(key, b);
  return {};
}

/// Emits one decode function per program into a module. Every value is computed in the integer
/// type of the root's container, which all fields fit (a field is never wider than the root).
class FunctionEmitter {
public:
  FunctionEmitter(llvm::Module &module, const Payload &payload)
      : module_(module), ctx_(module.getContext()), b_(ctx_), payload_(payload),
        bigEndian_(module.getDataLayout().isBigEndian()) {}

  void emit(const std::string &name, const Expr &root, llvm::StringRef cpu, llvm::StringRef features) {
    auto *ptrTy = llvm::PointerType::getUnqual(ctx_);
    auto *i64 = b_.getInt64Ty();
    auto *fnTy = llvm::FunctionType::get(b_.getVoidTy(), {ptrTy, i64, i64, ptrTy}, false);
    auto *fn = llvm::Function::Create(fnTy, llvm::Function::ExternalLinkage, name, module_);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->addFnAttr(llvm::Attribute::NoFree);
    fn->addFnAttr(llvm::Attribute::NoSync);
    fn->addFnAttr(llvm::Attribute::WillReturn);
    if (!cpu.empty()) fn->addFnAttr("target-cpu", cpu);
    if (!features.empty()) fn->addFnAttr("target-features", features);
    // The output chunk overlaps no operand (the payload, the runtime's stream buffers); saying
    // so spares the vectorizer its run-time overlap checks.
    fn->addParamAttr(0, llvm::Attribute::NoAlias);
    fn->addParamAttr(0, llvm::Attribute::NoCapture);
    fn->addParamAttr(0, llvm::Attribute::WriteOnly);
    fn->addParamAttr(3, llvm::Attribute::ReadOnly);
    fn->addParamAttr(3, llvm::Attribute::NoCapture);

    llvm::Value *out = fn->getArg(0);
    llvm::Value *first = fn->getArg(1);
    llvm::Value *count = fn->getArg(2);
    out->setName("out");
    first->setName("first");
    count->setName("count");
    llvm::Value *operands = fn->getArg(3);
    operands->setName("operands");
    std::vector<const Lit *> literals;
    operandLiterals(root, literals);

    auto *entry = llvm::BasicBlock::Create(ctx_, "entry", fn);
    auto *groupLoop = llvm::BasicBlock::Create(ctx_, "groups", fn);
    auto *tailCheck = llvm::BasicBlock::Create(ctx_, "tailcheck", fn);
    auto *loop = llvm::BasicBlock::Create(ctx_, "loop", fn);
    auto *exit = llvm::BasicBlock::Create(ctx_, "exit", fn);

    b_.SetInsertPoint(entry);
    // Operand addresses are loop-invariant: load them once. Every operand is only read, and
    // none overlaps the output.
    base_.clear();
    for (size_t k = 0; k < literals.size(); ++k) {
      llvm::Value *slot = b_.CreateInBoundsGEP(ptrTy, operands, b_.getInt64(k));
      auto *base = b_.CreateAlignedLoad(ptrTy, slot, llvm::MaybeAlign(8), "operand");
      base->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(ctx_, {}));
      base_[literals[k]] = base;
    }
    auto *rootTy = b_.getIntNTy(8 * containerBytes(widthOf(root)));
    llvm::Value *groups = b_.CreateLShr(count, 3, "groups");
    b_.CreateCondBr(b_.CreateICmpEQ(groups, b_.getInt64(0)), tailCheck, groupLoop);

    // Groups of 8 words, unrolled: word j of group m is at index 8m + j (first is a multiple of
    // 8), so a bit-packed field's byte offsets and shifts within the group are constants and
    // one group's 8 words come from b consecutive bytes rather than 8 data-dependent loads.
    b_.SetInsertPoint(groupLoop);
    auto *g = b_.CreatePHI(i64, 2, "g");
    g->addIncoming(b_.getInt64(0), entry);
    llvm::Value *m = b_.CreateAdd(b_.CreateLShr(first, 3), g, "m", /*HasNUW=*/true);
    for (unsigned j = 0; j < 8; ++j) {
      llvm::Value *ij = b_.CreateAdd(b_.CreateShl(g, 3, "", /*HasNUW=*/true), b_.getInt64(j), "", /*HasNUW=*/true);
      chunkIndex_ = ij;
      group_ = m;
      lane_ = static_cast<int>(j);
      llvm::Value *w = value(root, b_.CreateAdd(first, ij, "", /*HasNUW=*/true), rootTy);
      storeLE(w, b_.CreateInBoundsGEP(rootTy, out, ij));
    }
    lane_ = -1;
    llvm::Value *gNext = b_.CreateAdd(g, b_.getInt64(1), "gnext", /*HasNUW=*/true);
    g->addIncoming(gNext, groupLoop);
    b_.CreateCondBr(b_.CreateICmpEQ(gNext, groups), tailCheck, groupLoop);

    // The last count % 8 words, one at a time.
    b_.SetInsertPoint(tailCheck);
    llvm::Value *start = b_.CreateShl(groups, 3, "start", /*HasNUW=*/true);
    b_.CreateCondBr(b_.CreateICmpEQ(start, count), exit, loop);

    b_.SetInsertPoint(loop);
    auto *i = b_.CreatePHI(i64, 2, "i");
    i->addIncoming(start, tailCheck);
    llvm::Value *index = b_.CreateAdd(first, i, "index", /*HasNUW=*/true);
    chunkIndex_ = i;
    llvm::Value *word = value(root, index, rootTy);
    storeLE(word, b_.CreateInBoundsGEP(rootTy, out, i));
    llvm::Value *next = b_.CreateAdd(i, b_.getInt64(1), "next", /*HasNUW=*/true);
    i->addIncoming(next, loop);
    b_.CreateCondBr(b_.CreateICmpEQ(next, count), exit, loop);

    b_.SetInsertPoint(exit);
    b_.CreateRetVoid();
  }

private:
  /// Word `index` of `e`, as type `ty`.
  llvm::Value *value(const Expr &e, llvm::Value *index, llvm::IntegerType *ty) {
    switch (e.kind) {
    case NodeKind::Const: {
      const auto &c = as<Const>(e);
      return llvm::ConstantInt::get(ty, c.value & widthMask(c.type.width));
    }
    case NodeKind::Merge: {
      // Most significant first: the last field sits at bit 0.
      const auto &fields = as<Merge>(e).fields;
      llvm::Value *acc = nullptr;
      unsigned shift = 0;
      for (auto it = fields.rbegin(); it != fields.rend(); ++it) {
        llvm::Value *v = value(*it->expr, index, ty);
        if (shift > 0) v = b_.CreateShl(v, shift, "", /*HasNUW=*/true);
        acc = acc ? b_.CreateOr(acc, v) : v;
        shift += widthOf(*it->expr);
      }
      return acc;
    }
    case NodeKind::Lit: return litValue(as<Lit>(e), index, ty);
    default: __builtin_trap();
    }
  }

  llvm::Value *litValue(const Lit &l, llvm::Value *index, llvm::IntegerType *ty) {
    const unsigned width = l.type.width;
    // An empty stream's words are never asked for.
    if (l.type.length == 0) return llvm::ConstantInt::get(ty, 0);
    if (l.isInline()) {
      auto *elemTy = b_.getIntNTy(8 * containerBytes(width));
      std::vector<llvm::Constant *> words;
      words.reserve(l.words().size());
      for (uint64_t w : l.words()) words.push_back(llvm::ConstantInt::get(elemTy, w & widthMask(width)));
      auto *arrayTy = llvm::ArrayType::get(elemTy, words.size());
      auto *table = new llvm::GlobalVariable(module_, arrayTy, /*isConstant=*/true, llvm::GlobalValue::PrivateLinkage,
                                             llvm::ConstantArray::get(arrayTy, words), "inline");
      table->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
      llvm::Value *p = b_.CreateInBoundsGEP(arrayTy, table, {b_.getInt64(0), index});
      return b_.CreateZExtOrTrunc(b_.CreateLoad(elemTy, p), ty);
    }

    if (isStreamed(l)) {
      // Pre-decoded by the runtime: word `index` is element index - first of the chunk buffer.
      const unsigned cb = containerBytes(width);
      auto *elemTy = b_.getIntNTy(8 * cb);
      llvm::Value *p = b_.CreateInBoundsGEP(elemTy, base_.at(&l), chunkIndex_);
      return b_.CreateZExtOrTrunc(b_.CreateAlignedLoad(elemTy, p, llvm::MaybeAlign(cb)), ty);
    }
    const ByteRange &r = l.payload();
    if (l.encoding == Encoding::Raw) {
      auto *elemTy = b_.getIntNTy(8 * containerBytes(width));
      return b_.CreateZExtOrTrunc(loadLE(elemTy, b_.CreateInBoundsGEP(elemTy, base_.at(&l), index)), ty);
    }

    // Bitpack: the bit count is specialized; appendKey() has checked it against the width.
    const unsigned bits = payload_.data()[r.offset];
    if (bits == 0) return llvm::ConstantInt::get(ty, 0);
    llvm::Value *base = base_.at(&l); // after the bit count byte
    if (bits % 8 == 0 && (bits & (bits - 1)) == 0) {
      // Whole aligned words: a plain strided load the vectorizer handles like raw.
      auto *elemTy = b_.getIntNTy(bits);
      return b_.CreateZExtOrTrunc(loadLE(elemTy, b_.CreateInBoundsGEP(elemTy, base, index)), ty);
    }
    if (lane_ >= 0) {
      // Word 8m + j starts at bit 8mb + jb. The group's 8 words are the 8b bits from byte m*b: for
      // b <= 16 one load of the whole group (the same address in all 8 lanes, so LLVM loads it
      // once) and a constant shift per lane; wider fields load from byte m*b + (jb >> 3).
      const unsigned laneBit = static_cast<unsigned>(lane_) * bits;
      llvm::Value *groupByte = b_.CreateMul(group_, b_.getInt64(bits), "", /*HasNUW=*/true);
      llvm::Value *v;
      if (8 * bits <= 128) {
        auto *loadTy = 8 * bits <= 64 ? b_.getInt64Ty() : b_.getInt128Ty();
        v = loadLE(loadTy, b_.CreateInBoundsGEP(b_.getInt8Ty(), base, groupByte));
        if (laneBit) v = b_.CreateLShr(v, laneBit);
      } else {
        llvm::Value *byte = b_.CreateAdd(groupByte, b_.getInt64(laneBit >> 3), "", /*HasNUW=*/true);
        auto *loadTy = bits <= 57 ? b_.getInt64Ty() : b_.getInt128Ty();
        v = loadLE(loadTy, b_.CreateInBoundsGEP(b_.getInt8Ty(), base, byte));
        if (laneBit & 7) v = b_.CreateLShr(v, laneBit & 7);
      }
      v = b_.CreateTrunc(v, b_.getIntNTy(bits));
      return b_.CreateZExtOrTrunc(v, ty);
    }
    // Word i occupies bits [i*b, i*b+b): load the containing bytes from the byte holding bit i*b
    // and shift. A 64-bit load covers b + 7 bits for b <= 57; wider fields need 128 bits. Both
    // loads start at a byte inside the literal, so the payload slack keeps them in bounds.
    llvm::Value *bitPos = b_.CreateMul(index, b_.getInt64(bits), "bitpos", /*HasNUW=*/true);
    llvm::Value *byte = b_.CreateLShr(bitPos, 3);
    llvm::Value *p = b_.CreateInBoundsGEP(b_.getInt8Ty(), base, byte);
    auto *loadTy = bits <= 57 ? b_.getInt64Ty() : b_.getInt128Ty();
    llvm::Value *shift = b_.CreateZExt(b_.CreateAnd(bitPos, b_.getInt64(7)), loadTy);
    llvm::Value *v = b_.CreateLShr(loadLE(loadTy, p), shift);
    v = b_.CreateTrunc(v, b_.getIntNTy(bits));
    return b_.CreateZExtOrTrunc(v, ty);
  }

  /// Unaligned little-endian load; the payload is little-endian whatever the host.
  llvm::Value *loadLE(llvm::Type *ty, llvm::Value *p) {
    auto *load = b_.CreateAlignedLoad(ty, p, llvm::MaybeAlign(1));
    if (!bigEndian_ || ty->getIntegerBitWidth() == 8) return load;
    return b_.CreateUnaryIntrinsic(llvm::Intrinsic::bswap, load);
  }

  void storeLE(llvm::Value *v, llvm::Value *p) {
    if (bigEndian_ && v->getType()->getIntegerBitWidth() > 8) v = b_.CreateUnaryIntrinsic(llvm::Intrinsic::bswap, v);
    b_.CreateAlignedStore(v, p, llvm::MaybeAlign(1));
  }

  llvm::Module &module_;
  llvm::LLVMContext &ctx_;
  llvm::IRBuilder<> b_;
  const Payload &payload_;
  bool bigEndian_;
  std::unordered_map<const Lit *, llvm::Value *> base_; ///< where each payload literal's words are read
  llvm::Value *chunkIndex_ = nullptr;                          ///< the loop counter: index - first
  llvm::Value *group_ = nullptr; ///< in the unrolled loop: the group m, words 8m .. 8m + 7
  int lane_ = -1;                ///< in the unrolled loop: the word's lane j in its group; else -1
};

/// Runs LLVM's O2 pipeline, vectorizers included, tuned for `tm`'s CPU.
void optimize(llvm::Module &module, llvm::TargetMachine &tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder pb(&tm, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2).run(module, mam);
}

void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

/// Below this many functions per module, splitting a checkpoint across compile threads costs more
/// than it saves.
constexpr size_t kMinFunctionsPerModule = 16;

} // namespace

struct JitDecoder::Impl {
  Notice notice;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::string cpu, features; ///< the host's, stamped on every function for the optimizer
  unsigned compileThreads = 1;
  Interpreter interpreter;
  /// Compiled functions by specialization key (see appendKey).
  std::unordered_map<std::string, DecodeFn> functions;
  std::set<NodeKind> reportedKinds;
  /// Guards functions, reportedKinds and compilation when decodeWords() runs on several threads.
  std::mutex mutex;
  size_t nextFunction = 0;
  std::atomic<size_t> compiled{0};
  std::atomic<size_t> interpreted{0};

  /// A module in the making and the functions emitted into it (key, symbol name).
  struct Batch {
    std::unique_ptr<llvm::LLVMContext> ctx;
    std::unique_ptr<llvm::Module> module;
    std::vector<std::pair<std::string, std::string>> functions;
  };

  Batch newBatch() {
    Batch batch;
    batch.ctx = std::make_unique<llvm::LLVMContext>();
    batch.module = std::make_unique<llvm::Module>("brevis", *batch.ctx);
    batch.module->setDataLayout(jit->getDataLayout());
    batch.module->setTargetTriple(jit->getTargetTriple().str());
    return batch;
  }

  void emit(Batch &batch, std::string key, const Expr &root, const Payload &payload) {
    std::string name = fmt::format("brevis_decode_{}", nextFunction++);
    FunctionEmitter(*batch.module, payload).emit(name, root, cpu, features);
    batch.functions.emplace_back(std::move(key), std::move(name));
  }

  /// Hands the modules to the JIT and compiles them, concurrently when there are several, then
  /// records their functions. Optimization runs in the JIT's IR transform layer, on the compile
  /// threads.
  Result<void> compile(std::vector<Batch> &batches) {
    llvm::orc::SymbolLookupSet symbols;
    std::vector<std::pair<std::string, llvm::orc::SymbolStringPtr>> wanted;
    for (Batch &batch : batches) {
      if (batch.functions.empty()) continue;
      std::string problems;
      llvm::raw_string_ostream os(problems);
      if (llvm::verifyModule(*batch.module, &os)) return Error{"the JIT generated invalid code: " + os.str()};
      for (auto &[key, name] : batch.functions) {
        auto symbol = jit->mangleAndIntern(name);
        symbols.add(symbol);
        wanted.emplace_back(std::move(key), std::move(symbol));
      }
      batch.functions.clear();
      if (auto err = jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(batch.module), std::move(batch.ctx))))
        return toError(std::move(err), "the JIT could not add a module");
    }
    if (wanted.empty()) return {};
    // One lookup of every symbol: the session materializes all the modules at once, each a task
    // for the compile threads.
    auto &session = jit->getExecutionSession();
    auto found = session.lookup(llvm::orc::makeJITDylibSearchOrder(&jit->getMainJITDylib()), std::move(symbols));
    if (!found) return toError(found.takeError(), "the JIT could not compile the decoders");
    for (auto &[key, symbol] : wanted) {
      auto it = found->find(symbol);
      if (it == found->end()) return Error{fmt::format("the JIT lost the decoder {}", *symbol)};
      functions.emplace(std::move(key), it->second.getAddress().toPtr<DecodeFn>());
    }
    return {};
  }

  void report(NodeKind kind, std::string_view regions) {
    if (!reportedKinds.insert(kind).second || !notice) return;
    notice(fmt::format("note: the JIT does not compile '{}' yet; {} the interpreter", nodeKindName(kind), regions));
  }
};

JitDecoder::JitDecoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JitDecoder::~JitDecoder() = default;

Result<std::unique_ptr<JitDecoder>> JitDecoder::create(Notice notice) {
  initializeNativeTarget();
  auto impl = std::make_unique<Impl>();
  impl->notice = std::move(notice);

  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return toError(jtmb.takeError(), "the JIT cannot target this CPU");
  {
    auto tm = jtmb->createTargetMachine();
    if (!tm) return toError(tm.takeError(), "the JIT cannot target this CPU");
    impl->cpu = (*tm)->getTargetCPU().str();
    impl->features = (*tm)->getTargetFeatureString().str();
  }
  impl->compileThreads = std::max(1u, std::thread::hardware_concurrency());
  llvm::orc::LLJITBuilder builder;
  builder.setJITTargetMachineBuilder(*jtmb);
  if (impl->compileThreads > 1) builder.setNumCompileThreads(impl->compileThreads);
  auto jit = builder.create();
  if (!jit) return toError(jit.takeError(), "the JIT could not start");
  impl->jit = std::move(*jit);

  // Each compile thread optimizes with its own TargetMachine: they are not shareable across threads.
  impl->jit->getIRTransformLayer().setTransform(
      [jtmb = *jtmb](llvm::orc::ThreadSafeModule tsm,
                     llvm::orc::MaterializationResponsibility &) -> llvm::Expected<llvm::orc::ThreadSafeModule> {
        auto builder = jtmb;
        auto tm = builder.createTargetMachine();
        if (!tm) return tm.takeError();
        tsm.withModuleDo([&](llvm::Module &m) { optimize(m, **tm); });
        return tsm;
      });
  return std::unique_ptr<JitDecoder>(new JitDecoder(std::move(impl)));
}

bool JitDecoder::supports(const Expr &e) {
  switch (e.kind) {
  case NodeKind::Lit:
  case NodeKind::Const: return true;
  case NodeKind::Merge: {
    const auto &fields = as<Merge>(e).fields;
    return !fields.empty() && std::all_of(fields.begin(), fields.end(), [](const MergeField &f) {
      return f.expr && supports(*f.expr);
    });
  }
  default: return false;
  }
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
    BREVIS_TRY(appendKey(*region.program, payload, key));
    if (impl.functions.count(key) || !seen.insert(key).second) continue;
    todo.emplace_back(std::move(key), region.program.get());
  }
  for (const auto &[kind, count] : fallbacks)
    impl.report(kind, count == 1 ? std::string("1 region uses") : fmt::format("{} regions use", count));

  const size_t modules = std::clamp<size_t>(todo.size() / kMinFunctionsPerModule, 1, impl.compileThreads);
  std::vector<Impl::Batch> batches;
  for (size_t i = 0; i < modules; ++i) batches.push_back(impl.newBatch());
  for (size_t i = 0; i < todo.size(); ++i)
    impl.emit(batches[i % modules], std::move(todo[i].first), *todo[i].second, payload);
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

  const unsigned wordBytes = containerBytes(widthOf(root));
  const uint64_t words = lengthOf(root);
  uint64_t bytes;
  if (__builtin_mul_overflow(words, wordBytes, &bytes) || bytes != region.bytes.size)
    return Error{fmt::format("region at byte {} holds {} bytes, but its program produces {} words of {} bytes",
                             region.bytes.offset, region.bytes.size, words, wordBytes)};
  if (first > words || count > words - first)
    return Error{fmt::format("words {}+{} lie outside the region's {} words", first, count, words)};

  std::string key;
  BREVIS_TRY(appendKey(root, payload, key));
  DecodeFn fn;
  {
    std::lock_guard lock(impl.mutex);
    auto it = impl.functions.find(key);
    if (it == impl.functions.end()) {
      std::vector<Impl::Batch> batches;
      batches.push_back(impl.newBatch());
      impl.emit(batches.back(), key, root, payload);
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
    if (!isStreamed(l)) {
      pointers[k] = payload.data() + l.payload().offset + (l.encoding == Encoding::Bitpack ? 1 : 0);
      continue;
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

size_t JitDecoder::compiledRegions() const { return impl_->compiled; }
size_t JitDecoder::interpretedRegions() const { return impl_->interpreted; }
size_t JitDecoder::compiledFunctions() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->functions.size();
}

} // namespace brevis
