#include "codegen/DecodeFunctionEmitter.h"

#include "codegen/ShapeKey.h"
#include "lang/BitpackFormat.h"
#include "lang/MergeLayout.h"
#include "lang/OperatorTyping.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace brevis::jit {

namespace {

/// Scratch buffers start at multiples of a cache line.
constexpr uint64_t kScratchAlign = 64;

/// Whether `e` belongs in a fused loop (docs/jit.md): its word i is computed from word i of its
/// children, or, for a literal, located directly in the payload.
bool isFused(const Expr &e, const Payload &payload) {
  switch (e.kind) {
  case NodeKind::Const:
  case NodeKind::Merge:
  case NodeKind::Map: return true;
  case NodeKind::Lit: return !readsThroughCursor(as<Lit>(e), payload);
  case NodeKind::Concat:
  case NodeKind::Repeat:
  case NodeKind::Scan:
  case NodeKind::Hole: return false;
  }
  __builtin_trap(); // not a NodeKind
}

/// The readers a fused subtree rooted at `e` reads from: its maximal descendants that are not
/// fused, reached through fused nodes only.
void collectLeaves(const Expr &e, const Payload &payload, std::vector<const Expr *> &out) {
  for (const Expr *c : children(e)) {
    if (isFused(*c, payload))
      collectLeaves(*c, payload, out);
    else
      out.push_back(c);
  }
}

/// Emits the readers of one program and its entry function into a module. Values inside a
/// fused loop are computed in the integer type of the loop's root container, which all its
/// fields fit (a field is never wider than its merge).
class FunctionEmitter {
public:
  FunctionEmitter(llvm::Module &module, const Payload &payload, uint64_t maxWords, llvm::StringRef cpu,
                  llvm::StringRef features)
      : module_(module), ctx_(module.getContext()), b_(ctx_), payload_(payload), maxWords_(maxWords), cpu_(cpu),
        features_(features), bigEndian_(module.getDataLayout().isBigEndian()) {}

  FrameLayout emit(const std::string &name, const Expr &root) {
    name_ = name;
    std::vector<const Lit *> literals;
    operandLiterals(root, literals);
    for (size_t k = 0; k < literals.size(); ++k)
      operandIndex_[literals[k]] = static_cast<unsigned>(k);
    callbacksIndex_ = static_cast<unsigned>(literals.size());

    const Readers readers = readersOf(root);

    auto *fnTy = llvm::FunctionType::get(b_.getVoidTy(), {ptrTy(), i64(), i64(), ptrTy(), ptrTy(), ptrTy()}, false);
    auto *fn = llvm::Function::Create(fnTy, llvm::Function::ExternalLinkage, name, module_);
    stamp(fn);
    fn->addFnAttr(llvm::Attribute::NoFree);
    fn->addFnAttr(llvm::Attribute::WillReturn);
    // The output, the state and the scratch are three separate buffers, and none overlaps an
    // operand (the payload, the runtime's streams); saying so spares the vectorizer its
    // run-time overlap checks once the readers are inlined.
    for (unsigned arg : {0u, 4u, 5u}) {
      fn->addParamAttr(arg, llvm::Attribute::NoAlias);
      fn->addParamAttr(arg, llvm::Attribute::NoCapture);
    }
    fn->addParamAttr(3, llvm::Attribute::ReadOnly);
    fn->addParamAttr(3, llvm::Attribute::NoCapture);
    llvm::Value *out = fn->getArg(0);
    llvm::Value *skip = fn->getArg(1);
    llvm::Value *count = fn->getArg(2);
    out->setName("out");
    skip->setName("skip");
    count->setName("count");
    env_ = {fn->getArg(3), fn->getArg(4), fn->getArg(5)};
    env_.operands->setName("operands");
    env_.state->setName("state");
    env_.scratch->setName("scratch");

    auto *entry = block("entry", fn);
    auto *skipping = block("skip", fn);
    auto *reading = block("read", fn);
    b_.SetInsertPoint(entry);
    b_.CreateCondBr(b_.CreateICmpEQ(skip, i64c(0)), reading, skipping);
    b_.SetInsertPoint(skipping);
    callSkip(readers, skip);
    b_.CreateBr(reading);
    b_.SetInsertPoint(reading);
    callRead(readers, out, count, /*inlined=*/true);
    const unsigned cb = containerBytes(type(root).width);
    if (bigEndian_ && cb > 1) {
      // Readers keep words in the host's order; the output is little-endian.
      auto *ty = intTy(cb);
      countedLoop(i64c(0), count, [&](llvm::Value *i) {
        llvm::Value *p = b_.CreateInBoundsGEP(ty, out, i);
        llvm::Value *w = b_.CreateAlignedLoad(ty, p, llvm::MaybeAlign(1));
        b_.CreateAlignedStore(b_.CreateUnaryIntrinsic(llvm::Intrinsic::bswap, w), p, llvm::MaybeAlign(1));
      });
    }
    b_.CreateRetVoid();
    return FrameLayout{stateSlots_, scratchBytes_};
  }

private:
  /// A node's three operations (docs/jit.md): read(out, n), skip(n), reset(); each also takes
  /// the entry's operands, state and scratch.
  struct Readers {
    llvm::Function *read = nullptr, *skip = nullptr, *reset = nullptr;
    bool stream = false; ///< a cursor's: a call into the runtime, inlined where it is read
  };
  /// The current function's operands, state and scratch.
  struct Env {
    llvm::Value *operands = nullptr, *state = nullptr, *scratch = nullptr;
  };

  // --- Types, constants, blocks --------------------------------------------------------------

