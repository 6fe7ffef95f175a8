#pragma once
// Decoding of the two fixed-width literal formats, `raw` and `bitpack` (lang/BitpackFormat.h,
// docs/format/literals.md). Both locate any word without decoding the ones before it, so after
// validation a decoder may read any range, in any order, unchecked. The narrow decoders feed the
// fused merge kernel: bit-packed words of up to 16 bits are unpacked a group of eight at a time
// (eight words of b bits fill exactly b bytes), with AVX-512 VBMI, BMI2 or plain shifts, chosen
// at run time.
#include "lang/Result.h"
#include "lang/StreamType.h"
#include "runtime/common/Bytes.h"

namespace brevis {

/// Checks a raw payload completely: its size for the type, and every word's range. The error
/// message completes a sentence whose subject is the literal ("... has the wrong size ...").
Result<void> validateRaw(ByteSpan payload, StreamType type);

/// Checks a bitpack payload completely: the bit count, the size and the padding bits. Errors as
/// validateRaw's.
Result<void> validateBitpack(ByteSpan payload, StreamType type);

/// Words [first, first + count) of a validated raw payload of `width`-bit words (count > 0).
void decodeRaw(const uint8_t *payload, unsigned width, uint64_t first, size_t count, uint64_t *out);

/// The same into narrow words (T = uint8_t, uint16_t or uint32_t; the width fits T).
template <typename T>
void decodeRawNarrow(const uint8_t *payload, unsigned width, uint64_t first, size_t count, T *out);

/// Words [first, first + count) of a validated bitpack payload (count > 0).
void decodeBitpack(const uint8_t *payload, uint64_t first, size_t count, uint64_t *out);

/// The same into narrow words (T = uint8_t, uint16_t or uint32_t; the words fit T).
template <typename T> void decodeBitpackNarrow(const uint8_t *payload, uint64_t first, size_t count, T *out);

} // namespace brevis
