#include "model/shard_weights.h"

#include <cstring>
#include <vector>

#include "core/error.h"

namespace gossamer::model {

namespace {

// Owned byte buffers of the materialised slices (and the source's storage).
struct Storage {
  std::shared_ptr<const void> source;
  std::vector<std::vector<uint8_t>> buffers;

  TensorView keep(std::vector<uint8_t> bytes, DType dtype, Shape shape) {
    buffers.push_back(std::move(bytes));
    return TensorView{buffers.back().data(), dtype, shape, Device::kCpu};
  }
};

// Bytes [begin, begin + count) of each of `blocks` consecutive blocks of `block_bytes`, concatenated.
std::vector<uint8_t> gather_ranges(const void* source, int64_t blocks, int64_t block_bytes, int64_t begin,
                                   int64_t count) {
  std::vector<uint8_t> bytes(static_cast<size_t>(blocks * count));
  const auto* from = static_cast<const uint8_t*>(source);
  for (int64_t b = 0; b < blocks; ++b) {
    std::memcpy(bytes.data() + b * count, from + b * block_bytes + begin, static_cast<size_t>(count));
  }
  return bytes;
}

// Entries [begin, begin + count) along axis 0 of a view (rows of a matrix, a 1-D range, experts).
TensorView leading_slice(const TensorView& tensor, int64_t begin, int64_t count) {
  TensorView slice = tensor;
  const int64_t per_entry_bits = tensor.num_elements() / tensor.shape[0] * bits_of(tensor.dtype);
  slice.data = static_cast<uint8_t*>(tensor.data) + begin * per_entry_bits / 8;
  slice.shape[0] = count;
  return slice;
}

// Columns [begin, begin + count) of the last axis, for every leading index, copied (byte-exact).
TensorView column_slice(Storage& storage, const TensorView& tensor, int64_t begin, int64_t count) {
  const int last = tensor.shape.rank - 1;
  const int64_t cols = tensor.shape[last], element = size_of(tensor.dtype), rows = tensor.num_elements() / cols;
  std::vector<uint8_t> bytes = gather_ranges(tensor.data, rows, cols * element, begin * element, count * element);
  Shape shape = tensor.shape;
  shape[last] = count;
  return storage.keep(std::move(bytes), tensor.dtype, shape);
}

TensorView zeros_like(Storage& storage, const TensorView& tensor) {
  return storage.keep(std::vector<uint8_t>(static_cast<size_t>(tensor.num_bytes()), 0), tensor.dtype, tensor.shape);
}

// Rows [begin, begin + count) of every expert of a [E, rows, ...] tensor, copied.
TensorView expert_row_slice(Storage& storage, const TensorView& tensor, int64_t begin, int64_t count) {
  const int64_t experts = tensor.shape[0], rows = tensor.shape[1];
  const int64_t row_bytes = tensor.num_bytes() / (experts * rows);
  std::vector<uint8_t> bytes =
      gather_ranges(tensor.data, experts, rows * row_bytes, begin * row_bytes, count * row_bytes);
  Shape shape = tensor.shape;
  shape[1] = count;
  return storage.keep(std::move(bytes), tensor.dtype, shape);
}

// Columns of an MXFP4 tensor's groups: blocks [E, rows, G, 16] → [E, rows, g1 − g0, 16], scales likewise.
MxFp4Tensor mxfp4_column_slice(Storage& storage, const MxFp4Tensor& tensor, int64_t col_begin, int64_t col_count) {
  const int64_t g0 = col_begin / 32, groups = col_count / 32, all_groups = tensor.cols() / 32;
  const int64_t leading = tensor.num_experts() * tensor.rows();
  MxFp4Tensor out;
  std::vector<uint8_t> blocks = gather_ranges(tensor.blocks.data, leading, all_groups * 16, g0 * 16, groups * 16),
                       scales = gather_ranges(tensor.scales.data, leading, all_groups, g0, groups);
  out.blocks =
      storage.keep(std::move(blocks), tensor.blocks.dtype, Shape{tensor.num_experts(), tensor.rows(), groups, 16});
  out.scales = storage.keep(std::move(scales), tensor.scales.dtype, Shape{tensor.num_experts(), tensor.rows(), groups});
  return out;
}

MxFp4Tensor mxfp4_experts(const MxFp4Tensor& tensor, IndexRange experts) {
  return MxFp4Tensor{leading_slice(tensor.blocks, experts.begin, experts.size()),
                     leading_slice(tensor.scales, experts.begin, experts.size())};
}

}  // namespace

GptOssConfig shard_config(const GptOssConfig& config, const RankShard& shard) {
  GptOssConfig local = config;
  local.num_q_heads = static_cast<int32_t>(shard.q_heads.size());
  local.num_kv_heads = static_cast<int32_t>(shard.kv_heads.size());
  local.intermediate_size = static_cast<int32_t>(shard.intermediate.size());
  return local;
}

RankWeights shard_weights(const GptOssConfig& config, const GptOssWeights& weights, std::shared_ptr<const void> storage,
                          const ParallelLayout& layout, int32_t rank) {
  validate_layout(layout, config, -1);
  auto owned = std::make_shared<Storage>();
  owned->source = std::move(storage);
  RankWeights out;
  out.shard = shard_for(layout, config, rank);
  const RankShard& s = out.shard;
  const int64_t head_dim = config.head_dim;
  const int64_t i0 = s.intermediate.begin, local_inter = s.intermediate.size();
  if (!layout.expert_parallel && layout.tensor_parallel > 1) {
    GOSSAMER_CHECK(
        local_inter % 32 == 0, "tensor-parallel MoE over ", layout.tensor_parallel, " ranks gives ", local_inter,
        " intermediate columns per rank, not a multiple of the MXFP4 group of 32 (use --enable-expert-parallel)");
  }
  out.config = shard_config(config, s);
  out.weights.embedding = leading_slice(weights.embedding, s.vocab.begin, s.vocab.size());
  out.weights.final_norm = weights.final_norm;
  out.weights.unembedding = leading_slice(weights.unembedding, s.vocab.begin, s.vocab.size());
  const int64_t q0 = s.q_heads.begin * head_dim, q_width = s.q_heads.size() * head_dim;
  const int64_t kv0 = s.kv_heads.begin * head_dim, kv_width = s.kv_heads.size() * head_dim;
  for (const LayerWeights& w : weights.layers) {
    LayerWeights l = w;  // norms, router and its bias stay replicated views
    l.q_proj = leading_slice(w.q_proj, q0, q_width);
    l.k_proj = leading_slice(w.k_proj, kv0, kv_width);
    l.v_proj = leading_slice(w.v_proj, kv0, kv_width);
    l.q_bias = leading_slice(w.q_bias, q0, q_width);
    l.k_bias = leading_slice(w.k_bias, kv0, kv_width);
    l.v_bias = leading_slice(w.v_bias, kv0, kv_width);
    l.sinks = leading_slice(w.sinks, s.q_heads.begin, s.q_heads.size());
    l.o_proj = column_slice(*owned, w.o_proj, q0, q_width);
    if (!s.adds_replicated_bias) l.o_bias = zeros_like(*owned, w.o_bias);
    if (layout.expert_parallel) {  // whole local experts: views
      l.gate_up = mxfp4_experts(w.gate_up, s.experts);
      l.down = mxfp4_experts(w.down, s.experts);
      l.gate_up_bias = leading_slice(w.gate_up_bias, s.experts.begin, s.experts.size());
      l.down_bias = leading_slice(w.down_bias, s.experts.begin, s.experts.size());
    } else if (layout.tensor_parallel > 1) {  // every expert's local intermediate columns
      l.gate_up = MxFp4Tensor{expert_row_slice(*owned, w.gate_up.blocks, 2 * i0, 2 * local_inter),
                              expert_row_slice(*owned, w.gate_up.scales, 2 * i0, 2 * local_inter)};
      l.down = mxfp4_column_slice(*owned, w.down, i0, local_inter);
      l.gate_up_bias = column_slice(*owned, w.gate_up_bias, 2 * i0, 2 * local_inter);
      if (!s.adds_replicated_bias) l.down_bias = zeros_like(*owned, w.down_bias);
    }
    out.weights.layers.push_back(l);
  }
  out.storage = std::move(owned);
  return out;
}

}  // namespace gossamer::model