  /// The stream type of a node of the program, each derived once.
  StreamType type(const Expr &e) {
    if (auto it = types_.find(&e); it != types_.end()) return it->second;
    std::vector<StreamType> childTypes;
    forEachChild(e, [&](const Expr &c) { childTypes.push_back(type(c)); });
    return types_[&e] = checkedOperatorType(e, childTypes);
  }

  llvm::PointerType *ptrTy() { return llvm::PointerType::getUnqual(ctx_); }
  llvm::IntegerType *i64() { return b_.getInt64Ty(); }
  llvm::IntegerType *intTy(unsigned bytes) { return b_.getIntNTy(8 * bytes); }
  llvm::ConstantInt *i64c(uint64_t v) { return b_.getInt64(v); }
  llvm::BasicBlock *block(const char *name, llvm::Function *fn) { return llvm::BasicBlock::Create(ctx_, name, fn); }
  llvm::Function *currentFunction() { return b_.GetInsertBlock()->getParent(); }

  /// The attributes every generated function carries; internal readers need the entry's CPU and
  /// features to be inlined into it.
  void stamp(llvm::Function *fn) {
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->addFnAttr(llvm::Attribute::NoSync);
    if (!cpu_.empty()) fn->addFnAttr("target-cpu", cpu_);
    if (!features_.empty()) fn->addFnAttr("target-features", features_);
  }

  Readers declare(const char *what) {
    const std::string base = name_ + "." + what + std::to_string(readerCount_++);
    auto *vd = b_.getVoidTy();
    auto make = [&](const std::string &suffix, std::vector<llvm::Type *> extra) {
      std::vector<llvm::Type *> params = {ptrTy(), ptrTy(), ptrTy()};
      params.insert(params.end(), extra.begin(), extra.end());
      auto *fn = llvm::Function::Create(llvm::FunctionType::get(vd, params, false), llvm::Function::InternalLinkage,
                                        base + suffix, module_);
      stamp(fn);
      return fn;
    };
    return Readers{make(".read", {ptrTy(), i64()}), make(".skip", {i64()}), make(".reset", {})};
  }

  /// Starts the body of a reader function: its entry block, and its environment.
  void begin(llvm::Function *fn) {
    b_.SetInsertPoint(block("entry", fn));
    env_ = {fn->getArg(0), fn->getArg(1), fn->getArg(2)};
  }

  // Compile time must grow with the program, not faster: every reader is a function of its
  // own, called once a chunk (a few nanoseconds against microseconds of work), so that the
  // optimizer never sees nested loops of the whole program in one function (a scan nested 50
  // deep took 20 s to compile inlined). Only the runtime's cursor calls are inlined, and the
  // entry point's read of the root.
  void callRead(const Readers &r, llvm::Value *out, llvm::Value *n, bool inlined = false) {
    auto *call = b_.CreateCall(r.read, {env_.operands, env_.state, env_.scratch, out, n});
    if (!inlined && !r.stream) call->setIsNoInline();
  }
  void callSkip(const Readers &r, llvm::Value *n) {
    b_.CreateCall(r.skip, {env_.operands, env_.state, env_.scratch, n})->setIsNoInline();
  }
  void callReset(const Readers &r) {
    b_.CreateCall(r.reset, {env_.operands, env_.state, env_.scratch})->setIsNoInline();
  }

  // --- State and scratch ---------------------------------------------------------------------

  unsigned newSlot() { return static_cast<unsigned>(stateSlots_++); }
  llvm::Value *slotAddress(unsigned slot) { return b_.CreateInBoundsGEP(i64(), env_.state, i64c(slot)); }
  llvm::Value *loadSlot(unsigned slot, const char *name) {
    return b_.CreateAlignedLoad(i64(), slotAddress(slot), llvm::MaybeAlign(8), name);
  }
  void storeSlot(unsigned slot, llvm::Value *v) { b_.CreateAlignedStore(v, slotAddress(slot), llvm::MaybeAlign(8)); }

  /// Reserves `bytes` of scratch; returns its offset.
  uint64_t newScratch(uint64_t bytes) {
    const uint64_t offset = scratchBytes_;
    scratchBytes_ += (bytes + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
    return offset;
  }
  llvm::Value *scratchAt(uint64_t offset) { return b_.CreateInBoundsGEP(b_.getInt8Ty(), env_.scratch, i64c(offset)); }

  /// The k-th operand pointer, loaded in the current function; operands never change.
  llvm::Value *operand(unsigned k, const char *name) {
    llvm::Value *slot = b_.CreateInBoundsGEP(ptrTy(), env_.operands, i64c(k));
    auto *load = b_.CreateAlignedLoad(ptrTy(), slot, llvm::MaybeAlign(8), name);
    load->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(ctx_, {}));
    return load;
  }

  // --- Loops ---------------------------------------------------------------------------------

  /// for (i = start; i < end; ++i) body(i), unsigned; `body` may add blocks.
  void countedLoop(llvm::Value *start, llvm::Value *end, const std::function<void(llvm::Value *)> &body) {
    llvm::Function *fn = currentFunction();
    llvm::BasicBlock *before = b_.GetInsertBlock();
    auto *loop = block("loop", fn);
    auto *exit = block("loop.exit", fn);
    b_.CreateCondBr(b_.CreateICmpULT(start, end), loop, exit);
    b_.SetInsertPoint(loop);
    auto *i = b_.CreatePHI(i64(), 2, "i");
    i->addIncoming(start, before);
    body(i);
    llvm::Value *next = b_.CreateAdd(i, i64c(1), "i.next", /*HasNUW=*/true);
    i->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpEQ(next, end), exit, loop);
    b_.SetInsertPoint(exit);
  }

  // --- Readers -------------------------------------------------------------------------------

