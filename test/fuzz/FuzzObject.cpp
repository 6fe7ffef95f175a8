// libFuzzer target: the loader of compiled code kept in the JIT's cache (codegen/ObjectLoader),
// on arbitrary bytes. Seeds are objects LLVM compiled for decode functions. Whatever the input,
// loading must refuse it or place it, without crashing, reading outside it or mapping more
// memory than its sections declare within the loader's bounds. Nothing loaded is run.
#include "codegen/ObjectLoader.h"

#include <cstddef>
#include <cstdint>

using namespace brevis;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto loaded = jit::LoadedCode::load(ByteSpan(data, size));
  if (loaded && *loaded) (*loaded)->function("brevis_decode_0000000000000000");
  return 0;
}
