#include "runtime/containers/Checksum.h"

#include "runtime/containers/Xxh3Variants.h"

#include <xxhash.h>

#include <algorithm>

namespace brevis {

uint64_t xxh64(ByteSpan data) { return XXH64(data.data(), data.size(), 0); }

namespace {

/// XXH3 with the widest vectors the CPU has: AVX-512 hashes twice as many bytes per
/// instruction as the library's SSE2 build (hashing the output is ~8% of decompression).
struct Xxh3Functions {
  void (*update)(void *, const void *, size_t);
  uint64_t (*digest)(const void *);
  uint64_t (*oneShot)(const void *, size_t);
};

const Xxh3Functions &xxh3Functions() {
  static const Xxh3Functions chosen = []() -> Xxh3Functions {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f"))
      return {detail::xxh3UpdateAvx512, detail::xxh3DigestAvx512, detail::xxh3OneShotAvx512};
    if (__builtin_cpu_supports("avx2")) return {detail::xxh3UpdateAvx2, detail::xxh3DigestAvx2, detail::xxh3OneShotAvx2};
#endif
    return {[](void *s, const void *d, size_t n) { XXH3_64bits_update(static_cast<XXH3_state_t *>(s), d, n); },
            [](const void *s) -> uint64_t { return XXH3_64bits_digest(static_cast<const XXH3_state_t *>(s)); },
            [](const void *d, size_t n) -> uint64_t { return XXH3_64bits(d, n); }};
  }();
  return chosen;
}

} // namespace

uint64_t xxh3(ByteSpan data) { return xxh3Functions().oneShot(data.data(), data.size()); }

uint64_t combinePieceHashes(std::span<const uint64_t> pieceHashes) {
  Bytes list(pieceHashes.size() * 8);
  for (size_t i = 0; i < pieceHashes.size(); ++i)
    for (int b = 0; b < 8; ++b) list[8 * i + b] = static_cast<uint8_t>(pieceHashes[i] >> (8 * b));
  return xxh3(list);
}

uint64_t regionDigest(ByteSpan bytes) {
  std::vector<uint64_t> pieces;
  for (uint64_t p = 0; p < digestPieces(bytes.size()); ++p) pieces.push_back(xxh3(digestPiece(bytes, p)));
  return combinePieceHashes(pieces);
}

struct Xxh3Stream::State {
  XXH3_state_t *s = XXH3_createState();
  ~State() { XXH3_freeState(s); }
};

Xxh3Stream::Xxh3Stream() : state_(std::make_unique<State>()) {
  if (!state_->s) throw std::bad_alloc();
  XXH3_64bits_reset(state_->s);
}
Xxh3Stream::~Xxh3Stream() = default;
Xxh3Stream::Xxh3Stream(Xxh3Stream &&) noexcept = default;
Xxh3Stream &Xxh3Stream::operator=(Xxh3Stream &&) noexcept = default;
void Xxh3Stream::reset() { XXH3_64bits_reset(state_->s); }
void Xxh3Stream::update(const uint8_t *data, size_t size) { xxh3Functions().update(state_->s, data, size); }
uint64_t Xxh3Stream::digest() const { return xxh3Functions().digest(state_->s); }

struct Xxh64Stream::State {
  XXH64_state_t *s = XXH64_createState();
  ~State() { XXH64_freeState(s); }
};

Xxh64Stream::Xxh64Stream() : state_(std::make_unique<State>()) {
  if (!state_->s) throw std::bad_alloc();
  XXH64_reset(state_->s, 0);
}
Xxh64Stream::~Xxh64Stream() = default;
Xxh64Stream::Xxh64Stream(Xxh64Stream &&) noexcept = default;
Xxh64Stream &Xxh64Stream::operator=(Xxh64Stream &&) noexcept = default;
void Xxh64Stream::reset() { XXH64_reset(state_->s, 0); }
void Xxh64Stream::update(const uint8_t *data, size_t size) { XXH64_update(state_->s, data, size); }
uint64_t Xxh64Stream::digest() const { return XXH64_digest(state_->s); }

} // namespace brevis
