#include "runtime/Checksum.h"

#include <xxhash.h>

namespace brevis {

uint64_t xxh64(ByteSpan data) { return XXH64(data.data(), data.size(), 0); }

struct Xxh64Stream::State {
  XXH64_state_t *s = XXH64_createState();
  ~State() { XXH64_freeState(s); }
};

Xxh64Stream::Xxh64Stream() : state_(std::make_unique<State>()) {
  if (!state_->s) throw std::bad_alloc();
  XXH64_reset(state_->s, 0);
}
Xxh64Stream::~Xxh64Stream() = default;
void Xxh64Stream::update(const uint8_t *data, size_t size) { XXH64_update(state_->s, data, size); }
uint64_t Xxh64Stream::digest() const { return XXH64_digest(state_->s); }

} // namespace brevis
