// A one-warpgroup probe of the bf16 wgmma wrappers (src/kernels/wgmma_bf16_sm90.cuh) that the prefill
// attention builds on, so a layout error (descriptor fields, swizzle, the transpose bit, the D → A fragment
// conversion) shows up on its own, apart from the attention pipeline.
#pragma once

#include <cstdint>

namespace gossamer::kernels::test {

// s = a · bᵀ and o = p · v (p rounded to bf16 through the D → A conversion), one CTA of 128 threads.
// a [64, 64], b [128, 64], p [64, 128] fp32 (taken as the S accumulator), v [128, 64] bf16; s [64, 128],
// o [64, 64] fp32. Device pointers; synchronises the device.
void wgmma_bf16_probe(const uint16_t* a, const uint16_t* b, const float* p, const uint16_t* v, float* s, float* o);

}  // namespace gossamer::kernels::test
