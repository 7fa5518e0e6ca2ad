#include "model/cuda/cuda_weights.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/dtype.h"
#include "core/log.h"
#include "core/parallel.h"
#include "kernels/fp8_tiled.h"
#include "kernels/gemm_w4a8.h"  // launch_mxfp4_tiled_row_exponents
#include "kernels/mxfp4_convert.h"
#include "kernels/mxfp4_tiled.h"
#include "kernels/quantize_fp8.h"
#include "model/cpu_ops.h"

namespace gossamer::model::cuda {

namespace {

constexpr int kBlock = 128;

template <typename T>
DeviceBuffer upload_vector(const std::vector<T>& host, uint64_t& counter) {
  DeviceBuffer buffer(std::max<size_t>(host.size() * sizeof(T), 16));
  GOSSAMER_CUDA_CHECK(cudaMemcpy(buffer.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  counter += buffer.bytes();
  return buffer;
}

std::vector<uint16_t> to_bf16(const TensorView& tensor) {
  const std::vector<float> values = cpu::to_f32(tensor);
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = float_to_bf16(values[i]);
  return out;
}

// The biases of stacked linears, concatenated (empty when there are none).
DeviceBuffer upload_biases(const std::vector<TensorView>& biases, uint64_t& counter) {
  if (biases.empty()) return DeviceBuffer{};
  std::vector<uint16_t> bias;
  for (const TensorView& part : biases) {
    const auto values = to_bf16(part);
    bias.insert(bias.end(), values.begin(), values.end());
  }
  return upload_vector(bias, counter);
}

// Rows of several dense [rows_i, K] views stacked: the fused QKV is q | k | v.
struct StackedRows {
  std::vector<TensorView> parts;
  int64_t rows() const {
    int64_t total = 0;
    for (const TensorView& part : parts) total += part.shape[0];
    return total;
  }
  void load(int64_t row, float* out) const {
    for (const TensorView& part : parts) {
      if (row < part.shape[0]) return cpu::load_row(part, row, out);
      row -= part.shape[0];
    }
  }
};

// Dense weight → bf16 (the rows stacked), with the stacked biases.
DeviceLinear bf16_linear(const StackedRows& rows, const std::vector<TensorView>& biases, uint64_t& counter) {
  DeviceLinear linear;
  linear.fp8 = false;
  linear.n = static_cast<int>(rows.rows());
  linear.k = static_cast<int>(rows.parts.front().shape[1]);
  const int64_t n = linear.n, k = linear.k;
  std::vector<uint16_t> weight(static_cast<size_t>(n * k));
  parallel_for(n, 64, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(k));
    for (int64_t r = begin; r < end; ++r) {
      rows.load(r, row.data());
      for (int64_t c = 0; c < k; ++c)
        weight[static_cast<size_t>(r * k + c)] = float_to_bf16(row[static_cast<size_t>(c)]);
    }
  });
  linear.weight = upload_vector(weight, counter);
  linear.bias = upload_biases(biases, counter);
  return linear;
}

// Dense weight → FP8 e4m3 with one fp32 scale per 128×128 block: scale = amax / 448, q = fp8(w / scale).
DeviceLinear quantize_linear(const StackedRows& rows, const std::vector<TensorView>& biases, uint64_t& counter) {
  DeviceLinear linear;
  linear.n = static_cast<int>(rows.rows());
  linear.k = static_cast<int>(rows.parts.front().shape[1]);
  const int64_t n = linear.n, k = linear.k, row_blocks = (n + kBlock - 1) / kBlock,
                col_blocks = (k + kBlock - 1) / kBlock;
  // Written straight into the tile-major layout (padding stays zero).
  std::vector<uint8_t> weight(static_cast<size_t>(kernels::fp8_tiled_group_bytes(n, k)), 0);
  const int64_t k_padded = kernels::fp8_tiled_pad(k);
  std::vector<float> scales(static_cast<size_t>(row_blocks * col_blocks));
  parallel_for(row_blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> block(static_cast<size_t>(kBlock * k));
    for (int64_t rb = begin; rb < end; ++rb) {
      const int64_t row0 = rb * kBlock, count = std::min<int64_t>(kBlock, n - row0);
      for (int64_t r = 0; r < count; ++r) rows.load(row0 + r, block.data() + r * k);
      for (int64_t cb = 0; cb < col_blocks; ++cb) {
        const int64_t col0 = cb * kBlock, width = std::min<int64_t>(kBlock, k - col0);
        scales[static_cast<size_t>(rb * col_blocks + cb)] = kernels::quantize_fp8_weight_block_cpu(
            block.data() + col0, k, count, width, [&](int64_t r, int64_t c, uint8_t q) {
              weight[static_cast<size_t>(kernels::fp8_tiled_offset(row0 + r, col0 + c, k_padded))] = q;
            });
      }
    }
  });
  linear.weight = upload_vector(weight, counter);
  linear.scales = upload_vector(scales, counter);
  linear.bias = upload_biases(biases, counter);
  return linear;
}

// MXFP4 experts → bf16, decoded exactly on the host one expert at a time: [E, rows, cols] bf16.
DeviceExperts bf16_experts(const MxFp4Tensor& tensor, const TensorView& bias, uint64_t& counter) {
  DeviceExperts experts;
  experts.fp8 = false;
  const int64_t e = tensor.num_experts(), per_expert = tensor.rows() * tensor.cols();
  experts.weight.ensure(static_cast<size_t>(e * per_expert) * 2);
  std::vector<float> decoded(static_cast<size_t>(per_expert));
  std::vector<uint16_t> bits(static_cast<size_t>(per_expert));
  for (int64_t expert = 0; expert < e; ++expert) {
    cpu::decode_mxfp4_expert(tensor, expert, decoded.data());
    parallel_for(per_expert, int64_t{1} << 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        bits[static_cast<size_t>(i)] = float_to_bf16(decoded[static_cast<size_t>(i)]);
    });
    GOSSAMER_CUDA_CHECK(cudaMemcpy(experts.weight.get<uint16_t>() + expert * per_expert, bits.data(),
                                   static_cast<size_t>(per_expert) * 2, cudaMemcpyHostToDevice));
  }
  counter += experts.weight.bytes();
  experts.bias = upload_vector(to_bf16(bias), counter);
  return experts;
}

