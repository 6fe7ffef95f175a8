#pragma once
// Words from symbol indices. A `huffman` literal decodes each word as the index of its symbol
// (a byte where the alphabet has at most 256 words), and whoever reads the words maps indices
// through the alphabet: a load per word. For the small alphabets of float fields (an exponent
// with its top mantissa bits: mostly 20–100 symbols), a vector permutation maps 32 (16-bit
// words) or 64 (bytes) at a time.
#include <cstddef>
#include <cstdint>

namespace brevis {

/// Entries of a table mapByteSymbols takes: alphabets of up to this many 16-bit words.
inline constexpr size_t kSymbolMapEntries = 128;

/// out[i] = table[symbols[i]] for i < n. `table` holds kSymbolMapEntries words (those past the
/// alphabet's end 0); every symbol must be below kSymbolMapEntries.
void mapByteSymbols(const uint8_t *symbols, size_t n, const uint16_t *table, uint16_t *out);
/// The same, each word widened to 32 bits (a field of a wider word).
void mapByteSymbols(const uint8_t *symbols, size_t n, const uint16_t *table, uint32_t *out);
/// The same for words of at most 8 bits (every table entry below 256): a byte field such as
/// BF16's exponent, 64 symbols per permutation where the CPU has AVX-512 VBMI.
void mapByteSymbols(const uint8_t *symbols, size_t n, const uint16_t *table, uint8_t *out);

} // namespace brevis
