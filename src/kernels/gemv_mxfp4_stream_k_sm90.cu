// MXFP4 decode GEMV (gemv_mxfp4.h), stream-K work split (GemvMxfp4Params::split = kGemvSplitStreamK).
//
// The work is U = slots × tiles × k_steps units (one unit = one 64×128 tile of mxfp4_tiled.h, a warp K step),
// numbered slot-major, then tile, then K step: unit u of slot s is its group's tile bytes at (u − s·tiles·k_steps)
// · 4352. The grid is the resident CTA slots (G = CTAs per SM × SMs, one wave) and CTA b takes units
// [⌊bU/G⌋, ⌊(b+1)U/G⌋): every CTA the same work ±1 unit, whatever the tile count (the tile split leaves the
// second wave or a third of the slots idle at the MoE decode shapes). U is known only on the device in
// grouped mode (the used slots), so each CTA computes its range after grouping the pairs.
//
// A CTA's range crosses tile boundaries: it is walked as segments (the part of one tile inside the range,
// block-uniform), and inside a segment its 8 warps take the units round robin, each through its own ring of
// kStages tiles as in gemv_mxfp4_sm90.cu. The ring is filled by a cursor that runs kStages units ahead across
// segment boundaries, so a new tile does not drain the pipeline. At a segment's end the warps' accumulators
// are summed in a fixed tree (shared memory, in the MMA D layout, 4 barriers); a segment that is the whole
// tile is written out by the first 128 threads (a D fragment each), otherwise they store its fp32 partial in
// the workspace (slot 0 for the CTA's first segment, 1 for its last: only those can be partial). After its last segment
// the CTA fences and counts its partials in, one counter per split tile (indexed by the tile's first CTA, which starts
// at most one split tile); the CTA that brings a counter to the tile's contributor count resets it to zero, sums the
// contributors' partials in CTA order and writes the tile. No CTA waits for another (no residency assumption), and the
// order of every sum is fixed: deterministic for a given SM count.
#include <cuda_bf16.h>

#include <algorithm>
#include <atomic>

#include "kernels/cuda_utils.h"
#include "kernels/gemv_mxfp4.h"
#include "kernels/gemv_mxfp4_step_sm90.cuh"
#include "kernels/gemv_mxfp4_stream_k.h"
#include "kernels/swiglu.h"

