#pragma once
// Compiled decoders found by their program shape, without LLVM (docs/jit.md, "Across runs").
// LLVM's cache (CompiledCodeCache) keys an object by the IR it was compiled from, which only
// emitting the IR, with LLVM loaded, can tell. Beside each of its entries the JIT also stores the
// object under its shape key, with what its callers allocate; a run whose shapes are all here
// loads their code with LoadedObject and never loads the JIT module or LLVM.
//
// An entry is valid only for the JIT module and the CPU it was made by: its key hashes the shape
// key with an identity of both (moduleIdentity, cpuIdentity), so a rebuilt module or another
// CPU finds nothing and compiles again. Entries live in the same directory as LLVM's, are made
// and checked the same way, and are pruned with them.
#include "codegen/DecodeFunctionEmitter.h"
#include "runtime/common/Bytes.h"

#include <memory>
#include <optional>
#include <string>

namespace brevis::jit {

class ShapeCodeCache {
public:
  /// The entries in `dir` for code made by `identity`; null where `dir` is empty or cannot be
  /// used: created for this user only if missing, and refused if it is another user's or others
  /// may write to it (its entries run as code).
  static std::unique_ptr<ShapeCodeCache> open(const std::string &dir, std::string identity);

  struct Entry {
    Bytes object;
    FrameLayout layout;
  };
  /// The entry for `shapeKey`, if a whole one is there (its key, length and checksum checked;
  /// only a regular file, not followed if a link, of a bounded size is read).
  std::optional<Entry> find(const std::string &shapeKey) const;
  /// Stores `object` and `layout` for `shapeKey`: written to a temporary file and renamed into
  /// place, so that concurrent runs see a whole entry or none; a failure only loses the entry.
  void store(const std::string &shapeKey, ByteSpan object, const FrameLayout &layout) const;

  /// The directory's entries are named by this prefix and a key: LLVM's pruneCache considers
  /// files named llvmcache-*.
  static constexpr const char *kEntryPrefix = "llvmcache-brevis-shape-";

private:
  ShapeCodeCache(std::string dir, std::string identity) : dir_(std::move(dir)), identity_(std::move(identity)) {}
  std::string keyOf(const std::string &shapeKey) const;
  std::string dir_, identity_;
};

/// What compiled code depends on in the CPU: the vendor, family, model and stepping, and every
/// feature bit LLVM's host detection reads (CPUID leaves 1, 7, 0xd and 0x80000001, and the
/// state the OS enables, XCR0), as text.
std::string cpuIdentity();

/// The JIT module at `path` as compiled code depends on it: the build identity both sides share
/// and the file's size and modification time (a module rebuilt from changed sources emits
/// other code under the same build identity); empty where it cannot be read.
std::string moduleIdentity(const std::string &path);

} // namespace brevis::jit
