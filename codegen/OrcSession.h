#pragma once
// The ORC session: one LLJIT for the host CPU that turns batches of generated decode functions
// into native code, compiling several modules concurrently. LLVM's types are only declared here,
// so that the chunk driver compiles without LLVM's headers.
#include "codegen/DecodeFunctionEmitter.h"
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/containers/Payload.h"

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
namespace orc {
class LLJIT;
}
} // namespace llvm

namespace brevis::jit {

class OrcSession {
public:
  /// A module in the making and the functions emitted into it (key, symbol name).
  struct Batch {
    Batch();
    Batch(Batch &&) noexcept;
    Batch &operator=(Batch &&) noexcept;
    ~Batch();
    std::unique_ptr<llvm::LLVMContext> ctx;
    std::unique_ptr<llvm::Module> module;
    std::vector<std::pair<std::string, std::string>> functions;
  };

  /// Sets up the JIT for the host CPU.
  static Result<std::unique_ptr<OrcSession>> create();
  ~OrcSession();

  /// How many modules the session compiles at once: one per hardware thread.
  unsigned compileThreads() const { return compileThreads_; }

  Batch newBatch();

  /// Emits into `batch` the function for `root`, found later under `key`.
  void emit(Batch &batch, std::string key, const Expr &root, const Payload &payload);

  /// Hands the modules to the JIT and compiles them, concurrently when there are several, then
  /// records their functions in `functions` under their keys. Optimization runs in the JIT's IR
  /// transform layer, on the compile threads.
  Result<void> compile(std::vector<Batch> &batches, std::unordered_map<std::string, DecodeFn> &functions);

private:
  OrcSession() = default;

  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::string cpu_, features_; ///< the host's, stamped on every function for the optimizer
  unsigned compileThreads_ = 1;
  size_t nextFunction_ = 0;
};

} // namespace brevis::jit