namespace gossamer::kernels {
namespace {

using namespace gemv_mxfp4_detail;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kMinCtasPerSm = 2;
constexpr int kStages = 3;
constexpr int kRingBytes = kWarps * kStages * kStageBytes;  // 104,448
constexpr int kFragments = kNTiles * 32;                    // float4 per warp tile in the D layout (2 KiB)
constexpr int kTreeBuffers = 4;
constexpr int kSmemBytes = kRingBytes + kTreeBuffers * kFragments * 16;  // 112,640 (dynamic): 2 CTAs per SM
constexpr int kCounterBytes = kGemvStreamKMaxCtas * 4;
static_assert(kGemvMxfp4WorkspaceBytes == kCounterBytes + int64_t{kGemvStreamKMaxCtas} * 2 * kFragments * 16,
              "gemv_mxfp4.h's workspace size is this layout");

// The unit a warp works on and where it lies: its tile's first unit ts and its slot. Advanced in the warp's
// order (round robin inside each segment, segments in order) without divisions.
struct Cursor {
  int u, ts, slot;
};

// The outputs of one D fragment (lane g, t of nt; only even g): v holds x rows 2t, 2t + 1 of column n (.x, .y)
// and of column n + 8 (.z, .w), nv the same of the odd neighbour (lane g + 1: columns n + 1, n + 9).
template <bool kSwiGlu>
__device__ __forceinline__ void write_fragment(const GemvMxfp4Params& p, float4 v, float4 nv, int group, int rows,
                                               const int8_t* pairs, int n, int t) {
  const bool grouped = p.topk_ids != nullptr;
#pragma unroll
  for (int h = 0; h < 2; ++h, n += 8) {
    if (n >= p.N) continue;
    float b0 = 0.f, b1 = 0.f;
    if (p.bias) {
      const uint32_t bb = *reinterpret_cast<const uint32_t*>(p.bias + static_cast<int64_t>(group) * p.N + n);
      b0 = __uint_as_float(bb << 16);
      b1 = __uint_as_float(bb & 0xFFFF0000u);
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int m = 2 * t + r;
      if (m >= rows) continue;
      const float v0 = (h == 0 ? (r == 0 ? v.x : v.y) : (r == 0 ? v.z : v.w)) + b0;
      const float v1 = (h == 0 ? (r == 0 ? nv.x : nv.y) : (r == 0 ? nv.z : nv.w)) + b1;
      uint16_t* out = p.out + static_cast<int64_t>(grouped ? pairs[m] : m) * p.ldc;
      if constexpr (kSwiGlu) {
        const __nv_bfloat16 y = __float2bfloat16_rn(swiglu_clamped(v0, v1));
        out[n / 2] = *reinterpret_cast<const uint16_t*>(&y);
      } else {
        *reinterpret_cast<__nv_bfloat162*>(out + n) = __floats2bfloat162_rn(v0, v1);
      }
    }
  }
}

// grid: x = G CTAs (≤ kGemvStreamKMaxCtas), one wave.
template <bool kSwiGlu>
__global__ void __launch_bounds__(kThreads, kMinCtasPerSm)
    gemv_mxfp4_stream_k_kernel(const GemvMxfp4Params p, int k_steps, int tiles) {
  // Dynamic: the warps' rings [warp][stage][4352 bytes], then the tree buffers [4][kFragments] float4.
  extern __shared__ __align__(16) uint8_t smem[];
  float4* tree = reinterpret_cast<float4*>(smem + kRingBytes);
  __shared__ int s_expert[kGemvMaxPairs];     // slot → local expert (group)
  __shared__ int64_t s_wbase[kGemvMaxPairs];  // slot → byte offset of its unit 0 from p.w, less 4352 · its first unit
  __shared__ int s_rows[kGemvMaxPairs];       // slot → rows (≤ kGemvMaxRows)
  __shared__ int8_t s_pair[kGemvMaxPairs][kGemvMaxRows];  // slot, row → pair (out row)
  __shared__ int8_t s_xrow[kGemvMaxPairs][kGemvMaxRows];  // slot, row → x row
  __shared__ int s_slots;
  __shared__ int s_split_tile[2];  // the tiles of this CTA's partial first and last segments, or −1

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const bool grouped = p.topk_ids != nullptr;
  const bool wait_first = grouped && !p.topk_from_earlier_kernel;
  if (wait_first) {
    pdl_wait();
    pdl_trigger();
  }

  // ---- the slots (warp 0): dense one of M rows; grouped each ≤ 8 pairs of one local expert, as gemv_fp8 ----
  if (warp == 0) {
    if (lane < 2) s_split_tile[lane] = -1;
    if (!grouped) {
      if (lane < kGemvMaxRows) s_pair[0][lane] = s_xrow[0][lane] = static_cast<int8_t>(lane);
      if (lane == 0) s_expert[0] = 0, s_rows[0] = p.M, s_slots = 1;
    } else {
      int e = -1;
      if (lane < p.num_pairs) {
        e = p.topk_ids[lane] - p.expert_begin;
        if (e < 0 || e >= p.num_local_experts) e = -1;
      }
      if (p.pair_row && blockIdx.x == 0 && lane < p.num_pairs) p.pair_row[lane] = e >= 0 ? lane : -1;
      const unsigned same = __match_any_sync(0xffffffffu, e >= 0 ? e : -1 - lane);
      const bool leader = e >= 0 && (same & ((1u << lane) - 1u)) == 0;
      const int chunks = leader ? (__popc(same) + kGemvMaxRows - 1) / kGemvMaxRows : 0;
      int incl = chunks;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int v = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += v;
      }
      unsigned members = same;
      for (int slot = incl - chunks; slot < incl; ++slot) {  // this leader's slots (none for other lanes)
        int r = 0;
        for (; members != 0u && r < kGemvMaxRows; ++r) {
          const int pair = __ffs(static_cast<int>(members)) - 1;
          s_pair[slot][r] = static_cast<int8_t>(pair);
          s_xrow[slot][r] = static_cast<int8_t>(pair / p.x_pair_divisor);
          members &= members - 1u;
        }
        s_rows[slot] = r;
        s_expert[slot] = e;
      }
      if (lane == 31) s_slots = incl;
    }
  }
  __syncthreads();