DeviceExperts convert_experts(const MxFp4Tensor& tensor, const TensorView& bias, uint64_t& counter) {
  DeviceExperts experts;
  const int64_t e = tensor.num_experts(), rows = tensor.rows(), cols = tensor.cols();
  DeviceBuffer blocks(static_cast<size_t>(tensor.blocks.num_bytes())),
      scales(static_cast<size_t>(tensor.scales.num_bytes()));
  GOSSAMER_CUDA_CHECK(cudaMemcpy(blocks.get(), tensor.blocks.data, blocks.bytes(), cudaMemcpyHostToDevice));
  GOSSAMER_CUDA_CHECK(cudaMemcpy(scales.get(), tensor.scales.data, scales.bytes(), cudaMemcpyHostToDevice));
  experts.weight.ensure(static_cast<size_t>(e * rows * cols));
  experts.scales.ensure(static_cast<size_t>(e * ((rows + kBlock - 1) / kBlock) * ((cols + kBlock - 1) / kBlock)) *
                        sizeof(float));
  kernels::Mxfp4ToFp8Params params;
  params.blocks = blocks.get<uint8_t>();
  params.scales = scales.get<uint8_t>();
  params.out = experts.weight.get<uint8_t>();
  params.out_scales = experts.scales.get<float>();
  params.num_experts = static_cast<int>(e);
  params.rows = static_cast<int>(rows);
  params.cols = static_cast<int>(cols);
  kernels::launch_mxfp4_to_fp8(params, nullptr);
  // Row-major → tile-major (the conversion's output is the temporary; one tensor's worth at a time).
  DeviceBuffer tiled(static_cast<size_t>(e * kernels::fp8_tiled_group_bytes(rows, cols)));
  kernels::launch_fp8_to_tiled(experts.weight.get<uint8_t>(), tiled.get<uint8_t>(), static_cast<int>(e),
                               static_cast<int>(rows), static_cast<int>(cols), nullptr);
  GOSSAMER_CUDA_CHECK(cudaDeviceSynchronize());
  experts.weight = std::move(tiled);
  counter += experts.weight.bytes() + experts.scales.bytes();
  experts.bias = upload_vector(to_bf16(bias), counter);
  return experts;
}

