#include "model/checkpoint.h"

#include <filesystem>

#include "core/error.h"

namespace gossamer::model {

namespace {

namespace fs = std::filesystem;

struct Located {
  std::string config;
  std::string weights;  // .safetensors or .safetensors.index.json
};

std::string find_weights(const fs::path& dir) {
  if (fs::exists(dir / "model.safetensors.index.json")) return (dir / "model.safetensors.index.json").string();
  if (fs::exists(dir / "model.safetensors")) return (dir / "model.safetensors").string();
  return {};
}

Located locate(const std::string& path) {
  const fs::path dir(path);
  GOSSAMER_CHECK(fs::is_directory(dir), "model path '", path, "' is not a directory");
  if (fs::exists(dir / "config.json")) {
    const std::string weights = find_weights(dir);
    if (!weights.empty()) return {(dir / "config.json").string(), weights};
  }
  if (fs::exists(dir / "original" / "config.json")) {
    const std::string weights = find_weights(dir / "original");
    GOSSAMER_CHECK(!weights.empty(), (dir / "original").string(), ": no model.safetensors or index");
    return {(dir / "original" / "config.json").string(), weights};
  }
  GOSSAMER_CHECK(fs::exists(dir / "config.json"), path, ": no config.json (nor original/config.json)");
  GOSSAMER_THROW(path, ": no model.safetensors or model.safetensors.index.json beside config.json");
}

class TensorChecker {
 public:
  explicit TensorChecker(const TensorSource& source) : source_(source) {}

  TensorView dense(const std::string& name, const Shape& shape) const {
    TensorView view = get(name, shape);
    GOSSAMER_CHECK(view.dtype == DType::kBF16 || view.dtype == DType::kF32 || view.dtype == DType::kF16,
                   source_.location(name), ": tensor '", name, "' has dtype ", name_of(view.dtype),
                   " (expected bf16, f16 or f32)");
    return view;
  }
  TensorView bytes(const std::string& name, const Shape& shape) const {
    TensorView view = get(name, shape);
    GOSSAMER_CHECK(view.dtype == DType::kU8 || view.dtype == DType::kI8 || view.dtype == DType::kE8M0,
                   source_.location(name), ": tensor '", name, "' has dtype ", name_of(view.dtype),
                   " (expected u8 MXFP4 data)");
    view.dtype = DType::kU8;
    return view;
  }

