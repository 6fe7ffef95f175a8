#include "tools/api/Decoding.h"

#include "runtime/execution/CheckpointRunner.h"
#include "tools/api/DecoderFactory.h"

namespace brevis {

Result<void> decodeJobs(std::span<const DecodeJob> jobs, const DecodeOptions &options) {
  auto decoder = makeRegionDecoder(options.jit, options.notice);
  // Named by the first file, as every other decoding error is.
  if (!decoder) return jobs.empty() ? decoder.error() : Error{jobs.front().label + ": " + decoder.error().message};
  return decodeJobs(jobs, **decoder, options);
}

Result<void> decodeCheckpoint(const Checkpoint &c, const Payload &payload, const DecodeOptions &options, ByteSink &sink,
                              std::vector<uint64_t> *regionDigests) {
  auto decoder = makeRegionDecoder(options.jit, options.notice);
  if (!decoder) return decoder.error();
  return runCheckpoint(c, payload, **decoder, sink, regionDigests);
}

} // namespace brevis
