// XXH3 with AVX-512 (compiled with -mavx512f; called only where the CPU has it).
#define BREVIS_XXH3_VARIANT Avx512
#include "runtime/containers/Xxh3Variant.inc"
