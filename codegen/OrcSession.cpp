#include "codegen/OrcSession.h"

#include "codegen/CompiledCodeCache.h"
#include "codegen/ShapeCodeCache.h"
#include "codegen/ShapeKey.h"
#include "codegen/OptimizationPipeline.h"
#include "runtime/containers/Checksum.h"

#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/IRTransformLayer.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/Target/TargetMachine.h>

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <thread>

namespace brevis::jit {

namespace {

Error toError(llvm::Error e, std::string_view what) {
  return Error{fmt::format("{}: {}", what, llvm::toString(std::move(e)))};
}

void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

} // namespace

/// The file that --emit-llvm names: modules are written whole, one at a time, from the thread
/// that emitted them (before optimization) or the compile thread that optimized them (after).
struct OrcSession::IrLog {
  std::mutex mutex;
  std::unique_ptr<llvm::raw_fd_ostream> out;

  void write(const llvm::Module &m, const char *stage) {
    std::lock_guard lock(mutex);
    *out << "; ---- " << m.getModuleIdentifier() << ", " << stage << "\n";
    m.print(*out, nullptr);
    out->flush();
  }
};

OrcSession::Batch::Batch() = default;
OrcSession::Batch::Batch(Batch &&) noexcept = default;
OrcSession::Batch &OrcSession::Batch::operator=(Batch &&) noexcept = default;
OrcSession::Batch::~Batch() = default;

OrcSession::~OrcSession() = default;

/// Bumped when the optimization pipeline changes: cached code compiled by another pipeline is
/// correct but not what this build would make.
constexpr const char *kPipelineVersion = "brevis pipeline 1 (O2)";

Result<std::unique_ptr<OrcSession>> OrcSession::create(const std::string &irPath, const std::string &cacheDir,
                                                       const std::string &shapeIdentity) {
  initializeNativeTarget();
  std::unique_ptr<OrcSession> session(new OrcSession());
  if (!irPath.empty()) {
    std::error_code ec;
    auto out = std::make_unique<llvm::raw_fd_ostream>(irPath, ec);
    if (ec) return Error{fmt::format("cannot write the IR to {}: {}", irPath, ec.message())};
    session->irLog_ = std::make_shared<IrLog>();
    session->irLog_->out = std::move(out);
  }

  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return toError(jtmb.takeError(), "the JIT cannot target this CPU");
  {
    auto tm = jtmb->createTargetMachine();
    if (!tm) return toError(tm.takeError(), "the JIT cannot target this CPU");
    session->cpu_ = (*tm)->getTargetCPU().str();
    session->features_ = (*tm)->getTargetFeatureString().str();
  }
  session->target_ = fmt::format("{}\n{}\n{}\nLLVM {}\n{}", jtmb->getTargetTriple().str(), session->cpu_,
                                 session->features_, LLVM_VERSION_STRING, kPipelineVersion);
  session->cache_ = CompiledCodeCache::open(cacheDir);
  if (session->cache_) session->shapes_ = ShapeCodeCache::open(cacheDir, shapeIdentity);
  // One compile thread per hardware thread: the modules of a checkpoint compile concurrently.
  const unsigned compileThreads = std::max(1u, std::thread::hardware_concurrency());
  llvm::orc::LLJITBuilder builder;
  builder.setJITTargetMachineBuilder(*jtmb);
  if (compileThreads > 1) builder.setNumCompileThreads(compileThreads);
  // The compiler hands what it compiles to the cache (ConcurrentIRCompiler: one TargetMachine
  // per module, so it is safe on several compile threads).
  builder.setCompileFunctionCreator(
      [cache = session->cache_.get()](llvm::orc::JITTargetMachineBuilder target)
          -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
        return std::make_unique<llvm::orc::ConcurrentIRCompiler>(std::move(target), cache);
      });
  auto jit = builder.create();
  if (!jit) return toError(jit.takeError(), "the JIT could not start");
  session->jit_ = std::move(*jit);

  // Each compile thread optimizes with its own TargetMachine: they are not shareable across threads.
  session->jit_->getIRTransformLayer().setTransform(
      [jtmb = *jtmb, log = session->irLog_](llvm::orc::ThreadSafeModule tsm, llvm::orc::MaterializationResponsibility &)
          -> llvm::Expected<llvm::orc::ThreadSafeModule> {
        auto builder = jtmb;
        auto tm = builder.createTargetMachine();
        if (!tm) return tm.takeError();
        tsm.withModuleDo([&](llvm::Module &m) {
          optimize(m, **tm);
          if (log) log->write(m, "after optimization");
        });
        return tsm;
      });
  return session;
}