  // ---- this CTA's units [u0, u1) ----
  const int units_per_slot = tiles * k_steps;
  if (threadIdx.x < s_slots) {
    s_wbase[threadIdx.x] =
        s_expert[threadIdx.x] * mxfp4_tiled_group_bytes(p.N, p.K) - int64_t{kStageBytes} * threadIdx.x * units_per_slot;
  }
  const int64_t units = int64_t{s_slots} * units_per_slot;
  // NOTE: with more CTAs than units (grouped: fewer slots used than launched for) the extra CTAs idle, so that
  // every working CTA has ≥ 1 unit and the CTAs sharing a tile are exactly cta_of(its first) .. cta_of(its last).
  const int num_ctas = static_cast<int>(min(int64_t{gridDim.x}, units)), cta = static_cast<int>(blockIdx.x);
  const bool idle = cta >= num_ctas;
  const int u0 = idle ? 0 : static_cast<int>(cta * units / num_ctas);
  const int u1 = idle ? 0 : static_cast<int>((cta + 1) * units / num_ctas);
  auto cta_of = [&](int u) { return static_cast<int>(((u + 1) * int64_t{num_ctas} - 1) / units); };  // holds unit u
  auto advance = [&](Cursor& c) {
    c.u += kWarps;
    while (c.u >= c.ts + k_steps && c.ts + k_steps < u1) {  // past its segment and not the last one
      c.ts += k_steps;
      c.u = c.ts + warp;
      if (c.ts >= (c.slot + 1) * units_per_slot) ++c.slot;
    }
  };
  __syncthreads();
  const Cursor start = {u0 + warp - kWarps, u0 / k_steps * k_steps, u0 / units_per_slot};
  Cursor pf = start;  // the next unit to fetch
  advance(pf);

  // ---- the ring ----
  uint8_t* ring = smem + warp * kStages * kStageBytes;
  uint8_t* ring_lane = ring + lane * 16;
  auto issue = [&](int stage) {  // pf's tile into ring stage `stage`, then pf advances; one commit group per call
    if (pf.u < u1) {             // warp-uniform
      const uint8_t* src = p.w + s_wbase[pf.slot] + static_cast<int64_t>(pf.u) * kStageBytes + lane * 16;
      uint8_t* dst = ring_lane + stage * kStageBytes;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) cp_async_16(dst + 512 * c, src + 512 * c, true);
      if (lane < 16) cp_async_16(dst + 4096, src + 4096, true);
      advance(pf);
    }
    cp_async_commit();
  };
#pragma unroll
  for (int s = 0; s < kStages; ++s) issue(s);
  if (!wait_first) {
    pdl_wait();
    pdl_trigger();
  }

  // x of cursor c's unit: this lane's 4 × 8 bf16 of x row g (columns 128·step + 32j + 8t), zero outside.
  auto load_x = [&](const Cursor& c, uint32_t(&xr)[16]) {
    const bool live = c.u < u1 && g < s_rows[c.slot];
    const uint16_t* x_lane = p.x + static_cast<int64_t>(live ? s_xrow[c.slot][g] : 0) * p.ldx + 8 * t;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = (c.u - c.ts) * kKStep + 32 * j;
      if (live && col < p.K) {
        const uint4 a = __ldcg(reinterpret_cast<const uint4*>(x_lane + col));
        xr[4 * j] = a.x, xr[4 * j + 1] = a.y, xr[4 * j + 2] = a.z, xr[4 * j + 3] = a.w;
      } else {
        xr[4 * j] = xr[4 * j + 1] = xr[4 * j + 2] = xr[4 * j + 3] = 0u;
      }
    }
  };
  Cursor xc = start;  // the unit being consumed (x_raw holds its x)
  advance(xc);
  uint32_t x_raw[16];
  load_x(xc, x_raw);

  int* counters = reinterpret_cast<int*>(p.workspace);
  float4* partials = reinterpret_cast<float4*>(p.workspace + kCounterBytes);  // [cta][first, last][kFragments]
  int stage = 0;

  // ---- segments: the part of one tile in [u0, u1) each (block-uniform) ----
