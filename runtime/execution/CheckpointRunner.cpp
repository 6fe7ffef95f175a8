#include "runtime/execution/CheckpointRunner.h"

#include "runtime/containers/Checksum.h"
#include "runtime/execution/HashingSink.h"
#include "runtime/execution/Interpreter.h"
#include "runtime/execution/ParallelDecode.h"

#include <fmt/format.h>

#include <algorithm>

namespace brevis {

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

Result<void> runCheckpoint(const Checkpoint &c, const Payload &payload, RegionDecoder &decoder, ByteSink &sink,
                           std::vector<uint64_t> *regionDigests) {
  BREVIS_TRY(validatePayload(c, payload));
  BREVIS_TRY(decoder.prepare(c, payload));
  HashingSink<Xxh64Stream> out(sink);
  HashingSink<Xxh3Stream> piece(out);
  std::vector<uint64_t> pieceHashes;
  for (const auto &r : c.regions) {
    uint64_t before = out.written();
    Result<void> decoded;
    if (!regionDigests) {
      decoded = decoder.decode(r, payload, out);
    } else {
      // Pieces of kDigestPieceBytes, hashed as decompression hashes them (a multiple of every
      // word size, so a piece is whole words).
      const StreamType type = streamTypeOf(*r.program);
      const uint64_t pieceWords = kDigestPieceBytes / containerBytes(type.width);
      pieceHashes.clear();
      for (uint64_t first = 0; decoded && first < type.length; first += pieceWords) {
        piece.restartHash();
        decoded = decoder.decodeWords(r, payload, first, std::min(pieceWords, type.length - first), piece);
        pieceHashes.push_back(piece.digest());
      }
      regionDigests->push_back(combinePieceHashes(pieceHashes));
    }
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
