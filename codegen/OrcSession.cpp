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

OrcSession::Batch::Batch() = default;
OrcSession::Batch::Batch(Batch &&) noexcept = default;
OrcSession::Batch &OrcSession::Batch::operator=(Batch &&) noexcept = default;
OrcSession::Batch::~Batch() = default;

OrcSession::~OrcSession() = default;

Result<std::unique_ptr<OrcSession>> OrcSession::create() {
  initializeNativeTarget();
  std::unique_ptr<OrcSession> session(new OrcSession());

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
      [jtmb = *jtmb](llvm::orc::ThreadSafeModule tsm,
                     llvm::orc::MaterializationResponsibility &) -> llvm::Expected<llvm::orc::ThreadSafeModule> {
        auto builder = jtmb;
        auto tm = builder.createTargetMachine();
        if (!tm) return tm.takeError();
        tsm.withModuleDo([&](llvm::Module &m) { optimize(m, **tm); });
        return tsm;
      });
  return session;
}

OrcSession::Batch OrcSession::newBatch() {
  Batch batch;
  batch.ctx = std::make_unique<llvm::LLVMContext>();
  batch.module = std::make_unique<llvm::Module>("brevis", *batch.ctx);
  batch.module->setDataLayout(jit_->getDataLayout());
  batch.module->setTargetTriple(jit_->getTargetTriple().str());
  return batch;
}

void OrcSession::emit(Batch &batch, std::string key, const Expr &root, const Payload &payload) {
  std::string name = fmt::format("brevis_decode_{}", nextFunction_++);
  emitDecodeFunction(*batch.module, payload, name, root, cpu_, features_);
  batch.functions.emplace_back(std::move(key), std::move(name));
}

Result<void> OrcSession::compile(std::vector<Batch> &batches, std::unordered_map<std::string, DecodeFn> &functions) {
  llvm::orc::SymbolLookupSet symbols;
  std::vector<std::pair<std::string, llvm::orc::SymbolStringPtr>> wanted;
  for (Batch &batch : batches) {
    if (batch.functions.empty()) continue;
    std::string problems;
    llvm::raw_string_ostream os(problems);
    if (llvm::verifyModule(*batch.module, &os)) return Error{"the JIT generated invalid code: " + os.str()};
    for (auto &[key, name] : batch.functions) {
      auto symbol = jit_->mangleAndIntern(name);
      symbols.add(symbol);
      wanted.emplace_back(std::move(key), std::move(symbol));
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
  for (auto &[key, symbol] : wanted) {
    auto it = found->find(symbol);
    if (it == found->end()) return Error{fmt::format("the JIT lost the decoder {}", *symbol)};
    functions.emplace(std::move(key), it->second.getAddress().toPtr<DecodeFn>());
  }
  return {};
}

} // namespace brevis::jit
