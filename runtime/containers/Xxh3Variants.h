#pragma once
// XXH3-64 streaming functions per instruction set (Xxh3Variant.inc), over the library's
// XXH3_state_t passed as void*. Checksum.cpp picks one at run time; tests compare them.
#include <cstddef>
#include <cstdint>

namespace brevis::detail {

void xxh3UpdateAvx2(void *state, const void *data, size_t size);
uint64_t xxh3DigestAvx2(const void *state);
uint64_t xxh3OneShotAvx2(const void *data, size_t size);

void xxh3UpdateAvx512(void *state, const void *data, size_t size);
uint64_t xxh3DigestAvx512(const void *state);
uint64_t xxh3OneShotAvx512(const void *data, size_t size);

} // namespace brevis::detail
