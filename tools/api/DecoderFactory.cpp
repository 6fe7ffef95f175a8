#include "tools/api/DecoderFactory.h"

#include "codegen/JitDecoder.h"
#include "runtime/execution/Interpreter.h"

namespace brevis {

Result<std::unique_ptr<RegionDecoder>> makeRegionDecoder(bool jit, std::function<void(const std::string &)> notice) {
  if (!jit) return std::unique_ptr<RegionDecoder>(std::make_unique<Interpreter>());
  auto decoder = JitDecoder::create(std::move(notice));
  if (!decoder) return decoder.error();
  return std::unique_ptr<RegionDecoder>(std::move(*decoder));
}

} // namespace brevis
