#pragma once
// Compressing a file into an archive: synthesize its program, verify it and add it to an
// archive builder. brevisc compress and the Python module compress through this.
//
//   auto builder = brevis::ArchiveBuilder::create("model.safetensors.brv", /*overwrite=*/false);
//   auto added = brevis::addCompressed(**builder, "model.safetensors", bytes, settings);
//   (*builder)->finish(/*directory=*/false);
#include "lang/Result.h"
#include "runtime/common/Bytes.h"
#include "synth/Strategy.h"
#include "tools/api/ArchiveBuilder.h"

#include <atomic>
#include <optional>
#include <string>

namespace brevis {

/// The payload name an archived program gives (`model.safetensors` -> `model.bdsl.bin`): what
/// `synth` would write beside `model.bdsl`. Compress and pack both store it, so that unpacking
/// and packing again gives back the same archive.
std::string archivedPayloadName(const std::string &sourceFileName);

struct CompressSettings {
  StrategyOptions strategy = strategyOptionsForLevel(kDefaultLevel);
  unsigned threads = 1;
  std::atomic<uint64_t> *synthesized = nullptr; ///< bytes synthesized so far (progress), if given
  std::atomic<uint64_t> *verified = nullptr;    ///< bytes verified so far (progress), if given
};

/// What one added file came to.
struct CompressedMember {
  uint64_t originalBytes = 0;
  uint64_t payloadBytes = 0;
  size_t regions = 0;
  std::optional<std::string> notSafetensorsReason; ///< set when it was coded as one byte stream
};

/// The program of `bytes`, the file `path` of an archive (its base name is the source name the
/// program records), ready to be added; `notSafetensorsReason` is set when it is one byte stream.
/// Where `streamTo` can stream, the payload is written into it as it is made (the member comes
/// back `streamed`, to be added to that builder next).
Result<MemberSource> synthesizeMember(const std::string &path, ByteSpan bytes, const CompressSettings &settings,
                                      std::optional<std::string> *notSafetensorsReason = nullptr,
                                      ArchiveBuilder *streamTo = nullptr);

/// synthesizeMember, then verified and added to `builder`.
Result<CompressedMember> addCompressed(ArchiveBuilder &builder, const std::string &path, ByteSpan bytes,
                                       const CompressSettings &settings);

} // namespace brevis
