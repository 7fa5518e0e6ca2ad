// The stream-K launch of the MXFP4 decode GEMV (gemv_mxfp4_stream_k_sm90.cu), called by launch_gemv_mxfp4
// (gemv_mxfp4_sm90.cu) after it has validated the parameters. Internal to the kernels library.
#pragma once

#include "core/cuda/cuda_types.h"  // cudaStream_t
#include "kernels/gemv_mxfp4.h"

namespace gossamer::kernels {

// The CTAs of one stream-K wave on `device` (`sms` SMs): resident CTAs per SM × sms, at most kGemvStreamKMaxCtas.
int gemv_mxfp4_stream_k_resident(bool swiglu, int device, int sms);

// Launches the stream-K kernel: `tiles` 64-row tiles per slot, `slots` the grid's slot bound (1 dense), on at
// most `resident` CTAs. p validated by launch_gemv_mxfp4; p.workspace as gemv_mxfp4.h says.
void launch_gemv_mxfp4_stream_k(const GemvMxfp4Params& p, int tiles, int slots, int resident, cudaStream_t stream);

}  // namespace gossamer::kernels
