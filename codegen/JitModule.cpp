// The entry points of libbrevis-jit.so (codegen/JitModule.h). Everything else in the module,
// including its copies of brevis_runtime and brevis_lang, is hidden (see codegen/CMakeLists.txt).
#include "codegen/JitModule.h"

#include "codegen/JitDecoder.h"

#include <utility>

#define BREVIS_JIT_EXPORT extern "C" __attribute__((visibility("default")))

BREVIS_JIT_EXPORT const char brevis_jit_build_id[] = BREVIS_JIT_BUILD_ID;

BREVIS_JIT_EXPORT void brevis_jit_make_decoder(const brevis::JitSettings *settings,
                                               brevis::Result<std::unique_ptr<brevis::RegionDecoder>> *out) {
  auto decoder = brevis::JitDecoder::create(settings->notice, settings->emitLlvm, settings->cacheDir,
                                            brevis::JitDecoder::kMaxSessionNodes, settings->shapeIdentity);
  if (!decoder) *out = decoder.error();
  else *out = std::unique_ptr<brevis::RegionDecoder>(std::move(*decoder));
}