OrcSession::Batch OrcSession::emit(std::string key, const Expr &root, const Payload &payload, uint64_t maxWords) {
  Batch batch;
  batch.ctx = std::make_unique<llvm::LLVMContext>();
  batch.module = std::make_unique<llvm::Module>("brevis", *batch.ctx);
  batch.module->setDataLayout(jit_->getDataLayout());
  batch.module->setTargetTriple(jit_->getTargetTriple().str());
  std::string name = decodeFunctionName(key);
  const FrameLayout layout = emitDecodeFunction(*batch.module, payload, name, root, maxWords, cpu_, features_);
  batch.functions.push_back(Batch::Function{std::move(key), std::move(name), layout});
  return batch;
}

Result<void> OrcSession::compile(std::vector<Batch> &batches, std::unordered_map<std::string, Compiled> &functions) {
  llvm::orc::SymbolLookupSet symbols;
  struct Wanted {
    std::string key;
    llvm::orc::SymbolStringPtr symbol;
    FrameLayout layout;
    std::string cacheKey; ///< its module's in the compiled-code cache (empty: none)
  };
  std::vector<Wanted> wanted;
  size_t hits = 0; // counted once their code is found
  for (Batch &batch : batches) {
    if (batch.functions.empty()) continue;
    std::string problems;
    llvm::raw_string_ostream os(problems);
    if (llvm::verifyModule(*batch.module, &os)) return Error{"the JIT generated invalid code: " + os.str()};
    for (auto &f : batch.functions) {
      auto symbol = jit_->mangleAndIntern(f.name);
      symbols.add(symbol);
      wanted.push_back(Wanted{std::move(f.key), std::move(symbol), f.layout, {}});
    }
    batch.functions.clear();
    std::unique_ptr<llvm::MemoryBuffer> cached;
    if (cache_) {
      // The module's text says everything its code depends on; its identifier becomes that key,
      // under which the compiler's ObjectCache stores what it makes.
      std::string text;
      llvm::raw_string_ostream textOut(text);
      batch.module->print(textOut, nullptr);
      const std::string cacheKey = CompiledCodeCache::keyOf(textOut.str(), target_);
      batch.module->setModuleIdentifier(cacheKey);
      cached = cache_->find(cacheKey);
      wanted.back().cacheKey = cacheKey; // a module holds one function
    }
    if (irLog_) irLog_->write(*batch.module, cached ? "as emitted (its code loaded from the cache)" : "as emitted");
    if (cached) {
      ++hits;
      if (auto err = jit_->addObjectFile(std::move(cached)))
        return toError(std::move(err), "the JIT could not load cached code");
      continue;
    }
    if (auto err = jit_->addIRModule(llvm::orc::ThreadSafeModule(std::move(batch.module), std::move(batch.ctx))))
      return toError(std::move(err), "the JIT could not add a module");
  }
  if (wanted.empty()) return {};
  // One lookup of every symbol: the session materializes all the modules at once, each a task
  // for the compile threads.
  auto &session = jit_->getExecutionSession();
  auto found = session.lookup(llvm::orc::makeJITDylibSearchOrder(&jit_->getMainJITDylib()), std::move(symbols));
  if (!found) return toError(found.takeError(), "the JIT could not compile the decoders");
  cacheHits_ += hits;
  for (auto &w : wanted) {
    auto it = found->find(w.symbol);
    if (it == found->end()) return Error{fmt::format("the JIT lost the decoder {}", *w.symbol)};
    // Its object by its shape too, for runs that then need no LLVM (ShapeCodeCache).
    if (shapes_ && !w.cacheKey.empty())
      if (auto object = cache_->find(w.cacheKey)) {
        const llvm::StringRef bytes = object->getBuffer();
        shapes_->store(w.key, ByteSpan(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()), w.layout);
      }
    functions.emplace(std::move(w.key), Compiled{it->second.getAddress().toPtr<DecodeFn>(), w.layout});
  }
  return {};
}

} // namespace brevis::jit