#pragma unroll 1
  for (int tile = u0 / k_steps; tile * k_steps < u1; ++tile) {
    const int ts = tile * k_steps, a = max(u0, ts), e = min(u1, ts + k_steps);
    float acc[kNTiles][4] = {};
#pragma unroll 1
    for (int u = a + warp; u < e; u += kWarps) {  // the units of xc, in order
      cp_async_wait<kStages - 1>();
      __syncwarp();  // the scale bytes were copied by lanes 0..15
      const uint8_t* st = ring + stage * kStageBytes;
      uint32_t sw[kChunks];
      load_step_scales(st, g, sw);
      uint32_t xh[16];
      float inv_even, inv_odd;
      x_fragment(x_raw, xh, inv_even, inv_odd, t);
      advance(xc);
      load_x(xc, x_raw);
      mxfp4_tile_step(st, lane, sw, xh, inv_even, inv_odd, acc);
      __syncwarp();  // every lane has read the stage's scales before lanes 0..15 overwrite them
      issue(stage);
      stage = stage + 1 == kStages ? 0 : stage + 1;
    }

    // ---- sum over warps: ((w0 + w4) + (w2 + w6)) + ((w1 + w5) + (w3 + w7)), warp 0 ends with it ----
    auto put = [&](int buffer) {
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt)
        tree[(buffer * kNTiles + nt) * 32 + lane] = make_float4(acc[nt][0], acc[nt][1], acc[nt][2], acc[nt][3]);
    };
    auto add = [&](int buffer) {
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
        const float4 v = tree[(buffer * kNTiles + nt) * 32 + lane];
        acc[nt][0] += v.x, acc[nt][1] += v.y, acc[nt][2] += v.z, acc[nt][3] += v.w;
      }
    };
    __syncthreads();  // the previous segment's tree has been read
    if (warp >= 4) put(warp - 4);
    __syncthreads();
    if (warp < 4) add(warp);
    if (warp == 2 || warp == 3) put(warp);  // the buffer this warp alone has read
    __syncthreads();
    if (warp < 2) add(warp + 2);
    if (warp == 1) put(3);
    __syncthreads();

    // ---- the tile out (threads of even g), or its partial into the workspace: one D fragment per thread ----
    if (warp == 0) {
      add(3);
      put(0);
    }
    __syncthreads();
    const bool whole = a == ts && e == ts + k_steps;
    const int which = a == u0 ? 0 : 1;
    if (threadIdx.x == 0 && !whole) s_split_tile[which] = tile;
    if (threadIdx.x < kFragments) {
      const float4 v = tree[threadIdx.x];
      if (whole) {
        const int slot = tile / tiles, fg = lane / 4;
        const int n = (tile - slot * tiles) * kTileRows + 16 * warp + fg;  // warp = nt here
        if ((fg & 1) == 0) {
          write_fragment<kSwiGlu>(p, v, tree[threadIdx.x ^ 4], s_expert[slot], s_rows[slot], s_pair[slot], n, t);
        }
      } else {
        __stcg(partials + (2 * cta + which) * kFragments + threadIdx.x, v);
      }
    }
  }
  cp_async_wait<0>();

  // ---- count the partials in (warp 0); the last contributor of a tile sums them in CTA order ----
  __syncthreads();
  const int split_tile[2] = {s_split_tile[0], s_split_tile[1]};
  if (split_tile[0] < 0 && split_tile[1] < 0) return;
  __threadfence();  // every thread's partial stores are visible before the counts
  __syncthreads();
  if (warp != 0) return;
  bool last[2] = {false, false};
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    if (split_tile[i] < 0) continue;
    const int first = cta_of(split_tile[i] * k_steps);
    const int contributors = cta_of((split_tile[i] + 1) * k_steps - 1) - first + 1;
    int before = 0;
    if (lane == 0) {
      before = atomicAdd(counters + first, 1);
      if (before == contributors - 1) counters[first] = 0;  // all have counted in: zero for the next launch
    }
    last[i] = __shfl_sync(0xffffffffu, before, 0) == contributors - 1;
  }
  if (!last[0] && !last[1]) return;
  __threadfence();  // the counts seen before the partials are read
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    if (!last[i]) continue;
    const int tile = split_tile[i], ts = tile * k_steps;
    float4 acc[kNTiles] = {};
