#pragma once
// xxHash64 (seed 0) of whole buffers and of streams, for tensor and file checksums.
#include "runtime/common/Bytes.h"

#include <algorithm>
#include <memory>
#include <span>

namespace brevis {

uint64_t xxh64(ByteSpan data);

/// XXH3-64 (seed 0): the archive's checksums and region digests; about twice xxh64's speed.
uint64_t xxh3(ByteSpan data);

/// Region digests (docs/format/archive.md): XXH3-64 of the list of the XXH3-64s of the region's
/// 2^24-byte pieces, so that pieces decoded in parallel are hashed where they are produced.
inline constexpr uint64_t kDigestPieceBytes = uint64_t{1} << 24;
/// The digest from the pieces' hashes, in order.
uint64_t combinePieceHashes(std::span<const uint64_t> pieceHashes);
/// The digest of a whole region's bytes.
uint64_t regionDigest(ByteSpan bytes);
/// The pieces of a region of `bytes` bytes (none when it is empty).
inline uint64_t digestPieces(uint64_t bytes) { return (bytes + kDigestPieceBytes - 1) / kDigestPieceBytes; }
/// Piece `piece` of a region's bytes (the last may be shorter).
inline ByteSpan digestPiece(ByteSpan region, uint64_t piece) {
  const uint64_t at = piece * kDigestPieceBytes;
  return region.subspan(at, std::min<uint64_t>(kDigestPieceBytes, region.size() - at));
}
/// The number of piece hashes an archive's index holds for a region of `bytes` bytes: its
/// pieces when it has more than one, else none (its digest alone checks it).
inline uint64_t indexedPieces(uint64_t bytes) { return digestPieces(bytes) > 1 ? digestPieces(bytes) : 0; }

class Xxh3Stream {
public:
  Xxh3Stream();
  ~Xxh3Stream();
  Xxh3Stream(Xxh3Stream &&) noexcept;
  Xxh3Stream &operator=(Xxh3Stream &&) noexcept;
  void reset();
  void update(const uint8_t *data, size_t size);
  uint64_t digest() const;

private:
  struct State;
  std::unique_ptr<State> state_;
};

class Xxh64Stream {
public:
  Xxh64Stream();
  ~Xxh64Stream();
  Xxh64Stream(Xxh64Stream &&) noexcept;
  Xxh64Stream &operator=(Xxh64Stream &&) noexcept;
  /// Starts over, as if newly made.
  void reset();
  void update(const uint8_t *data, size_t size);
  uint64_t digest() const;

private:
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace brevis
