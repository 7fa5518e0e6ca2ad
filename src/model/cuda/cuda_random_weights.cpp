// CudaWeights::random: dummy weights generated on the GPU (kernels/random_fill.h), for benchmarks.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "kernels/fp8_tiled.h"
#include "kernels/mxfp4_tiled.h"
#include "kernels/random_fill.h"
#include "model/cuda/cuda_weights.h"

namespace gossamer::model::cuda {

namespace {

constexpr int kBlock = 128;

// FP8 experts with the values of MXFP4 experts `mxfp4` ([E] × rows × cols, mxfp4_tiled.h), converted on the GPU
// (kernels::launch_mxfp4_tiled_to_fp8: the rule of kernels/mxfp4_convert.h, what --weights fp8 holds for a
// checkpoint's MXFP4 experts); the bias is copied. Adds the new buffers' bytes to `counter`.
DeviceExperts fp8_experts_of(const DeviceExperts& mxfp4, int64_t num_experts, int64_t rows, int64_t cols,
                             uint64_t& counter) {
  GOSSAMER_CHECK(mxfp4.mxfp4, "fp8_experts_of: the source experts are not MXFP4");
  DeviceExperts experts;
  experts.weight.ensure(static_cast<size_t>(num_experts * kernels::fp8_tiled_group_bytes(rows, cols)));
  experts.scales.ensure(
      static_cast<size_t>(num_experts * ((rows + kBlock - 1) / kBlock) * ((cols + kBlock - 1) / kBlock)) *
      sizeof(float));
  kernels::launch_mxfp4_tiled_to_fp8(mxfp4.weight.get<uint8_t>(), experts.weight.get<uint8_t>(),
                                     experts.scales.get<float>(), static_cast<int>(num_experts), static_cast<int>(rows),
                                     static_cast<int>(cols), nullptr);
  experts.bias.ensure(mxfp4.bias.bytes());
  GOSSAMER_CUDA_CHECK(cudaMemcpy(experts.bias.get(), mxfp4.bias.get(), mxfp4.bias.bytes(), cudaMemcpyDeviceToDevice));
  GOSSAMER_CUDA_CHECK(cudaDeviceSynchronize());
  counter += experts.weight.bytes() + experts.scales.bytes() + experts.bias.bytes();
  return experts;
}

class RandomBuilder {
 public:
  RandomBuilder(uint64_t seed, uint64_t& counter) : seed_(seed), counter_(counter) {}