#pragma unroll 1
    for (int b = cta_of(ts), end = cta_of(ts + k_steps - 1); b <= end; ++b) {
      const int which = b * units / num_ctas >= ts ? 0 : 1;  // b starts inside the tile (its first segment) or before
      const float4* src = partials + (2 * b + which) * kFragments + lane;
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
        const float4 v = __ldcg(src + nt * 32);
        acc[nt].x += v.x, acc[nt].y += v.y, acc[nt].z += v.z, acc[nt].w += v.w;
      }
    }
    const int slot = tile / tiles, n0 = (tile - slot * tiles) * kTileRows;
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
      float4 nv;
      nv.x = __shfl_xor_sync(0xffffffffu, acc[nt].x, 4);
      nv.y = __shfl_xor_sync(0xffffffffu, acc[nt].y, 4);
      nv.z = __shfl_xor_sync(0xffffffffu, acc[nt].z, 4);
      nv.w = __shfl_xor_sync(0xffffffffu, acc[nt].w, 4);
      if ((g & 1) == 0) {
        write_fragment<kSwiGlu>(p, acc[nt], nv, s_expert[slot], s_rows[slot], s_pair[slot], n0 + 16 * nt + g, t);
      }
    }
  }
}

static_assert(kSmemBytes + 2 * 1024 <= 2 * 115 * 1024, "two CTAs per SM (228 KiB, 1 KiB reserved per CTA)");

// cudaFuncSetAttribute once per device, and the resident CTAs per SM it then has.
template <bool kSwiGlu>
int prepare_kernel(int device) {
  static std::atomic<int> ctas_per_sm[64] = {};
  std::atomic<int>& known = ctas_per_sm[device & 63];
  if (const int n = known.load(std::memory_order_acquire); n > 0) return n;
  GOSSAMER_CUDA_CHECK(cudaFuncSetAttribute(gemv_mxfp4_stream_k_kernel<kSwiGlu>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  int n = 0;
  GOSSAMER_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, gemv_mxfp4_stream_k_kernel<kSwiGlu>, kThreads, kSmemBytes));
  GOSSAMER_CHECK(n >= 1, "gemv_mxfp4 stream-K: the kernel does not fit an SM");
  known.store(n, std::memory_order_release);
  return n;
}

}  // namespace

int gemv_mxfp4_stream_k_resident(bool swiglu, int device, int sms) {
  return std::min(kGemvStreamKMaxCtas, (swiglu ? prepare_kernel<true>(device) : prepare_kernel<false>(device)) * sms);
}

void launch_gemv_mxfp4_stream_k(const GemvMxfp4Params& p, int tiles, int slots, int resident, cudaStream_t stream) {
  GOSSAMER_CHECK(p.workspace != nullptr && reinterpret_cast<uintptr_t>(p.workspace) % 16 == 0,
                 "gemv_mxfp4: stream-K needs a 16-byte aligned workspace of kGemvMxfp4WorkspaceBytes");
  GOSSAMER_CHECK(p.cluster == 0, "gemv_mxfp4: stream-K takes no cluster (", p.cluster, ")");
  const int k_steps = ceil_div(p.K, kKStep);
  const int64_t max_units = int64_t{slots} * tiles * k_steps;
  GOSSAMER_CHECK(max_units < (int64_t{1} << 30), "gemv_mxfp4: ", max_units, " K steps exceed stream-K's int range");
  const int ctas = static_cast<int>(std::min<int64_t>(resident, max_units));  // no CTA without work at the most

  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(ctas), 1, 1);
  cfg.blockDim = dim3(kThreads, 1, 1);
  cfg.dynamicSmemBytes = kSmemBytes;
  cfg.stream = stream;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = p.programmatic_launch ? 1 : 0;
  if (p.epilogue == GemmEpilogue::kSwiGlu) {
    GOSSAMER_CUDA_CHECK(cudaLaunchKernelEx(&cfg, gemv_mxfp4_stream_k_kernel<true>, p, k_steps, tiles));
  } else {
    GOSSAMER_CUDA_CHECK(cudaLaunchKernelEx(&cfg, gemv_mxfp4_stream_k_kernel<false>, p, k_steps, tiles));
  }
}

}  // namespace gossamer::kernels
