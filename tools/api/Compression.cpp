#include "tools/api/Compression.h"

#include "synth/Driver.h"

#include <filesystem>

namespace brevis {

namespace {
std::string baseNameOf(const std::string &path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}
} // namespace

std::string archivedPayloadName(const std::string &sourceFileName) {
  return std::filesystem::path(sourceFileName).replace_extension(".bdsl").string() + ".bin";
}

Result<MemberSource> synthesizeMember(const std::string &path, ByteSpan bytes, const CompressSettings &settings,
                                      std::optional<std::string> *notSafetensorsReason, ArchiveBuilder *streamTo) {
  auto strategy = makeStrategy(kDefaultStrategy, settings.strategy);
  if (!strategy) return strategy.error();
  const std::string name = baseNameOf(path);
  SynthOptions options;
  options.threads = settings.threads;
  options.progress = settings.synthesized;
  const bool streamed = streamTo && streamTo->canStream();
  if (streamed) options.payloadWriter = [streamTo](ByteSpan part) { return streamTo->appendPayload(part); };
  // The names `synth` and `unpack` use, so that unpack and pack give back this very archive.
  SynthOutput synth = synthesizeCheckpoint(bytes, name, archivedPayloadName(name), **strategy, options);
  if (synth.payloadError) return *synth.payloadError;
  if (notSafetensorsReason) *notSafetensorsReason = std::move(synth.notSafetensorsReason);
  MemberSource member{path, std::move(synth.checkpoint), Payload(std::move(synth.payload)), std::move(synth.digests)};
  member.streamed = streamed;
  return member;
}

Result<CompressedMember> addCompressed(ArchiveBuilder &builder, const std::string &path, ByteSpan bytes,
                                       const CompressSettings &settings) {
  CompressedMember out;
  auto member = synthesizeMember(path, bytes, settings, &out.notSafetensorsReason, &builder);
  if (!member) return member.error();
  out.originalBytes = bytes.size();
  out.payloadBytes = member->checkpoint.payloadSize;
  out.regions = member->checkpoint.regions.size();
  DecodeOptions verifying;
  verifying.threads = settings.threads;
  verifying.progress = settings.verified;
  BREVIS_TRY(builder.add(*member, verifying));
  return out;
}

} // namespace brevis
