#include "model/dummy_checkpoint.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/parallel.h"
#include "core/random.h"
#include "model/cpu_model.h"
#include "model/tensor_source.h"

namespace gossamer::model {

namespace {

GptOssConfig base_config() {
  GptOssConfig c;
  c.num_layers = 24;
  c.num_experts = 32;
  c.experts_per_token = 4;
  c.vocab_size = 201088;
  c.hidden_size = 2880;
  c.intermediate_size = 2880;
  c.head_dim = 64;
  c.num_q_heads = 64;
  c.num_kv_heads = 8;
  c.sliding_window = 128;
  c.rms_norm_eps = 1e-5f;
  c.swiglu_limit = 7.0f;
  c.rope_theta = 150000.0;
  c.rope_scaling_factor = 32.0;
  c.rope_original_max_positions = 4096;
  c.rope_beta_fast = 32.0;
  c.rope_beta_slow = 1.0;
  c.rope_truncate = false;
  c.max_position_embeddings = 131072;
  return c;
}

void alternate_layers(GptOssConfig& c) {
  c.layer_is_sliding.assign(static_cast<size_t>(c.num_layers), false);
  for (int32_t layer = 0; layer < c.num_layers; layer += 2) c.layer_is_sliding[static_cast<size_t>(layer)] = true;
}

enum class Fill { kNormal, kOnePlusNormal, kUniform };

// Fills `count` items in parallel chunks; item i of the stream uses draws [i·draws, (i+1)·draws) of one
// SplitMix64 sequence, so the result does not depend on the chunking.
template <typename Fn>
void fill_stream(uint64_t seed, int64_t count, uint64_t draws_per_item, const Fn& fill_item) {
  parallel_for(count, int64_t{1} << 20, [&](int64_t begin, int64_t end) {
    SplitMix64 rng(seed);
    rng.skip(static_cast<uint64_t>(begin) * draws_per_item);
    for (int64_t i = begin; i < end; ++i) fill_item(i, rng);
  });
}

SafetensorsWriter::Producer bf16_producer(uint64_t seed, Fill fill, double a, double b) {
  return [=](std::vector<uint8_t>& bytes) {
    const uint64_t draws = fill == Fill::kUniform ? 1 : 2;
    fill_stream(seed, static_cast<int64_t>(bytes.size() / 2), draws, [&](int64_t i, SplitMix64& rng) {
      double value = 0.0;
      switch (fill) {
        case Fill::kNormal: value = a * rng.normal(); break;
        case Fill::kOnePlusNormal: value = 1.0 + a * rng.normal(); break;
        case Fill::kUniform: value = rng.uniform(a, b); break;
      }
      const uint16_t bits = float_to_bf16(static_cast<float>(value));
      std::memcpy(&bytes[static_cast<size_t>(2 * i)], &bits, 2);
    });
  };
}

// MXFP4 blocks: uniform random codes. Scales: e8m0 exponents around `target_std / std(fp4 code)`.
SafetensorsWriter::Producer blocks_producer(uint64_t seed) {
  return [=](std::vector<uint8_t>& bytes) {
    const int64_t words = static_cast<int64_t>(bytes.size() / 8);
    fill_stream(seed, words, 1, [&](int64_t i, SplitMix64& rng) {
      const uint64_t word = rng.next();
      std::memcpy(&bytes[static_cast<size_t>(8 * i)], &word, 8);
    });
    SplitMix64 tail(seed);
    tail.skip(static_cast<uint64_t>(words));
    for (size_t i = static_cast<size_t>(words) * 8; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(tail.next());
  };
}

SafetensorsWriter::Producer scales_producer(uint64_t seed, double target_std) {
  // E[v²] of a uniform fp4 code is 68.5 / 8, so std(code) ≈ 2.926.
  const double exponent = std::log2(target_std / std::sqrt(68.5 / 8.0));
  const int low = static_cast<int>(std::floor(exponent));
  const double frac = exponent - low;
  return [=](std::vector<uint8_t>& bytes) {
    fill_stream(seed, static_cast<int64_t>(bytes.size()), 1, [&](int64_t i, SplitMix64& rng) {
      bytes[static_cast<size_t>(i)] = static_cast<uint8_t>(127 + low + (rng.uniform() < frac ? 1 : 0));
    });
  };
}

std::string layer_name(int layer, const char* suffix) {
  return "model.layers." + std::to_string(layer) + "." + suffix;
}

// Tensors built in memory, looked up by name.
class InMemoryTensors final : public TensorSource {
 public:
  // Generates every tensor and stores it by name.
  explicit InMemoryTensors(const std::vector<DummyTensor>& tensors) {
    for (const DummyTensor& tensor : tensors) {  // each producer fills its tensor in parallel
      Stored stored{tensor.dtype, tensor.shape,
                    std::vector<uint8_t>(static_cast<size_t>(tensor.shape.num_elements() * size_of(tensor.dtype)))};
      tensor.produce(stored.bytes);
      tensors_.emplace(tensor.name, std::move(stored));
    }
  }
  bool contains(const std::string& name) const override { return tensors_.count(name) != 0; }
  TensorView tensor(const std::string& name) const override {
    const Stored& stored = tensors_.at(name);
    return TensorView{const_cast<uint8_t*>(stored.bytes.data()), stored.dtype, stored.shape, Device::kCpu};
  }
  std::string location(const std::string&) const override { return "<in-memory dummy weights>"; }
  std::string description() const override { return "<in-memory dummy weights>"; }

 private:
  struct Stored {
    DType dtype;
    Shape shape;
    std::vector<uint8_t> bytes;
  };
  std::map<std::string, Stored> tensors_;
};

}  // namespace

GptOssConfig preset_config(const std::string& preset) {
  GptOssConfig c = base_config();
  if (preset == "20b") {
    // published shapes (base)
  } else if (preset == "20b-2layers") {
    c.num_layers = 2;  // every 20b dimension (vocab, hidden, heads, experts), one sliding + one full layer
  } else if (preset == "120b") {
    c.num_layers = 36;
    c.num_experts = 128;
  } else if (preset == "tiny") {
    c.num_layers = 4;
    c.num_experts = 8;
    c.vocab_size = 1024;
    c.hidden_size = 256;
    c.intermediate_size = 192;
    c.num_q_heads = 16;
    c.num_kv_heads = 2;
  } else if (preset == "embedded") {
    c.num_layers = 2;
    c.num_experts = 8;
    c.hidden_size = 128;
    c.intermediate_size = 128;
    c.num_q_heads = 8;
    c.num_kv_heads = 1;
  } else {
    GOSSAMER_THROW("unknown preset '", preset, "' (expected tiny, 20b, 20b-2layers, 120b or embedded)");
  }
  alternate_layers(c);
  c.validate("preset " + preset);
  return c;
}

DummyInit parse_dummy_init(const std::string& name) {
  if (name == "standard") return DummyInit::kStandard;
  if (name == "conditioned") return DummyInit::kConditioned;
  GOSSAMER_THROW("unknown dummy init '", name, "' (expected standard or conditioned)");
}

std::vector<DummyTensor> dummy_tensors(const GptOssConfig& c, uint64_t seed, DummyInit init) {
  const bool conditioned = init == DummyInit::kConditioned;
  const double residual_scale = conditioned ? 0.1 : 1.0, router_scale = conditioned ? 4.0 : 1.0;
  std::vector<DummyTensor> tensors;
  const int64_t hidden = c.hidden_size, inter = c.intermediate_size, experts = c.num_experts;
  auto seed_of = [&](const std::string& name) { return SplitMix64(seed ^ fnv1a(name)).next(); };
  auto dense = [&](const std::string& name, Shape shape, Fill fill, double a, double b = 0.0) {
    tensors.push_back({name, DType::kBF16, shape, bf16_producer(seed_of(name), fill, a, b)});
  };
  // MXFP4 experts [experts, rows, cols]: `<prefix>_blocks` and `<prefix>_scales` aimed at `target_std`.
  auto mxfp4 = [&](const std::string& prefix, int64_t rows, int64_t cols, double target_std) {
    tensors.push_back(
        {prefix + "_blocks", DType::kU8, {experts, rows, cols / 32, 16}, blocks_producer(seed_of(prefix + "_blocks"))});
    tensors.push_back({prefix + "_scales",
                       DType::kU8,
                       {experts, rows, cols / 32},
                       scales_producer(seed_of(prefix + "_scales"), target_std)});
  };
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols, double scale = 1.0) {
    dense(name, {rows, cols}, Fill::kNormal, scale / std::sqrt(static_cast<double>(cols)));
  };
  dense("model.embed_tokens.weight", {c.vocab_size, hidden}, Fill::kNormal, 1.0);
  for (int layer = 0; layer < c.num_layers; ++layer) {
    auto name = [&](const char* suffix) { return layer_name(layer, suffix); };
    dense(name("input_layernorm.weight"), {hidden}, Fill::kOnePlusNormal, 0.1);
    matrix(name("self_attn.q_proj.weight"), c.q_width(), hidden);
    dense(name("self_attn.q_proj.bias"), {c.q_width()}, Fill::kNormal, 0.1);
    matrix(name("self_attn.k_proj.weight"), c.kv_width(), hidden);
    dense(name("self_attn.k_proj.bias"), {c.kv_width()}, Fill::kNormal, 0.1);
    matrix(name("self_attn.v_proj.weight"), c.kv_width(), hidden);
    dense(name("self_attn.v_proj.bias"), {c.kv_width()}, Fill::kNormal, 0.1);
    matrix(name("self_attn.o_proj.weight"), hidden, c.q_width(), residual_scale);
    dense(name("self_attn.o_proj.bias"), {hidden}, Fill::kNormal, 0.1);
    dense(name("self_attn.sinks"), {c.num_q_heads}, Fill::kUniform, -2.0, 4.0);
    dense(name("post_attention_layernorm.weight"), {hidden}, Fill::kOnePlusNormal, 0.1);
    matrix(name("mlp.router.weight"), experts, hidden, router_scale);
    dense(name("mlp.router.bias"), {experts}, Fill::kNormal, 0.1);
    mxfp4(name("mlp.experts.gate_up_proj"), 2 * inter, hidden, 3.0 / std::sqrt(static_cast<double>(hidden)));
    dense(name("mlp.experts.gate_up_proj_bias"), {experts, 2 * inter}, Fill::kNormal, 0.1);
    // SwiGLU outputs have std ≈ 2 here, so aim the down weights at ≈ 0.5/√inter for O(1) outputs.
    mxfp4(name("mlp.experts.down_proj"), hidden, inter, residual_scale * 0.5 / std::sqrt(static_cast<double>(inter)));
    dense(name("mlp.experts.down_proj_bias"), {experts, hidden}, Fill::kNormal, 0.1);
  }
  dense("model.norm.weight", {hidden}, Fill::kOnePlusNormal, 0.1);
  if (conditioned) {  // tied: the embedding's values (same seed) scaled by 1/√hidden
    tensors.push_back({"lm_head.weight",
                       DType::kBF16,
                       {c.vocab_size, hidden},
                       bf16_producer(seed_of("model.embed_tokens.weight"), Fill::kNormal,
                                     1.0 / std::sqrt(static_cast<double>(hidden)), 0.0)});
  } else {
    matrix("lm_head.weight", c.vocab_size, hidden);
  }
  return tensors;
}

void write_dummy_checkpoint(const GptOssConfig& config, uint64_t seed, const std::string& dir, DummyInit init) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  GptOssConfig hf = config;
  hf.layout = CheckpointLayout::kHuggingFace;
  {
    std::ofstream out((fs::path(dir) / "config.json").string());
    GOSSAMER_CHECK(out.good(), "cannot write ", dir, "/config.json");
    out << hf.to_hf_json().dump(2) << "\n";
  }
  SafetensorsWriter writer;
  for (DummyTensor& tensor : dummy_tensors(hf, seed, init))
    writer.add(tensor.name, tensor.dtype, tensor.shape, std::move(tensor.produce));
  constexpr uint64_t kShardBytes = 4ull << 30;
  const uint64_t total = writer.total_bytes();
  if (total > kShardBytes) {
    writer.write_sharded(dir, static_cast<int>((total + kShardBytes - 1) / kShardBytes));
  } else {
    writer.write_file((fs::path(dir) / "model.safetensors").string());
  }
}

DummyWeights make_dummy_weights(const GptOssConfig& config, uint64_t seed, DummyInit init) {
  GptOssConfig hf = config;
  hf.layout = CheckpointLayout::kHuggingFace;
  auto storage = std::make_shared<InMemoryTensors>(dummy_tensors(hf, seed, init));
  GptOssWeights weights = map_weights(hf, *storage);
  return DummyWeights{storage, std::move(weights)};
}

std::unique_ptr<Model> make_dummy_cpu_model(const GptOssConfig& config, uint64_t seed, DummyInit init) {
  GptOssConfig hf = config;
  hf.layout = CheckpointLayout::kHuggingFace;
  DummyWeights dummy = make_dummy_weights(hf, seed, init);
  return std::make_unique<CpuModel>(hf, std::move(dummy.weights), std::move(dummy.storage));
}

}  // namespace gossamer::model
