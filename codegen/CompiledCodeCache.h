#pragma once
// Compiled decoders kept across runs (docs/jit.md, "Across runs"): a directory of object files,
// one per program shape, named by a hash of the IR they were compiled from and of the target,
// so that decoding a checkpoint again, or another of the same model family, compiles nothing
// it has compiled before. Private to codegen: it is LLVM's ObjectCache.
#include <llvm/ExecutionEngine/ObjectCache.h>
#include <llvm/Support/MemoryBuffer.h>

#include <memory>
#include <string>
#include <string_view>

namespace brevis::jit {

class CompiledCodeCache final : public llvm::ObjectCache {
public:
  /// The cache in `dir`, created (for this user only) if needed; null where it cannot be.
  static std::unique_ptr<CompiledCodeCache> open(const std::string &dir);

  /// The key of a module compiled from `irText` for `target` (CPU, features, LLVM version and
  /// the optimization pipeline): 32 hexadecimal digits.
  static std::string keyOf(std::string_view irText, std::string_view target);

  /// The object stored under `key`, if there is a whole one (its length and checksum are
  /// checked: a torn or damaged file is a miss, and is replaced when the module is compiled).
  std::unique_ptr<llvm::MemoryBuffer> find(const std::string &key) const;

  /// Stores the object compiled from a module whose identifier is its key (llvm::ObjectCache;
  /// called on the compile threads). Written to a temporary file and renamed into place, so
  /// that concurrent runs never see half an object; a failure to write only loses the entry.
  void notifyObjectCompiled(const llvm::Module *module, llvm::MemoryBufferRef object) override;

  /// Lookups happen before optimization (find), not in the compiler.
  std::unique_ptr<llvm::MemoryBuffer> getObject(const llvm::Module *) override { return nullptr; }

  const std::string &directory() const { return dir_; }

private:
  explicit CompiledCodeCache(std::string dir) : dir_(std::move(dir)) {}
  std::string pathOf(const std::string &key) const;

  std::string dir_;
};

} // namespace brevis::jit