 private:
  TensorView get(const std::string& name, const Shape& shape) const {
    GOSSAMER_CHECK(source_.contains(name), source_.description(), ": missing tensor '", name, "'");
    TensorView view = source_.tensor(name);
    GOSSAMER_CHECK(view.shape == shape, source_.location(name), ": tensor '", name, "' has shape ",
                   view.shape.to_string(), " but the config needs ", shape.to_string());
    return view;
  }
  const TensorSource& source_;
};

// Rows [begin, begin + count) of a row-major 2-D (or 1-D) view.
TensorView row_slice(const TensorView& view, int64_t begin, int64_t count) {
  TensorView slice = view;
  const int64_t row_elements = view.shape.rank == 1 ? 1 : view.shape[1];
  slice.data = static_cast<uint8_t*>(view.data) + begin * row_elements * size_of(view.dtype);
  slice.shape[0] = count;
  return slice;
}

std::string layer_name(const char* pattern, int layer) {
  std::string name = pattern;
  const auto at = name.find('#');
  return name.replace(at, 1, std::to_string(layer));
}

MxFp4Tensor mxfp4(const TensorChecker& check, const std::string& blocks, const std::string& scales, int64_t experts,
                  int64_t rows, int64_t cols) {
  return MxFp4Tensor{check.bytes(blocks, {experts, rows, cols / 32, 16}),
                     check.bytes(scales, {experts, rows, cols / 32})};
}

GptOssWeights map_hf(const GptOssConfig& c, const TensorChecker& check) {
  GptOssWeights w;
  const int64_t hidden = c.hidden_size, experts = c.num_experts, inter = c.intermediate_size;
  w.embedding = check.dense("model.embed_tokens.weight", {c.vocab_size, hidden});
  w.final_norm = check.dense("model.norm.weight", {hidden});
  w.unembedding = check.dense("lm_head.weight", {c.vocab_size, hidden});
  for (int layer = 0; layer < c.num_layers; ++layer) {
    auto name = [&](const char* pattern) { return layer_name(pattern, layer); };
    LayerWeights l;
    l.attn_norm = check.dense(name("model.layers.#.input_layernorm.weight"), {hidden});
    l.q_proj = check.dense(name("model.layers.#.self_attn.q_proj.weight"), {c.q_width(), hidden});
    l.q_bias = check.dense(name("model.layers.#.self_attn.q_proj.bias"), {c.q_width()});
    l.k_proj = check.dense(name("model.layers.#.self_attn.k_proj.weight"), {c.kv_width(), hidden});
    l.k_bias = check.dense(name("model.layers.#.self_attn.k_proj.bias"), {c.kv_width()});
    l.v_proj = check.dense(name("model.layers.#.self_attn.v_proj.weight"), {c.kv_width(), hidden});
    l.v_bias = check.dense(name("model.layers.#.self_attn.v_proj.bias"), {c.kv_width()});
    l.o_proj = check.dense(name("model.layers.#.self_attn.o_proj.weight"), {hidden, c.q_width()});
    l.o_bias = check.dense(name("model.layers.#.self_attn.o_proj.bias"), {hidden});
    l.sinks = check.dense(name("model.layers.#.self_attn.sinks"), {c.num_q_heads});
    l.mlp_norm = check.dense(name("model.layers.#.post_attention_layernorm.weight"), {hidden});
    l.router = check.dense(name("model.layers.#.mlp.router.weight"), {experts, hidden});
    l.router_bias = check.dense(name("model.layers.#.mlp.router.bias"), {experts});
    l.gate_up = mxfp4(check, name("model.layers.#.mlp.experts.gate_up_proj_blocks"),
                      name("model.layers.#.mlp.experts.gate_up_proj_scales"), experts, 2 * inter, hidden);
    l.gate_up_bias = check.dense(name("model.layers.#.mlp.experts.gate_up_proj_bias"), {experts, 2 * inter});
    l.down = mxfp4(check, name("model.layers.#.mlp.experts.down_proj_blocks"),
                   name("model.layers.#.mlp.experts.down_proj_scales"), experts, hidden, inter);
    l.down_bias = check.dense(name("model.layers.#.mlp.experts.down_proj_bias"), {experts, hidden});
    w.layers.push_back(l);
  }
  return w;
}

GptOssWeights map_original(const GptOssConfig& c, const TensorChecker& check) {
  GptOssWeights w;
  const int64_t hidden = c.hidden_size, experts = c.num_experts, inter = c.intermediate_size;
  w.embedding = check.dense("embedding.weight", {c.vocab_size, hidden});
  w.final_norm = check.dense("norm.scale", {hidden});
  w.unembedding = check.dense("unembedding.weight", {c.vocab_size, hidden});
  for (int layer = 0; layer < c.num_layers; ++layer) {
    auto name = [&](const char* pattern) { return layer_name(pattern, layer); };
    LayerWeights l;
    l.attn_norm = check.dense(name("block.#.attn.norm.scale"), {hidden});
    const TensorView qkv = check.dense(name("block.#.attn.qkv.weight"), {c.qkv_width(), hidden});
    const TensorView qkv_bias = check.dense(name("block.#.attn.qkv.bias"), {c.qkv_width()});
    l.q_proj = row_slice(qkv, 0, c.q_width());
    l.k_proj = row_slice(qkv, c.q_width(), c.kv_width());
    l.v_proj = row_slice(qkv, c.q_width() + c.kv_width(), c.kv_width());
    l.q_bias = row_slice(qkv_bias, 0, c.q_width());
    l.k_bias = row_slice(qkv_bias, c.q_width(), c.kv_width());
    l.v_bias = row_slice(qkv_bias, c.q_width() + c.kv_width(), c.kv_width());
    l.o_proj = check.dense(name("block.#.attn.out.weight"), {hidden, c.q_width()});
    l.o_bias = check.dense(name("block.#.attn.out.bias"), {hidden});
    l.sinks = check.dense(name("block.#.attn.sinks"), {c.num_q_heads});
    l.mlp_norm = check.dense(name("block.#.mlp.norm.scale"), {hidden});
    l.router = check.dense(name("block.#.mlp.gate.weight"), {experts, hidden});
    l.router_bias = check.dense(name("block.#.mlp.gate.bias"), {experts});
    l.gate_up = mxfp4(check, name("block.#.mlp.mlp1_weight.blocks"), name("block.#.mlp.mlp1_weight.scales"), experts,
                      2 * inter, hidden);
    l.gate_up_bias = check.dense(name("block.#.mlp.mlp1_bias"), {experts, 2 * inter});
    l.down = mxfp4(check, name("block.#.mlp.mlp2_weight.blocks"), name("block.#.mlp.mlp2_weight.scales"), experts,
                   hidden, inter);
    l.down_bias = check.dense(name("block.#.mlp.mlp2_bias"), {experts, hidden});
    w.layers.push_back(l);
  }
  return w;
}

}  // namespace

GptOssWeights map_weights(const GptOssConfig& config, const TensorSource& source) {
  const TensorChecker check(source);
  return config.layout == CheckpointLayout::kOriginal ? map_original(config, check) : map_hf(config, check);
}

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string& dir) {
  const Located located = locate(dir);
  auto checkpoint = std::unique_ptr<Checkpoint>(new Checkpoint());
  checkpoint->dir_ = dir;
  checkpoint->config_ = GptOssConfig::from_file(located.config);
  checkpoint->archive_ = SafetensorsArchive::open(located.weights);
  checkpoint->weights_ = map_weights(checkpoint->config_, checkpoint->archive_);
  return checkpoint;
}

}  // namespace gossamer::model