  // [count] elements, normal(mean, std) (or uniform [a, b)) in `type`: elements [first, first + count) of
  // the fill this call's seed draws (random_fill.h).
  DeviceBuffer fill(int64_t count, kernels::RandomFillType type, kernels::RandomDist dist, float a, float b,
                    float inv_scale = 1.0f, int64_t first = 0) {
    const size_t bytes = static_cast<size_t>(count) * (type == kernels::RandomFillType::kF32    ? 4
                                                       : type == kernels::RandomFillType::kBf16 ? 2
                                                                                                : 1);
    DeviceBuffer buffer(std::max<size_t>(bytes, 16));
    kernels::RandomFillParams p;
    p.out = buffer.get();
    p.count = count;
    p.type = type;
    p.dist = dist;
    p.a = a;
    p.b = b;
    p.inv_scale = inv_scale;
    p.seed = next_seed();
    p.first = first;
    kernels::launch_random_fill(p, nullptr);
    counter_ += buffer.bytes();
    return buffer;
  }
  DeviceBuffer bf16(int64_t count, float mean, float std, int64_t first = 0) {
    return fill(count, kernels::RandomFillType::kBf16, kernels::RandomDist::kNormal, mean, std, 1.0f, first);
  }
  // `groups` stacked [rows, cols] matrices with entries of standard deviation `std`: fp8 tile-major with a
  // constant block scale, or bf16 row-major.
  DeviceBuffer matrix(int64_t groups, int64_t rows, int64_t cols, float std, bool fp8, DeviceBuffer* scales) {
    if (!fp8) return bf16(groups * rows * cols, 0.0f, std);
    const float scale = 4.0f * std / kFp8E4M3Max;
    const int64_t blocks = groups * ((rows + kBlock - 1) / kBlock) * ((cols + kBlock - 1) / kBlock);
    *scales = fill(blocks, kernels::RandomFillType::kF32, kernels::RandomDist::kUniform, scale, scale);
    return fill(groups * kernels::fp8_tiled_group_bytes(rows, cols), kernels::RandomFillType::kFp8E4M3,
                kernels::RandomDist::kNormal, 0.0f, std, 1.0f / scale);
  }
  DeviceLinear linear(int64_t n, int64_t k, float std, bool fp8, bool bias) {
    DeviceLinear l;
    l.n = static_cast<int>(n);
    l.k = static_cast<int>(k);
    l.fp8 = fp8;
    l.weight = matrix(1, n, k, std, fp8, &l.scales);
    if (bias) l.bias = bf16(n, 0.0f, 0.1f);
    return l;
  }
  DeviceExperts experts(int64_t count, int64_t rows, int64_t cols, float std, bool fp8, bool mxfp4) {
    if (fp8 && !mxfp4) {
      // As from a checkpoint: random MXFP4 experts converted to FP8, so --weights fp8 and mxfp4 hold the same
      // expert values for a seed (and route alike: the GEMMs' work depends on the routing).
      DeviceExperts shipped = experts(count, rows, cols, std, true, true);
      const uint64_t transient = shipped.weight.bytes() + shipped.bias.bytes() + shipped.row_exponents.bytes();
      DeviceExperts converted = fp8_experts_of(shipped, count, rows, cols, counter_);
      counter_ -= transient;
      return converted;
    }
    DeviceExperts e;
    e.fp8 = fp8;
    e.mxfp4 = mxfp4;
    e.weight = mxfp4 ? mxfp4_matrix(count, rows, cols, std) : matrix(count, rows, cols, std, fp8, &e.scales);
    e.bias = bf16(count * rows, 0.0f, 0.1f);
    if (mxfp4) add_row_exponents(e, count, rows, cols, counter_);
    return e;
  }
  // Tiled MXFP4 experts: uniformly random code bytes (every e2m1 value equally likely in both nibbles: mean 0, RMS
  // √(68.5 / 8) ≈ 2.93 in fp4 units), one E8M0 exponent for all blocks so that the std is ≈ `std`, relaid on the GPU.
  // (Codes read from a uniform fp8 fill, as before 2026-12-07, had a low nibble of mean −0.28: every expert row
  // summed its input's mean into the same direction, the residual stream of every token drifted to it over the
  // layers and the dummy models routed every token of a step to nearly the same experts: 7.5 of 32 experts a layer
  // at 20b batch 64, 13 of 128 at 120b batch 256; docs/PERF.md, thirty-third session.)
  DeviceBuffer mxfp4_matrix(int64_t groups, int64_t rows, int64_t cols, float std) {
    uint64_t temporary = 0;
    std::swap(temporary, counter_);  // the checkpoint-layout staging is freed below
    DeviceBuffer blocks =
        fill(groups * rows * cols / 2, kernels::RandomFillType::kU8, kernels::RandomDist::kUniform, 0.0f, 256.0f);
    std::swap(temporary, counter_);
    DeviceBuffer scales(static_cast<size_t>(std::max<int64_t>(groups * rows * cols / 32, 16)));
    constexpr float kCodeRms = 2.926f;  // √(68.5 / 8): the RMS of the 16 e2m1 values
    const int e = std::clamp(127 + static_cast<int>(std::lround(std::log2(std / kCodeRms))), 1, 254);
    GOSSAMER_CUDA_CHECK(cudaMemset(scales.get(), e, scales.bytes()));
    DeviceBuffer tiled(static_cast<size_t>(groups * kernels::mxfp4_tiled_group_bytes(rows, cols)));
    kernels::launch_mxfp4_to_tiled(blocks.get<uint8_t>(), scales.get<uint8_t>(), tiled.get<uint8_t>(),
                                   static_cast<int>(groups), static_cast<int>(rows), static_cast<int>(cols), nullptr);
    GOSSAMER_CUDA_CHECK(cudaDeviceSynchronize());
    counter_ += tiled.bytes();
    return tiled;
  }

