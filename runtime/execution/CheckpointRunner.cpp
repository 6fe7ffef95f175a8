#include "runtime/execution/CheckpointRunner.h"

#include "runtime/containers/Checksum.h"
#include "runtime/execution/Interpreter.h"
#include "runtime/execution/ParallelDecode.h"

#include <fmt/format.h>

namespace brevis {

namespace {

/// Forwards to another sink while counting and hashing what passes through.
class HashingSink final : public ByteSink {
public:
  explicit HashingSink(ByteSink &next) : next_(next) {}
  Result<void> write(const uint8_t *data, size_t size) override {
    hash_.update(data, size);
    written_ += size;
    return next_.write(data, size);
  }
  uint64_t written() const { return written_; }
  uint64_t digest() const { return hash_.digest(); }

private:
  ByteSink &next_;
  Xxh64Stream hash_;
  uint64_t written_ = 0;
};

} // namespace

Result<void> validatePayload(const Checkpoint &c, const Payload &payload) {
  if (payload.size() != c.payloadSize)
    return Error{fmt::format("payload {} has {} bytes, but the program expects {}", c.payloadFile, payload.size(),
                             c.payloadSize)};
  for (const auto &r : c.regions) {
    auto valid = validateForExecution(*r.program, payload);
    if (!valid) return Error{fmt::format("{}: {}", regionLabel(r), valid.error().message)};
  }
  return {};
}

Result<void> runCheckpoint(const Checkpoint &c, const Payload &payload, RegionDecoder &decoder, ByteSink &sink) {
  BREVIS_TRY(validatePayload(c, payload));
  BREVIS_TRY(decoder.prepare(c, payload));
  HashingSink out(sink);
  for (const auto &r : c.regions) {
    uint64_t before = out.written();
    auto decoded = decoder.decode(r, payload, out);
    if (!decoded) return Error{fmt::format("{}: {}", regionLabel(r), decoded.error().message)};
    if (out.written() - before != r.bytes.size)
      return Error{fmt::format("{} produced {} bytes instead of {}", regionLabel(r), out.written() - before,
                               r.bytes.size)};
  }
  if (out.written() != c.source.size)
    return Error{fmt::format("decoded {} bytes, but {} has {}", out.written(), c.source.fileName, c.source.size)};
  if (out.digest() != c.source.xxh64)
    return Error{fmt::format("decoded bytes do not match the checksum of {} (xxh64 {:#018x}, expected {:#018x})",
                             c.source.fileName, out.digest(), c.source.xxh64)};
  return {};
}

} // namespace brevis
