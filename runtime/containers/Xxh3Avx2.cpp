// XXH3 with AVX2 (compiled with -mavx2; called only where the CPU has it).
#define BREVIS_XXH3_VARIANT Avx2
#include "runtime/containers/Xxh3Variant.inc"