  Readers readersOf(const Expr &e) {
    if (isFused(e, payload_)) return fusedReaders(e);
    switch (e.kind) {
    case NodeKind::Lit: return streamReaders(as<Lit>(e));
    case NodeKind::Concat: return concatReaders(as<Concat>(e));
    case NodeKind::Repeat: return repeatReaders(as<Repeat>(e));
    case NodeKind::Scan: return scanReaders(as<Scan>(e));
    case NodeKind::Const:
    case NodeKind::Merge:
    case NodeKind::Map:
    case NodeKind::Hole: break;
    }
    __builtin_trap(); // fused, or rejected by appendShapeKey (holes)
  }

  /// Readers of a stream of no words (a concat's empty parts), made once per module.
  Readers emptyReaders() {
    if (empty_.read) return empty_;
    empty_ = declare("empty");
    for (llvm::Function *fn : {empty_.read, empty_.skip, empty_.reset}) {
      begin(fn);
      b_.CreateRetVoid();
    }
    return empty_;
  }

  /// A literal a cursor decodes: the runtime's callbacks on its stream handle.
  Readers streamReaders(const Lit &l) {
    Readers r = declare("stream");
    r.stream = true;
    const unsigned k = operandIndex_.at(&l);
    auto callback = [&](unsigned which, std::vector<llvm::Type *> params, std::vector<llvm::Value *> args) {
      llvm::Value *stream = operand(k, "stream");
      llvm::Value *fn = operand(callbacksIndex_ + which, "callback");
      params.insert(params.begin(), ptrTy());
      args.insert(args.begin(), stream);
      b_.CreateCall(llvm::FunctionType::get(b_.getVoidTy(), params, false), fn, args);
      b_.CreateRetVoid();
    };
    begin(r.read);
    callback(0, {ptrTy(), i64()}, {r.read->getArg(3), r.read->getArg(4)});
    begin(r.skip);
    callback(1, {i64()}, {r.skip->getArg(3)});
    begin(r.reset);
    callback(2, {}, {});
    return r;
  }

  /// A fused subtree: its leaves read into scratch, then one loop over the words.
  Readers fusedReaders(const Expr &e) {
    std::vector<const Expr *> leaves;
    collectLeaves(e, payload_, leaves);
    std::vector<Readers> leafReaders;
    std::vector<uint64_t> leafScratch;
    for (const Expr *leaf : leaves) {
      leafReaders.push_back(readersOf(*leaf));
      leafScratch.push_back(newScratch(maxWords_ * containerBytes(type(*leaf).width)));
    }
    const unsigned pos = newSlot();
    const Readers r = declare("fused");

    begin(r.read);
    llvm::Value *out = r.read->getArg(3);
    llvm::Value *n = r.read->getArg(4);
    llvm::Value *at = loadSlot(pos, "pos");
    leafBase_.clear();
    for (size_t k = 0; k < leaves.size(); ++k) {
      llvm::Value *buffer = scratchAt(leafScratch[k]);
      if (const auto *l = dynAs<Lit>(*leaves[k])) {
        // A cursor's words are read where they lie when it holds them decoded (its view).
        llvm::Value *stream = operand(operandIndex_.at(l), "stream");
        llvm::Value *view = operand(callbacksIndex_ + 3, "view");
        auto *viewTy = llvm::FunctionType::get(ptrTy(), {ptrTy(), ptrTy(), i64()}, false);
        leafBase_[leaves[k]] = b_.CreateCall(viewTy, view, {stream, buffer, n}, "words");
        continue;
      }
      callRead(leafReaders[k], buffer, n);
      leafBase_[leaves[k]] = buffer;
    }
    base_.clear();
    loadBases(e);
    mapConstants_.clear();
    fillMapConstants(e, at, n);
    fusedLoop(e, out, at, n);
    storeSlot(pos, b_.CreateAdd(at, n, "pos.next"));
    b_.CreateRetVoid();

    begin(r.skip);
    llvm::Value *skipped = r.skip->getArg(3);
    storeSlot(pos, b_.CreateAdd(loadSlot(pos, "pos"), skipped));
    for (const Readers &leaf : leafReaders)
      callSkip(leaf, skipped);
    b_.CreateRetVoid();

    begin(r.reset);
    storeSlot(pos, i64c(0));
    for (const Readers &leaf : leafReaders)
      callReset(leaf);
    b_.CreateRetVoid();
    return r;
  }

  /// Where the fused subtree's payload literals are read from, loaded once per call.
  void loadBases(const Expr &e) {
    if (const auto *l = dynAs<Lit>(e)) {
      if (!l->isInline() && l->type.length > 0) base_[l] = operand(operandIndex_.at(l), "literal");
      return;
    }
    for (const Expr *c : children(e))
      if (isFused(*c, payload_)) loadBases(*c);
  }

  /// A map's list of constants as a constant array of its words' container.
  llvm::GlobalVariable *constantsTable(const Map &m) {
    const unsigned bytes = containerBytes(type(m).width);
    llvm::Constant *init = wordTable(m.periodic, type(m).width, bytes);
    auto *table = new llvm::GlobalVariable(module_, init->getType(), /*isConstant=*/true,
                                           llvm::GlobalValue::PrivateLinkage, init, "map_constants");
    table->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    return table;
  }