// MXFP4 experts kept as shipped: checkpoint blocks and scales relaid tile-major on the GPU.
DeviceExperts mxfp4_experts(const MxFp4Tensor& tensor, const TensorView& bias, uint64_t& counter) {
  DeviceExperts experts;
  experts.mxfp4 = true;
  const int64_t e = tensor.num_experts(), rows = tensor.rows(), cols = tensor.cols();
  DeviceBuffer blocks(static_cast<size_t>(tensor.blocks.num_bytes())),
      scales(static_cast<size_t>(tensor.scales.num_bytes()));
  GOSSAMER_CUDA_CHECK(cudaMemcpy(blocks.get(), tensor.blocks.data, blocks.bytes(), cudaMemcpyHostToDevice));
  GOSSAMER_CUDA_CHECK(cudaMemcpy(scales.get(), tensor.scales.data, scales.bytes(), cudaMemcpyHostToDevice));
  experts.weight.ensure(static_cast<size_t>(e * kernels::mxfp4_tiled_group_bytes(rows, cols)));
  kernels::launch_mxfp4_to_tiled(blocks.get<uint8_t>(), scales.get<uint8_t>(), experts.weight.get<uint8_t>(),
                                 static_cast<int>(e), static_cast<int>(rows), static_cast<int>(cols), nullptr);
  GOSSAMER_CUDA_CHECK(cudaDeviceSynchronize());
  counter += experts.weight.bytes();
  experts.bias = upload_vector(to_bf16(bias), counter);
  add_row_exponents(experts, e, rows, cols, counter);
  return experts;
}

}  // namespace

void add_row_exponents(DeviceExperts& mxfp4, int64_t num_experts, int64_t rows, int64_t cols, uint64_t& counter) {
  mxfp4.row_exponents.ensure(static_cast<size_t>(num_experts * rows));
  kernels::launch_mxfp4_tiled_row_exponents(mxfp4.weight.get<uint8_t>(), static_cast<int>(num_experts),
                                            static_cast<int>(rows), static_cast<int>(cols),
                                            mxfp4.row_exponents.get<uint8_t>(), nullptr);
  GOSSAMER_CUDA_CHECK(cudaDeviceSynchronize());
  counter += mxfp4.row_exponents.bytes();
}

WeightFormat parse_weight_format(const std::string& name) {
  if (name == "fp8") return WeightFormat::kFp8;
  if (name == "bf16") return WeightFormat::kBf16;
  if (name == "mxfp4") return WeightFormat::kMxfp4;
  GOSSAMER_THROW("unknown weight format '", name, "' (expected fp8, bf16 or mxfp4)");
}

const char* weight_format_name(WeightFormat format) {
  switch (format) {
    case WeightFormat::kFp8: return "fp8";
    case WeightFormat::kBf16: return "bf16";
    case WeightFormat::kMxfp4: return "mxfp4";
  }
  return "?";
}

CudaWeights CudaWeights::upload(const GptOssConfig& config, const GptOssWeights& host, WeightFormat format) {
  const auto start = std::chrono::steady_clock::now();
  CudaWeights weights;
  weights.format = format;
  const bool fp8 = format != WeightFormat::kBf16;  // dense linears (mxfp4 keeps them fp8)
  uint64_t& bytes = weights.device_bytes;
  auto linear = [&](const StackedRows& rows, const std::vector<TensorView>& biases) {
    return fp8 ? quantize_linear(rows, biases, bytes) : bf16_linear(rows, biases, bytes);
  };
  auto experts = [&](const MxFp4Tensor& tensor, const TensorView& bias) {
    if (format == WeightFormat::kMxfp4) return mxfp4_experts(tensor, bias, bytes);
    return fp8 ? convert_experts(tensor, bias, bytes) : bf16_experts(tensor, bias, bytes);
  };
  weights.embedding = upload_vector(to_bf16(host.embedding), bytes);  // [rows of the view, hidden] bf16
  weights.embedding_rows = host.embedding.shape[0];
  weights.final_norm = upload_vector(to_bf16(host.final_norm), bytes);
  weights.unembedding = linear(StackedRows{{host.unembedding}}, {});
  for (int layer = 0; layer < config.num_layers; ++layer) {
    const LayerWeights& w = host.layers[static_cast<size_t>(layer)];
    CudaLayer l;
    l.attn_norm = upload_vector(to_bf16(w.attn_norm), bytes);
    l.qkv = linear(StackedRows{{w.q_proj, w.k_proj, w.v_proj}}, {w.q_bias, w.k_bias, w.v_bias});
    l.o = linear(StackedRows{{w.o_proj}}, {w.o_bias});
    l.sinks = upload_vector(cpu::to_f32(w.sinks), bytes);
    l.mlp_norm = upload_vector(to_bf16(w.mlp_norm), bytes);
    l.router = bf16_linear(StackedRows{{w.router}}, {w.router_bias}, bytes);
    l.gate_up = experts(w.gate_up, w.gate_up_bias);
    l.down = experts(w.down, w.down_bias);
    weights.layers.push_back(std::move(l));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    GOSSAMER_LOG_INFO("loading weights (", weight_format_name(format), "): layer ", layer + 1, "/", config.num_layers,
                      ", ", static_cast<double>(bytes) / (1u << 30), " GiB on the GPU, ", seconds, " s");
  }
  return weights;
}

}  // namespace gossamer::model::cuda
