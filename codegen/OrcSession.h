#pragma once
// The ORC session: one LLJIT for the host CPU that turns generated decode functions into native
// code, one module per function, compiling several concurrently, and loading those compiled
// before from the compiled-code cache (CompiledCodeCache). LLVM's types are only declared here,
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

class CompiledCodeCache;
class ShapeCodeCache;

class OrcSession {
public:
  /// A module in the making and the function emitted into it.
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
  /// module's IR as emitted and as optimized, and a non-empty `cacheDir` the directory of
  /// compiled code kept across runs (none where it cannot be created). With a cache and a
  /// non-empty `shapeIdentity` (ShapeCodeCache), each function's object is also kept by its
  /// shape key, for runs that load it without LLVM.
  static Result<std::unique_ptr<OrcSession>> create(const std::string &irPath = {}, const std::string &cacheDir = {},
                                                    const std::string &shapeIdentity = {});
  ~OrcSession();

  /// A module holding the function for `root` (shape `key`), producing at most `maxWords` words a
  /// call, found under `key` once compiled. Its name derives from the key, so that the module's
  /// text, and its place in the compiled-code cache, are the same in every run.
  Batch emit(std::string key, const Expr &root, const Payload &payload, uint64_t maxWords);

  /// Hands the modules to the JIT and compiles them, concurrently when there are several, then
  /// records their functions in `functions` under their keys. Optimization runs in the JIT's IR
  /// transform layer, on the compile threads. A module whose compiled code the cache holds is
  /// loaded from it instead, unoptimized and uncompiled.
  Result<void> compile(std::vector<Batch> &batches, std::unordered_map<std::string, Compiled> &functions);

  /// Modules loaded from the cache so far.
  size_t cacheHits() const { return cacheHits_; }

private:
  OrcSession() = default;

  struct IrLog;
  std::shared_ptr<IrLog> irLog_; ///< null: no IR is written
  std::unique_ptr<CompiledCodeCache> cache_; ///< null: nothing kept across runs
  std::unique_ptr<ShapeCodeCache> shapes_;   ///< null: no objects kept by shape
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::string cpu_, features_; ///< the host's, stamped on every function for the optimizer
  std::string target_;         ///< what compiled code depends on besides its IR (the cache's key)
  size_t cacheHits_ = 0;
};

} // namespace brevis::jit