 private:
  uint64_t next_seed() { return seed_ ^ (++index_ * 0xD1B54A32D192ED03ull); }
  uint64_t seed_;
  uint64_t index_ = 0;
  uint64_t& counter_;
};

}  // namespace

CudaWeights CudaWeights::random(const GptOssConfig& config, uint64_t seed, WeightFormat format, int num_local_experts,
                                int64_t vocab_begin, int64_t vocab_rows) {
  const auto start = std::chrono::steady_clock::now();
  CudaWeights weights;
  weights.format = format;
  const bool fp8 = format != WeightFormat::kBf16, mxfp4 = format == WeightFormat::kMxfp4;
  RandomBuilder make(seed, weights.device_bytes);
  const int64_t hidden = config.hidden_size, inter = config.intermediate_size, experts = config.num_experts;
  const float inv_sqrt_hidden = 1.0f / std::sqrt(static_cast<float>(hidden));
  const int64_t rows = vocab_rows > 0 ? vocab_rows : config.vocab_size;
  GOSSAMER_CHECK(vocab_rows >= 0 && vocab_begin >= 0 && vocab_begin + rows <= config.vocab_size,
                 "random weights: vocabulary rows [", vocab_begin, ", ", vocab_begin + rows, ") outside [0, ",
                 config.vocab_size, ")");
  // [rows, hidden] bf16: rows [vocab_begin, vocab_begin + rows) of the whole vocabulary's fill
  weights.embedding = make.bf16(rows * hidden, 0.0f, 1.0f, vocab_begin * hidden);
  weights.embedding_rows = rows;
  weights.final_norm = make.bf16(hidden, 1.0f, 0.1f);
  weights.unembedding = make.linear(rows, hidden, inv_sqrt_hidden, fp8, false);
  for (int layer = 0; layer < config.num_layers; ++layer) {
    CudaLayer l;
    l.attn_norm = make.bf16(hidden, 1.0f, 0.1f);
    l.qkv = make.linear(config.qkv_width(), hidden, inv_sqrt_hidden, fp8, true);
    l.o = make.linear(hidden, config.q_width(), 1.0f / std::sqrt(static_cast<float>(config.q_width())), fp8, true);
    l.sinks = make.fill(config.num_q_heads, kernels::RandomFillType::kF32, kernels::RandomDist::kUniform, -2.0f, 4.0f);
    l.mlp_norm = make.bf16(hidden, 1.0f, 0.1f);
    l.router = make.linear(experts, hidden, inv_sqrt_hidden, false, true);  // bf16 in both formats
    const int64_t held = num_local_experts > 0 ? num_local_experts : experts;
    l.gate_up = make.experts(held, 2 * inter, hidden, 3.0f * inv_sqrt_hidden, fp8, mxfp4);
    l.down = make.experts(held, hidden, inter, 0.5f / std::sqrt(static_cast<float>(inter)), fp8, mxfp4);
    weights.layers.push_back(std::move(l));
  }
  GOSSAMER_CUDA_CHECK(cudaDeviceSynchronize());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  GOSSAMER_LOG_INFO("random weights (", weight_format_name(format),
                    ") made on the GPU: ", static_cast<double>(weights.device_bytes) / (1u << 30), " GiB in ", seconds,
                    " s");
  return weights;
}

}  // namespace gossamer::model::cuda
