#include "codegen/OrcSession.h"

#include "codegen/OptimizationPipeline.h"

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

Result<std::unique_ptr<OrcSession>> OrcSession::create(const std::string &irPath) {
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
  session->compileThreads_ = std::max(1u, std::thread::hardware_concurrency());
  llvm::orc::LLJITBuilder builder;
  builder.setJITTargetMachineBuilder(*jtmb);
  if (session->compileThreads_ > 1) builder.setNumCompileThreads(session->compileThreads_);
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

OrcSession::Batch OrcSession::newBatch() {
  Batch batch;
  batch.ctx = std::make_unique<llvm::LLVMContext>();
  batch.module = std::make_unique<llvm::Module>(fmt::format("brevis.module{}", nextModule_++), *batch.ctx);
  batch.module->setDataLayout(jit_->getDataLayout());
  batch.module->setTargetTriple(jit_->getTargetTriple().str());
  return batch;
}

void OrcSession::emit(Batch &batch, std::string key, const Expr &root, const Payload &payload, uint64_t maxWords) {
  std::string name = fmt::format("brevis_decode_{}", nextFunction_++);
  const FrameLayout layout = emitDecodeFunction(*batch.module, payload, name, root, maxWords, cpu_, features_);
  batch.functions.push_back(Batch::Function{std::move(key), std::move(name), layout});
}

Result<void> OrcSession::compile(std::vector<Batch> &batches, std::unordered_map<std::string, Compiled> &functions) {
  llvm::orc::SymbolLookupSet symbols;
  struct Wanted {
    std::string key;
    llvm::orc::SymbolStringPtr symbol;
    FrameLayout layout;
  };
  std::vector<Wanted> wanted;
  for (Batch &batch : batches) {
    if (batch.functions.empty()) continue;
    std::string problems;
    llvm::raw_string_ostream os(problems);
    if (llvm::verifyModule(*batch.module, &os)) return Error{"the JIT generated invalid code: " + os.str()};
    if (irLog_) irLog_->write(*batch.module, "as emitted");
    for (auto &f : batch.functions) {
      auto symbol = jit_->mangleAndIntern(f.name);
      symbols.add(symbol);
      wanted.push_back(Wanted{std::move(f.key), std::move(symbol), f.layout});
    }
    batch.functions.clear();
    if (auto err = jit_->addIRModule(llvm::orc::ThreadSafeModule(std::move(batch.module), std::move(batch.ctx))))
      return toError(std::move(err), "the JIT could not add a module");
  }
  if (wanted.empty()) return {};
  // One lookup of every symbol: the session materializes all the modules at once, each a task
  // for the compile threads.
  auto &session = jit_->getExecutionSession();
  auto found = session.lookup(llvm::orc::makeJITDylibSearchOrder(&jit_->getMainJITDylib()), std::move(symbols));
  if (!found) return toError(found.takeError(), "the JIT could not compile the decoders");
  for (auto &w : wanted) {
    auto it = found->find(w.symbol);
    if (it == found->end()) return Error{fmt::format("the JIT lost the decoder {}", *w.symbol)};
    functions.emplace(std::move(w.key), Compiled{it->second.getAddress().toPtr<DecodeFn>(), w.layout});
  }
  return {};
}

} // namespace brevis::jit
