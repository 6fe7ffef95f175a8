#include "runtime/execution/CheckpointRunner.h"

#include "runtime/containers/Checksum.h"
#include "runtime/execution/DeclarationCheck.h"
#include "runtime/execution/HashingSink.h"
#include "runtime/execution/Interpreter.h"
#include "runtime/execution/ParallelDecode.h"

#include <fmt/format.h>

#include <algorithm>

namespace brevis {

namespace {

/// An error of region r's program, named by its region, and placed where it arose (a literal
/// whose bytes are wrong) or else at the region.
Error inRegion(const Region &r, const Error &e) {
  return Error{fmt::format("{}: {}", regionLabel(r), e.message), e.loc.valid() ? e.loc : r.loc};
}

} // namespace

Result<void> validatePayload(const Checkpoint &c, const Payload &payload) {
  if (payload.size() != c.payloadSize)
    return Error{fmt::format("payload {} has {} bytes, but the program declares {}", c.payloadFile, payload.size(),
                             c.payloadSize),
                 c.payloadLoc};
  for (const auto &r : c.regions) {
    auto valid = validateForExecution(*r.program, payload);
    if (!valid) return inRegion(r, valid.error());
  }
  return {};
}

namespace {

/// Where a word lies in its region: "element 5 [0, 5]" in a tensor (its index in each dimension
/// after the flat one), "byte 17" elsewhere.
std::string wordPlace(const Region &r, uint64_t word) {
  if (r.kind != RegionKind::Tensor) return fmt::format("byte {}", word);
  std::string place = fmt::format("element {}", word);
  if (r.shape.size() >= 2) {
    std::vector<uint64_t> index(r.shape.size());
    for (size_t d = r.shape.size(); d-- > 0;) {
      index[d] = r.shape[d] ? word % r.shape[d] : 0;
      word = r.shape[d] ? word / r.shape[d] : 0;
    }
    place += fmt::format(" [{}]", fmt::join(index, ", "));
  }
  return place;
}

uint64_t loadWord(const uint8_t *p, unsigned bytes) {
  uint64_t w = 0;
  for (unsigned i = bytes; i-- > 0;) w = w << 8 | p[i];
  return w;
}

/// The first word at which region r, decoded again piece by piece, differs from `original`
/// (as a sentence), or nullopt where none does.
Result<std::optional<std::string>> firstDifference(const Region &r, const Payload &payload, RegionDecoder &decoder,
                                                   ByteSpan original) {
  const StreamType type = streamTypeOf(*r.program);
  const unsigned wordBytes = containerBytes(type.width);
  const uint64_t pieceWords = kDigestPieceBytes / wordBytes;
  Bytes got;
  for (uint64_t first = 0; first < type.length; first += pieceWords) {
    const uint64_t n = std::min(pieceWords, type.length - first);
    got.clear();
    VectorSink sink(got);
    BREVIS_TRY(decoder.decodeWords(r, payload, first, n, sink));
    const ByteSpan want = original.subspan(r.bytes.offset + first * wordBytes, n * wordBytes);
    if (got.size() != want.size()) return std::optional<std::string>{}; // reported by the caller's size check
    auto [at, _] = std::mismatch(got.begin(), got.end(), want.begin());
    if (at == got.end()) continue;
    const uint64_t word = static_cast<uint64_t>(at - got.begin()) / wordBytes;
    const int digits = static_cast<int>(2 + 2 * wordBytes);
    return std::optional<std::string>{fmt::format(
        "{} differs from the original at {} (got {:#0{}x}, want {:#0{}x})", regionLabel(r), wordPlace(r, first + word),
        loadWord(got.data() + word * wordBytes, wordBytes), digits, loadWord(want.data() + word * wordBytes, wordBytes),
        digits)};
  }
  return std::optional<std::string>{};
}

/// The error for decoded bytes that are not the original's: at the first region that differs
/// from `original` where that is at hand (and is the file the program describes), else at
/// region `suspect` (when its digest told), else about the whole file.
Error mismatchError(const Checkpoint &c, const Payload &payload, RegionDecoder &decoder, const CheckpointCheck &check,
                    const Region *suspect, std::string fallback) {
  const bool haveOriginal = check.original.size() == c.source.size && xxh64(check.original) == c.source.xxh64;
  if (haveOriginal) {
    const Region *begin = suspect ? suspect : c.regions.data();
    const Region *end = suspect ? suspect + 1 : c.regions.data() + c.regions.size();
    for (const Region *r = begin; r != end; ++r) {
      auto found = firstDifference(*r, payload, decoder, check.original);
      if (!found) return inRegion(*r, found.error());
      if (*found) return Error{**found, r->loc};
    }
    if (suspect && suspect->digest) // the words are right: the digest written in the program is not
      return Error{fmt::format("{} rebuilds the original's bytes, but the digest the program gives it, {:#018x}, "
                               "is not theirs",
                               regionLabel(*suspect), *suspect->digest),
                   suspect->loc};
  }
  return Error{std::move(fallback), suspect ? suspect->loc : SourceLoc{}};
}

} // namespace

Result<uint64_t> decodeRegionPieces(const Region &r, const Payload &payload, RegionDecoder &decoder, ByteSink &sink) {
  // Pieces of kDigestPieceBytes, hashed as decompression hashes them (a multiple of every word
  // size, so a piece is whole words).
  HashingSink<Xxh3Stream> piece(sink);
  const StreamType type = streamTypeOf(*r.program);
  const uint64_t pieceWords = kDigestPieceBytes / containerBytes(type.width);
  std::vector<uint64_t> pieceHashes;
  for (uint64_t first = 0; first < type.length; first += pieceWords) {
    piece.restartHash();
    BREVIS_TRY(decoder.decodeWords(r, payload, first, std::min(pieceWords, type.length - first), piece));
    pieceHashes.push_back(piece.digest());
  }
  return combinePieceHashes(pieceHashes);
}

Result<void> runRegion(const Checkpoint &c, const Region &r, const Payload &payload, RegionDecoder &decoder,
                       ByteSink &sink, const CheckpointCheck &check) {
  if (auto valid = validateForExecution(*r.program, payload); !valid) return inRegion(r, valid.error());
  if (!check.verify || !r.digest) {
    if (auto decoded = decoder.decode(r, payload, sink); !decoded)
      return inRegion(r, decoded.error());
    return {};
  }
  auto digest = decodeRegionPieces(r, payload, decoder, sink);
  if (!digest) return inRegion(r, digest.error());
  if (*digest != *r.digest)
    return mismatchError(c, payload, decoder, check, &r,
                         fmt::format("{} does not rebuild its original bytes (digest {:#018x}, expected {:#018x})",
                                     regionLabel(r), *digest, *r.digest));
  return {};
}

Result<void> runCheckpoint(const Checkpoint &c, const Payload &payload, RegionDecoder &decoder, ByteSink &sink,
                           std::vector<uint64_t> *regionDigests, const CheckpointCheck &check) {
  BREVIS_TRY(validatePayload(c, payload));
  BREVIS_TRY(decoder.prepare(c, payload));
  HashingSink<Xxh64Stream> out(sink);
  const bool digests = regionDigests || (check.verify && std::any_of(c.regions.begin(), c.regions.end(),
                                                                      [](const Region &r) { return r.digest; }));
  for (const auto &r : c.regions) {
    uint64_t before = out.written();
    Result<void> decoded;
    uint64_t digest = 0;
    if (!digests) {
      decoded = decoder.decode(r, payload, out);
    } else if (auto pieces = decodeRegionPieces(r, payload, decoder, out)) {
      digest = *pieces;
    } else {
      decoded = pieces.error();
    }
    if (!decoded) return inRegion(r, decoded.error());
    if (out.written() - before != r.bytes.size)
      return Error{fmt::format("{} produced {} bytes instead of {}", regionLabel(r), out.written() - before,
                               r.bytes.size),
                   r.loc};
    if (!digests) continue;
    if (regionDigests) regionDigests->push_back(digest);
    if (check.verify && r.digest && digest != *r.digest)
      return mismatchError(c, payload, decoder, check, &r,
                           fmt::format("{} does not rebuild its original bytes (digest {:#018x}, expected {:#018x})",
                                       regionLabel(r), digest, *r.digest));
  }
  if (out.written() != c.source.size)
    return Error{fmt::format("decoded {} bytes, but {} has {}", out.written(), c.source.fileName, c.source.size)};
  const bool everyRegionChecked =
      std::all_of(c.regions.begin(), c.regions.end(), [](const Region &r) { return r.digest.has_value(); });
  if (check.verify && out.digest() != c.source.xxh64 && everyRegionChecked && !c.regions.empty())
    return Error{fmt::format("every region rebuilds the bytes its digest names, but the source checksum {:#018x} is not "
                             "theirs ({:#018x})",
                             c.source.xxh64, out.digest()),
                 c.sourceLoc};
  if (check.verify && out.digest() != c.source.xxh64)
    return mismatchError(c, payload, decoder, check, nullptr,
                         fmt::format("decoded bytes do not match the checksum of {} (xxh64 {:#018x}, expected {:#018x})",
                                     c.source.fileName, out.digest(), c.source.xxh64));
  if (const Region *h = headerRegion(c); h && check.verify) {
    // The bytes are the original's; the declarations must be what its header says (decoded again:
    // a header is small).
    Bytes header;
    VectorSink headerSink(header);
    if (auto decoded = decoder.decode(*h, payload, headerSink); !decoded)
      return inRegion(*h, decoded.error());
    if (auto errors = checkDeclarations(c, header); !errors.empty()) return errors.front();
  }
  return {};
}

} // namespace brevis
