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
    struct Function {
      std::string key, name;
      FrameLayout layout;
    };
    std::vector<Function> functions;
  };

  /// A compiled decode function and what its callers allocate for it.
  struct Compiled {
    DecodeFn fn = nullptr;
    FrameLayout layout;
  };

  /// Sets up the JIT for the host CPU; a non-empty `irPath` names a file that receives each
  /// module's IR as emitted and as optimized.
  static Result<std::unique_ptr<OrcSession>> create(const std::string &irPath = {});
  ~OrcSession();

  /// How many modules the session compiles at once: one per hardware thread.
  unsigned compileThreads() const { return compileThreads_; }

  Batch newBatch();

  /// Emits into `batch` the function for `root`, producing at most `maxWords` words a call,
  /// found later under `key`.
  void emit(Batch &batch, std::string key, const Expr &root, const Payload &payload, uint64_t maxWords);

  /// Hands the modules to the JIT and compiles them, concurrently when there are several, then
  /// records their functions in `functions` under their keys. Optimization runs in the JIT's IR
  /// transform layer, on the compile threads.
  Result<void> compile(std::vector<Batch> &batches, std::unordered_map<std::string, Compiled> &functions);

private:
  OrcSession() = default;

  struct IrLog;
  std::shared_ptr<IrLog> irLog_; ///< null: no IR is written
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::string cpu_, features_; ///< the host's, stamped on every function for the optimizer
  unsigned compileThreads_ = 1;
  size_t nextFunction_ = 0;
  size_t nextModule_ = 0;
};

} // namespace brevis::jit
