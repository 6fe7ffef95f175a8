#pragma once
// Other tensor compressors' fixed pipelines, written as Brevis programs, so that benchmarks
// compare against them through the same archive, decoders and checks:
//
//   zipnn     byte grouping: each float word split into its byte planes (BF16/F16: high and
//             low byte; F32: four), every plane Huffman-coded or kept raw, whichever is smaller
//             (ZipNN's scheme; it uses zstd's Huffman coder per plane).
//   dfloat11  BF16 only: the 8-bit exponent Huffman-coded, sign and mantissa stored as they are
//             (the DFloat11 scheme); other dtypes as one raw literal.
//
// Integer tensors and non-float regions are one literal, Huffman-coded or raw.
#include "lang/Ast.h"
#include "lang/DType.h"
#include "runtime/common/Bytes.h"

namespace brevis {

ExprPtr zipnnTensor(DType dtype, ByteSpan bytes, Bytes &payload);
ExprPtr dfloat11Tensor(DType dtype, ByteSpan bytes, Bytes &payload);

} // namespace brevis
