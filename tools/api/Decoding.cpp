#include "tools/api/Decoding.h"

#include "runtime/execution/CheckpointRunner.h"
#include "tools/api/DecoderFactory.h"

namespace brevis {

namespace {

void reportSummary(const RegionDecoder &decoder, const DecodeOptions &options) {
  if (!options.summary) return;
  if (std::string line = decoder.summary(); !line.empty()) options.summary(line);
}

} // namespace

Result<void> decodeJobs(std::span<const DecodeJob> jobs, const DecodeOptions &options) {
  auto decoder = makeRegionDecoder(options.jit, options.notice, options.emitLlvm);
  // Named by the first file, as every other decoding error is.
  if (!decoder) return jobs.empty() ? decoder.error() : Error{jobs.front().label + ": " + decoder.error().message};
  auto done = decodeJobs(jobs, **decoder, options);
  reportSummary(**decoder, options);
  return done;
}

Result<void> decodeCheckpoint(const Checkpoint &c, const Payload &payload, const DecodeOptions &options, ByteSink &sink,
                              std::vector<uint64_t> *regionDigests, const CheckpointCheck &check) {
  auto decoder = makeRegionDecoder(options.jit, options.notice, options.emitLlvm);
  if (!decoder) return decoder.error();
  auto done = runCheckpoint(c, payload, **decoder, sink, regionDigests, check);
  reportSummary(**decoder, options);
  return done;
}

} // namespace brevis
