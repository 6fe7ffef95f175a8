#pragma once
// The optimization passes run on every generated module before it is compiled.

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace brevis::jit {

/// Runs LLVM's O2 pipeline, vectorizers included, tuned for `tm`'s CPU.
void optimize(llvm::Module &module, llvm::TargetMachine &tm);

} // namespace brevis::jit