  /// Each fused map with a list of constants in `e`: the constants of words at .. at + n - 1
  /// written into scratch before the loop, which reads them there like a field's words. Looked
  /// up per word, (at + j) / per % P, they were loaded one at a time in the vectorized loop: a
  /// third of the --jit decode of a 1 GiB BF16 checkpoint of row constants. Row constants are
  /// filled a run of `per` words at a time; column constants (per 1) by copies of the table
  /// from the chunk's first column.
  void fillMapConstants(const Expr &e, llvm::Value *at, llvm::Value *n) {
    for (const Expr *c : children(e))
      if (isFused(*c, payload_)) fillMapConstants(*c, at, n);
    const auto *m = dynAs<Map>(e);
    if (!m || m->periodic.empty()) return;
    const unsigned bytes = containerBytes(type(*m).width);
    auto *elemTy = intTy(bytes);
    llvm::Value *buffer = scratchAt(newScratch(maxWords_ * bytes));
    llvm::GlobalVariable *table = constantsTable(*m);
    const uint64_t count = m->periodic.size(), per = m->per;
    llvm::Function *fn = currentFunction();
    llvm::BasicBlock *before = b_.GetInsertBlock();
    auto *loop = block("constants", fn);
    auto *exit = block("constants.exit", fn);
    llvm::Value *run = per == 1 ? at : b_.CreateUDiv(at, i64c(per));
    llvm::Value *column = b_.CreateURem(run, i64c(count), "column");
    // Words left in the run the chunk starts in.
    llvm::Value *left = per == 1 ? i64c(1) : b_.CreateSub(i64c(per), b_.CreateURem(at, i64c(per)), "left");
    b_.CreateCondBr(b_.CreateICmpULT(i64c(0), n), loop, exit);
    b_.SetInsertPoint(loop);
    auto *j = b_.CreatePHI(i64(), 2, "j");
    auto *col = b_.CreatePHI(i64(), 2, "col");
    auto *runLeft = b_.CreatePHI(i64(), 2, "run.left");
    j->addIncoming(i64c(0), before);
    col->addIncoming(column, before);
    runLeft->addIncoming(left, before);
    llvm::Value *wanted = b_.CreateSub(n, j);
    llvm::Value *next = nullptr, *nextCol = nullptr;
    if (per == 1) {
      // The table from column col to its end (or to the chunk's), then from column 0.
      llvm::Value *k = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateSub(i64c(count), col), wanted);
      b_.CreateMemCpy(b_.CreateInBoundsGEP(elemTy, buffer, j), llvm::MaybeAlign(1),
                      b_.CreateInBoundsGEP(elemTy, table, col), llvm::MaybeAlign(1), b_.CreateMul(k, i64c(bytes)));
      next = b_.CreateAdd(j, k);
      nextCol = i64c(0);
    } else {
      // One constant for the rest of the run, or of the chunk.
      llvm::Value *k = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, runLeft, wanted);
      llvm::Value *v = b_.CreateLoad(elemTy, b_.CreateInBoundsGEP(elemTy, table, col));
      next = b_.CreateAdd(j, k);
      countedLoop(j, next, [&](llvm::Value *t) {
        b_.CreateAlignedStore(v, b_.CreateInBoundsGEP(elemTy, buffer, t), llvm::MaybeAlign(1));
      });
      llvm::Value *bumped = b_.CreateAdd(col, i64c(1));
      nextCol = b_.CreateSelect(b_.CreateICmpEQ(bumped, i64c(count)), i64c(0), bumped);
    }
    j->addIncoming(next, b_.GetInsertBlock());
    col->addIncoming(nextCol, b_.GetInsertBlock());
    runLeft->addIncoming(i64c(per), b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpULT(next, n), loop, exit);
    b_.SetInsertPoint(exit);
    mapConstants_[m] = buffer;
  }

  /// out[j] = word at + j of `e`, for j < n.
  void fusedLoop(const Expr &e, llvm::Value *out, llvm::Value *at, llvm::Value *n) {
    auto *ty = intTy(containerBytes(type(e).width));
    countedLoop(i64c(0), n, [&](llvm::Value *j) {
      chunkIndex_ = j;
      llvm::Value *w = value(e, b_.CreateAdd(at, j, "index", /*HasNUW=*/true), ty);
      b_.CreateAlignedStore(w, b_.CreateInBoundsGEP(ty, out, j), llvm::MaybeAlign(1));
    });
  }

  /// `concat`: a switch over the parts, each read up to its length.
  Readers concatReaders(const Concat &c) {
    std::vector<Readers> parts;
    std::vector<uint64_t> lengths;
    for (const auto &p : c.parts) {
      lengths.push_back(type(*p).length);
      // An empty part is never read: all of them share readers that do nothing.
      parts.push_back(lengths.back() == 0 ? emptyReaders() : readersOf(*p));
    }
    const unsigned partSlot = newSlot(), posSlot = newSlot();
    const unsigned cb = containerBytes(type(c).width);
    const Readers r = declare("concat");

    // The parts' lengths and readers are tables the walk indexes: its code is the same for 3
    // parts or 4096 (code per part, inlined or chained, took the optimizer time quadratic in
    // the parts: 45 s for 400).
    std::vector<llvm::Constant *> lengthWords, reads, skips;
    for (size_t k = 0; k < parts.size(); ++k) {
      lengthWords.push_back(i64c(lengths[k]));
      reads.push_back(parts[k].read);
      skips.push_back(parts[k].skip);
    }
    auto table = [&](llvm::Type *elemTy, const std::vector<llvm::Constant *> &entries, const char *name) {
      auto *arrayTy = llvm::ArrayType::get(elemTy, entries.size());
      auto *g = new llvm::GlobalVariable(module_, arrayTy, /*isConstant=*/true, llvm::GlobalValue::PrivateLinkage,
                                         llvm::ConstantArray::get(arrayTy, entries), name);
      g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
      return std::pair{g, arrayTy};
    };
    const auto [lengthTable, lengthTy] = table(i64(), lengthWords, "concat.lengths");
    const auto [readTable, readTy] = table(ptrTy(), reads, "concat.reads");
    const auto [skipTable, skipTy] = table(ptrTy(), skips, "concat.skips");
    auto *readFnTy = parts.front().read->getFunctionType();
    auto *skipFnTy = parts.front().skip->getFunctionType();
    const uint64_t partCount = parts.size();

    // Walks n words forward across the parts, each part's share read (or skipped) by its reader;
    // `out` (null for skip) advances with them.
    auto walk = [&](llvm::Function *fn, llvm::Value *out, llvm::Value *n) {
      llvm::BasicBlock *entry = b_.GetInsertBlock();
      llvm::Value *part0 = loadSlot(partSlot, "part");
      llvm::Value *pos0 = loadSlot(posSlot, "pos");
      auto *loop = block("walk", fn);
      auto *body = block("walk.part", fn);
      auto *exit = block("walk.exit", fn);
      b_.CreateBr(loop);
      b_.SetInsertPoint(loop);
      auto *part = b_.CreatePHI(i64(), 2, "part");
      auto *pos = b_.CreatePHI(i64(), 2, "pos");
      auto *left = b_.CreatePHI(i64(), 2, "left");
      llvm::PHINode *at = out ? b_.CreatePHI(ptrTy(), 2, "at") : nullptr;
      part->addIncoming(part0, entry);
      pos->addIncoming(pos0, entry);
      left->addIncoming(n, entry);
      if (at) at->addIncoming(out, entry);
      b_.CreateCondBr(b_.CreateAnd(b_.CreateICmpNE(left, i64c(0)), b_.CreateICmpULT(part, i64c(partCount))), body,
                      exit);
      b_.SetInsertPoint(body);
      llvm::Value *length =
          b_.CreateLoad(i64(), b_.CreateInBoundsGEP(lengthTy, lengthTable, {i64c(0), part}), "length");
      llvm::Value *remaining = b_.CreateSub(length, pos, "remaining");
      llvm::Value *count = b_.CreateSelect(b_.CreateICmpULT(remaining, left), remaining, left, "take");
      if (at) {
        llvm::Value *reader = b_.CreateLoad(ptrTy(), b_.CreateInBoundsGEP(readTy, readTable, {i64c(0), part}));
        b_.CreateCall(readFnTy, reader, {env_.operands, env_.state, env_.scratch, at, count});
      } else {
        llvm::Value *skipper = b_.CreateLoad(ptrTy(), b_.CreateInBoundsGEP(skipTy, skipTable, {i64c(0), part}));
        b_.CreateCall(skipFnTy, skipper, {env_.operands, env_.state, env_.scratch, count});
      }
      llvm::Value *taken = b_.CreateAdd(pos, count);
      llvm::Value *finished = b_.CreateICmpEQ(taken, length);
      part->addIncoming(b_.CreateSelect(finished, b_.CreateAdd(part, i64c(1)), part), body);
      pos->addIncoming(b_.CreateSelect(finished, i64c(0), taken), body);
      left->addIncoming(b_.CreateSub(left, count), body);
      if (at) at->addIncoming(b_.CreateInBoundsGEP(b_.getInt8Ty(), at, b_.CreateMul(count, i64c(cb))), body);
      b_.CreateBr(loop);
      b_.SetInsertPoint(exit);
      storeSlot(partSlot, part);
      storeSlot(posSlot, pos);
      b_.CreateRetVoid();
    };

    begin(r.read);
    walk(r.read, r.read->getArg(3), r.read->getArg(4));
    begin(r.skip);
    walk(r.skip, nullptr, r.skip->getArg(3));
    begin(r.reset);
    for (const Readers &p : parts)
      callReset(p);
    storeSlot(partSlot, i64c(0));
    storeSlot(posSlot, i64c(0));
    b_.CreateRetVoid();
    return r;
  }

  /// `repeat`: the body read to the end of its period, rewound, read again.
  Readers repeatReaders(const Repeat &rep) {
    const Readers body = readersOf(*rep.body);
    const uint64_t period = type(*rep.body).length; // >= 1 (typing)
    const unsigned posSlot = newSlot();
    const unsigned cb = containerBytes(type(rep).width);
    const Readers r = declare("repeat");

    begin(r.read);
    {
      llvm::Function *fn = r.read;
      llvm::BasicBlock *entry = b_.GetInsertBlock();
      llvm::Value *pos0 = loadSlot(posSlot, "pos");
      auto *loop = block("pass", fn);
      auto *more = block("more", fn);
      auto *rewind = block("rewind", fn);
      auto *take = block("take", fn);
      auto *exit = block("pass.exit", fn);
      b_.CreateBr(loop);
      b_.SetInsertPoint(loop);
      auto *pos = b_.CreatePHI(i64(), 2, "pos");
      auto *left = b_.CreatePHI(i64(), 2, "left");
      auto *at = b_.CreatePHI(ptrTy(), 2, "at");
      pos->addIncoming(pos0, entry);
      left->addIncoming(fn->getArg(4), entry);
      at->addIncoming(fn->getArg(3), entry);
      b_.CreateCondBr(b_.CreateICmpEQ(left, i64c(0)), exit, more);
      b_.SetInsertPoint(more);
      b_.CreateCondBr(b_.CreateICmpEQ(pos, i64c(period)), rewind, take);
      b_.SetInsertPoint(rewind);
      callReset(body);
      b_.CreateBr(take);
      b_.SetInsertPoint(take);
      auto *from = b_.CreatePHI(i64(), 2, "from");
      from->addIncoming(pos, more);
      from->addIncoming(i64c(0), rewind);
      llvm::Value *remaining = b_.CreateSub(i64c(period), from, "remaining");
      llvm::Value *count = b_.CreateSelect(b_.CreateICmpULT(remaining, left), remaining, left, "take");
      callRead(body, at, count);
      pos->addIncoming(b_.CreateAdd(from, count), take);
      left->addIncoming(b_.CreateSub(left, count), take);
      at->addIncoming(b_.CreateInBoundsGEP(b_.getInt8Ty(), at, b_.CreateMul(count, i64c(cb))), take);
      b_.CreateBr(loop);
      b_.SetInsertPoint(exit);
      storeSlot(posSlot, pos);
      b_.CreateRetVoid();
    }

    begin(r.skip);
    {
      // To the end of this pass, whole passes by division, then into the next pass.
      llvm::Function *fn = r.skip;
      llvm::Value *n = fn->getArg(3);
      auto *work = block("work", fn);
      auto *wrap = block("wrap", fn);
      auto *join = block("join", fn);
      auto *done = block("done", fn);
      llvm::Value *pos = loadSlot(posSlot, "pos");
      llvm::Value *remaining = b_.CreateSub(i64c(period), pos, "remaining");
      b_.CreateCondBr(b_.CreateICmpEQ(n, i64c(0)), done, work);
      b_.SetInsertPoint(work);
      b_.CreateCondBr(b_.CreateICmpUGE(n, remaining), wrap, join);
      b_.SetInsertPoint(wrap);
      llvm::Value *into = b_.CreateURem(b_.CreateSub(n, remaining), i64c(period), "into");
      callReset(body);
      b_.CreateBr(join);
      b_.SetInsertPoint(join);
      auto *from = b_.CreatePHI(i64(), 2, "from");
      auto *m = b_.CreatePHI(i64(), 2, "m");
      from->addIncoming(pos, work);
      from->addIncoming(i64c(0), wrap);
      m->addIncoming(n, work);
      m->addIncoming(into, wrap);
      callSkip(body, m);
      storeSlot(posSlot, b_.CreateAdd(from, m));
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
      b_.CreateRetVoid();
    }

    begin(r.reset);
    callReset(body);
    storeSlot(posSlot, i64c(0));
    b_.CreateRetVoid();
    return r;
  }

  /// `scan`: the body read into the output, accumulated in place; skipping reads and drops.
  Readers scanReaders(const Scan &s) {
    const Readers body = readersOf(*s.body);
    const unsigned width = type(s).width;
    const unsigned cb = containerBytes(width);
    auto *ty = intTy(cb);
    const unsigned startedSlot = newSlot(), accSlot = newSlot();
    const uint64_t discard = newScratch(maxWords_ * cb);
    const Readers r = declare("scan");

    begin(r.read);
    {
      llvm::Function *fn = r.read;
      llvm::Value *out = fn->getArg(3);
      llvm::Value *n = fn->getArg(4);
      auto *nonEmpty = block("nonempty", fn);
      auto *first = block("first", fn);
      auto *resume = block("resume", fn);
      auto *join = block("join", fn);
      auto *done = block("done", fn);
      b_.CreateCondBr(b_.CreateICmpEQ(n, i64c(0)), done, nonEmpty);
      b_.SetInsertPoint(nonEmpty);
      b_.CreateCondBr(b_.CreateICmpEQ(loadSlot(startedSlot, "started"), i64c(0)), first, resume);
      b_.SetInsertPoint(first);
      llvm::Value *init = llvm::ConstantInt::get(ty, s.init & widthMask(width));
      b_.CreateAlignedStore(init, out, llvm::MaybeAlign(1));
      storeSlot(startedSlot, i64c(1));
      b_.CreateBr(join);
      b_.SetInsertPoint(resume);
      llvm::Value *saved = b_.CreateTrunc(loadSlot(accSlot, "acc"), ty);
      b_.CreateBr(join);
      b_.SetInsertPoint(join);
      auto *from = b_.CreatePHI(i64(), 2, "from");
      auto *acc0 = b_.CreatePHI(ty, 2, "acc0");
      from->addIncoming(i64c(1), first);
      from->addIncoming(i64c(0), resume);
      acc0->addIncoming(init, first);
      acc0->addIncoming(saved, resume);
      callRead(body, b_.CreateInBoundsGEP(ty, out, from), b_.CreateSub(n, from));
      // The running word stays in a register across the loop.
      llvm::BasicBlock *before = b_.GetInsertBlock();
      auto *loop = block("scan", fn);
      auto *exit = block("scan.exit", fn);
      b_.CreateCondBr(b_.CreateICmpULT(from, n), loop, exit);
      b_.SetInsertPoint(loop);
      auto *i = b_.CreatePHI(i64(), 2, "i");
      auto *acc = b_.CreatePHI(ty, 2, "acc");
      i->addIncoming(from, before);
      acc->addIncoming(acc0, before);
      llvm::Value *p = b_.CreateInBoundsGEP(ty, out, i);
      llvm::Value *update = b_.CreateAlignedLoad(ty, p, llvm::MaybeAlign(1));
      llvm::Value *next = s.op == ScanOp::Xor ? b_.CreateXor(acc, update) : mask(b_.CreateAdd(acc, update), width);
      b_.CreateAlignedStore(next, p, llvm::MaybeAlign(1));
      llvm::Value *iNext = b_.CreateAdd(i, i64c(1), "i.next", /*HasNUW=*/true);
      i->addIncoming(iNext, loop);
      acc->addIncoming(next, loop);
      b_.CreateCondBr(b_.CreateICmpEQ(iNext, n), exit, loop);
      b_.SetInsertPoint(exit);
      auto *last = b_.CreatePHI(ty, 2, "last");
      last->addIncoming(acc0, before);
      last->addIncoming(next, loop);
      storeSlot(accSlot, b_.CreateZExt(last, i64()));
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
      b_.CreateRetVoid();
    }

    begin(r.skip);
    {
      // Every word depends on all before it: read the skipped ones into scratch, a chunk at a time.
      llvm::Function *fn = r.skip;
      llvm::BasicBlock *entry = b_.GetInsertBlock();
      llvm::Value *buffer = scratchAt(discard);
      auto *loop = block("drop", fn);
      auto *more = block("drop.more", fn);
      auto *done = block("drop.done", fn);
      b_.CreateBr(loop);
      b_.SetInsertPoint(loop);
      auto *left = b_.CreatePHI(i64(), 2, "left");
      left->addIncoming(fn->getArg(3), entry);
      b_.CreateCondBr(b_.CreateICmpEQ(left, i64c(0)), done, more);
      b_.SetInsertPoint(more);
      llvm::Value *count = b_.CreateSelect(b_.CreateICmpULT(left, i64c(maxWords_)), left, i64c(maxWords_), "take");
      callRead(r, buffer, count);
      left->addIncoming(b_.CreateSub(left, count), more);
      b_.CreateBr(loop);
      b_.SetInsertPoint(done);
      b_.CreateRetVoid();
    }

    begin(r.reset);
    callReset(body);
    storeSlot(startedSlot, i64c(0));
    b_.CreateRetVoid();
    return r;
  }

  // --- Values in fused loops -----------------------------------------------------------------

  /// v & widthMask(width), in v's type; nothing where the width fills it.
  llvm::Value *mask(llvm::Value *v, unsigned width) {
    if (width >= v->getType()->getIntegerBitWidth()) return v;
    return b_.CreateAnd(v, llvm::ConstantInt::get(v->getType(), widthMask(width)));
  }

  /// Word `index` of the fused node `e` (chunkIndex_ within this call), as type `ty`.
  llvm::Value *value(const Expr &e, llvm::Value *index, llvm::IntegerType *ty) {
    if (auto it = leafBase_.find(&e); it != leafBase_.end()) {
      // A leaf: read into its scratch before the loop.
      const unsigned cb = containerBytes(type(e).width);
      auto *elemTy = intTy(cb);
      llvm::Value *p = b_.CreateInBoundsGEP(elemTy, it->second, chunkIndex_);
      return b_.CreateZExtOrTrunc(b_.CreateAlignedLoad(elemTy, p, llvm::MaybeAlign(cb)), ty);
    }
    switch (e.kind) {
    case NodeKind::Const: {
      const auto &c = as<Const>(e);
      return llvm::ConstantInt::get(ty, c.value & widthMask(c.type.width));
    }
    case NodeKind::Merge: {
      // Each field at its place in the merge's layout (lang/MergeLayout.h).
      const auto &fields = as<Merge>(e).fields;
      std::vector<unsigned> widths;
      for (const auto &f : fields)
        widths.push_back(type(*f.expr).width);
      const std::vector<unsigned> shifts = mergeFieldShifts(widths);
      llvm::Value *acc = nullptr;
      for (size_t k = fields.size(); k-- > 0;) {
        llvm::Value *v = value(*fields[k].expr, index, ty);
        if (shifts[k] > 0) v = b_.CreateShl(v, shifts[k], "", /*HasNUW=*/true);
        acc = acc ? b_.CreateOr(acc, v) : v;
      }
      return acc;
    }
    case NodeKind::Map: return mapValue(as<Map>(e), value(*as<Map>(e).body, index, ty));
    case NodeKind::Lit: return litValue(as<Lit>(e), index, ty);
    case NodeKind::Concat:
    case NodeKind::Repeat:
    case NodeKind::Scan:
    case NodeKind::Hole: break;
    }
    __builtin_trap(); // not fused: a leaf
  }

  /// applyMap (runtime/common/WordOps.h) of the chunk's word j (chunkIndex_), x < 2^width held
  /// in a wider type.
  llvm::Value *mapValue(const Map &m, llvm::Value *x) {
    const unsigned width = type(m).width;
    llvm::Type *ty = x->getType();
    const unsigned tyBits = ty->getIntegerBitWidth();
    auto constant = [&](uint64_t v) { return llvm::ConstantInt::get(ty, v); };
    // The constant: the map's own, or that of word j of the chunk in its list's, filled in
    // before the loop (fillMapConstants).
    auto parameter = [&]() -> llvm::Value * {
      if (m.periodic.empty()) return constant(m.param);
      auto *elemTy = intTy(containerBytes(width));
      llvm::Value *p = b_.CreateInBoundsGEP(elemTy, mapConstants_.at(&m), chunkIndex_);
      return b_.CreateZExtOrTrunc(b_.CreateAlignedLoad(elemTy, p, llvm::MaybeAlign(1)), ty);
    };
    switch (m.fn) {
    case MapFn::Xor: return b_.CreateXor(x, parameter());
    case MapFn::Add: return mask(b_.CreateAdd(x, parameter()), width);
    case MapFn::ZigZag: {
      llvm::Value *negative = b_.CreateAnd(b_.CreateLShr(x, width - 1), constant(1));
      llvm::Value *all = mask(b_.CreateSub(constant(0), negative), width); // the mask, or 0
      return b_.CreateXor(mask(b_.CreateShl(x, 1), width), all);
    }
    case MapFn::Gray: return b_.CreateXor(x, b_.CreateLShr(x, 1));
    case MapFn::Rotl:
      if (m.param == 0) return x;
      return mask(b_.CreateOr(b_.CreateShl(x, m.param), b_.CreateLShr(x, width - m.param)), width);
    case MapFn::BitRev: {
      llvm::Value *reversed = b_.CreateUnaryIntrinsic(llvm::Intrinsic::bitreverse, x);
      return tyBits == width ? reversed : b_.CreateLShr(reversed, tyBits - width);
    }
    }
    __builtin_trap(); // not a MapFn
  }

  /// An inline literal's words, masked to its width, as a constant array of `bytes`-byte elements.
  llvm::Constant *inlineTable(const Lit &l, unsigned bytes) {
    if (!l.isText()) return wordTable(l.words(), l.type.width, bytes);
    std::vector<uint64_t> words(l.inlineCount());
    for (size_t i = 0; i < words.size(); ++i) words[i] = l.inlineWord(i);
    return wordTable(words, l.type.width, bytes);
  }

  /// Words masked to `width` bits as a constant array of `bytes`-byte elements.
  llvm::Constant *wordTable(const std::vector<uint64_t> &source, unsigned width, unsigned bytes) {
    const uint64_t keep = widthMask(width);
    auto table = [&]<typename T>(T) {
      std::vector<T> words;
      words.reserve(source.size());
      for (uint64_t w : source) words.push_back(static_cast<T>(w & keep));
      return llvm::ConstantDataArray::get(module_.getContext(), llvm::ArrayRef<T>(words));
    };
    switch (bytes) {
    case 1: return table(uint8_t{});
    case 2: return table(uint16_t{});
    case 4: return table(uint32_t{});
    default: return table(uint64_t{});
    }
  }

  llvm::Value *litValue(const Lit &l, llvm::Value *index, llvm::IntegerType *ty) {
    const unsigned width = l.type.width;
    // An empty stream's words are never asked for.
    if (l.type.length == 0) return llvm::ConstantInt::get(ty, 0);
    if (l.isInline()) {
      auto *elemTy = intTy(containerBytes(width));
      // A data array, not one constant per word: a text literal (a checkpoint's header) holds
      // thousands of words.
      llvm::Constant *init = inlineTable(l, containerBytes(width));
      auto *arrayTy = llvm::cast<llvm::ArrayType>(init->getType());
      auto *table = new llvm::GlobalVariable(module_, arrayTy, /*isConstant=*/true, llvm::GlobalValue::PrivateLinkage,
                                             init, "inline");
      table->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
      llvm::Value *p = b_.CreateInBoundsGEP(arrayTy, table, {i64c(0), index});
      return b_.CreateZExtOrTrunc(b_.CreateLoad(elemTy, p), ty);
    }
    switch (l.encoding) {
    case Encoding::Raw: {
      auto *elemTy = intTy(containerBytes(width));
      return b_.CreateZExtOrTrunc(loadLE(elemTy, b_.CreateInBoundsGEP(elemTy, base_.at(&l), index)), ty);
    }
    case Encoding::Bitpack: return bitpackValue(l, index, ty);
    case Encoding::Huffman:
    case Encoding::Rans:
    case Encoding::RansO1:
    case Encoding::Zstd:
    case Encoding::Context: break;
    }
    __builtin_trap(); // a cursor's literal is a leaf
  }

  /// Word `index` of a bitpack literal (lang/BitpackFormat.h) whose words are whole power-of-two
  /// bytes, or no bits (readsThroughCursor: the runtime unpacks other bit counts), as type `ty`.
  llvm::Value *bitpackValue(const Lit &l, llvm::Value *index, llvm::IntegerType *ty) {
    // The bit count is specialized; appendShapeKey() has checked it against the width.
    const unsigned bits = bitpackBitCount(payload_.data() + l.payload().offset);
    if (bits == 0) return llvm::ConstantInt::get(ty, 0);
    auto *elemTy = b_.getIntNTy(bits);
    return b_.CreateZExtOrTrunc(loadLE(elemTy, b_.CreateInBoundsGEP(elemTy, base_.at(&l), index)), ty);
  }

  /// Unaligned little-endian load; the payload is little-endian whatever the host.
  llvm::Value *loadLE(llvm::Type *ty, llvm::Value *p) {
    auto *load = b_.CreateAlignedLoad(ty, p, llvm::MaybeAlign(1));
    if (!bigEndian_ || ty->getIntegerBitWidth() == 8) return load;
    return b_.CreateUnaryIntrinsic(llvm::Intrinsic::bswap, load);
  }

  llvm::Module &module_;
  llvm::LLVMContext &ctx_;
  llvm::IRBuilder<> b_;
  const Payload &payload_;
  const uint64_t maxWords_;
  const std::string cpu_, features_;
  const bool bigEndian_;
  std::string name_;
  Env env_;
  size_t readerCount_ = 0;
  uint64_t stateSlots_ = 0, scratchBytes_ = 0;
  Readers empty_; ///< emptyReaders(), once made
  std::unordered_map<const Expr *, StreamType> types_;
  std::unordered_map<const Lit *, unsigned> operandIndex_; ///< each payload literal's operand slot
  unsigned callbacksIndex_ = 0;                            ///< the first LitStreamCallbacks slot
  // The fused loop being emitted:
  std::unordered_map<const Lit *, llvm::Value *> base_;      ///< where its payload literals are read
  std::unordered_map<const Expr *, llvm::Value *> leafBase_; ///< where its leaves were read into
  std::unordered_map<const Map *, llvm::Value *> mapConstants_; ///< where its maps' constants were filled in
  llvm::Value *chunkIndex_ = nullptr;                        ///< the word's index within this call: j of out[j]
};

} // namespace

FrameLayout emitDecodeFunction(llvm::Module &module, const Payload &payload, const std::string &name, const Expr &root,
                               uint64_t maxWords, const std::string &cpu, const std::string &features) {
  return FunctionEmitter(module, payload, maxWords, cpu, features).emit(name, root);
}

} // namespace brevis::jit
