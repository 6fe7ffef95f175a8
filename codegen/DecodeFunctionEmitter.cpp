#include "codegen/DecodeFunctionEmitter.h"

#include "codegen/ShapeKey.h"
#include "lang/BitpackFormat.h"
#include "lang/MergeLayout.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <unordered_map>
#include <vector>

namespace brevis::jit {

namespace {

// Bitpack fields wider than 57 bits are read with a 16-byte load starting at any byte of the literal.
static_assert(kPayloadSlack >= 15, "generated bitpack loads read up to 15 bytes past a literal's last byte");

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
    auto *rootTy = b_.getIntNTy(8 * containerBytes(streamTypeOf(root).width));
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
      // Each field at its place in the merge's layout (lang/MergeLayout.h).
      const auto &fields = as<Merge>(e).fields;
      std::vector<unsigned> widths;
      for (const auto &f : fields) widths.push_back(streamTypeOf(*f.expr).width);
      const std::vector<unsigned> shifts = mergeFieldShifts(widths);
      llvm::Value *acc = nullptr;
      for (size_t k = fields.size(); k-- > 0;) {
        llvm::Value *v = value(*fields[k].expr, index, ty);
        if (shifts[k] > 0) v = b_.CreateShl(v, shifts[k], "", /*HasNUW=*/true);
        acc = acc ? b_.CreateOr(acc, v) : v;
      }
      return acc;
    }
    case NodeKind::Lit: return litValue(as<Lit>(e), index, ty);
    case NodeKind::Concat:
    case NodeKind::Repeat:
    case NodeKind::Map:
    case NodeKind::Scan:
    case NodeKind::Hole: break;
    }
    __builtin_trap(); // not compiled: JitDecoder::supports()
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

    switch (l.encoding) {
    case Encoding::Huffman:
    case Encoding::Rans:
    case Encoding::RansO1:
    case Encoding::Zstd:
    case Encoding::Context: {
      // Pre-decoded by the runtime: word `index` is element index - first of the chunk buffer.
      const unsigned cb = containerBytes(width);
      auto *elemTy = b_.getIntNTy(8 * cb);
      llvm::Value *p = b_.CreateInBoundsGEP(elemTy, base_.at(&l), chunkIndex_);
      return b_.CreateZExtOrTrunc(b_.CreateAlignedLoad(elemTy, p, llvm::MaybeAlign(cb)), ty);
    }
    case Encoding::Raw: {
      auto *elemTy = b_.getIntNTy(8 * containerBytes(width));
      return b_.CreateZExtOrTrunc(loadLE(elemTy, b_.CreateInBoundsGEP(elemTy, base_.at(&l), index)), ty);
    }
    case Encoding::Bitpack: return bitpackValue(l, index, ty);
    }
    __builtin_trap(); // not an Encoding
  }

  /// Word `index` of a bitpack literal (lang/BitpackFormat.h), as type `ty`.
  llvm::Value *bitpackValue(const Lit &l, llvm::Value *index, llvm::IntegerType *ty) {
    // The bit count is specialized; appendShapeKey() has checked it against the width.
    const unsigned bits = bitpackBitCount(payload_.data() + l.payload().offset);
    if (bits == 0) return llvm::ConstantInt::get(ty, 0);
    llvm::Value *base = base_.at(&l); // bitpackBody(): after the bit count
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
    // Word i occupies bits [i*b, i*b+b) (bitpackBitOffset): load the containing bytes from the byte holding bit i*b
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

} // namespace

void emitDecodeFunction(llvm::Module &module, const Payload &payload, const std::string &name, const Expr &root,
                        const std::string &cpu, const std::string &features) {
  FunctionEmitter(module, payload).emit(name, root, cpu, features);
}

} // namespace brevis::jit
