#include "model/config.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/mapped_file.h"

namespace gossamer::model {

namespace {

using nlohmann::json;

const json* find_key(const json& object, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    const auto found = object.find(key);
    if (found != object.end() && !found->is_null()) return &*found;
  }
  return nullptr;
}

template <typename T>
T required(const json& object, std::initializer_list<const char*> keys, const std::string& source) {
  const json* value = find_key(object, keys);
  GOSSAMER_CHECK(value != nullptr, source, ": missing field '", *keys.begin(), "'");
  GOSSAMER_CHECK(value->is_number() || value->is_boolean(), source, ": field '", *keys.begin(),
                 "' must be a number, got ", value->dump());
  if constexpr (std::is_integral_v<T>) {
    GOSSAMER_CHECK(value->is_number_integer() ||
                       (value->is_number_float() && value->get<double>() == static_cast<double>(value->get<int64_t>())),
                   source, ": field '", *keys.begin(), "' must be an integer, got ", value->dump());
  }
  return value->get<T>();
}

template <typename T>
T optional(const json& object, std::initializer_list<const char*> keys, T fallback, const std::string& source) {
  return find_key(object, keys) ? required<T>(object, keys, source) : fallback;
}

void read_layer_types(GptOssConfig& config, const json& file, const std::string& source) {
  const json* types = find_key(file, {"layer_types"});
  config.layer_is_sliding.assign(static_cast<size_t>(config.num_layers), false);
  if (types == nullptr) {
    // Both references slide on even layer indices when the file does not list the types.
    for (int32_t layer = 0; layer < config.num_layers; layer += 2)
      config.layer_is_sliding[static_cast<size_t>(layer)] = true;
    return;
  }
  GOSSAMER_CHECK(types->is_array() && static_cast<int64_t>(types->size()) == config.num_layers, source,
                 ": 'layer_types' must list ", config.num_layers, " layers");
  for (int32_t layer = 0; layer < config.num_layers; ++layer) {
    const json& type = (*types)[static_cast<size_t>(layer)];
    GOSSAMER_CHECK(type.is_string(), source, ": layer_types[", layer, "] must be a string");
    const std::string name = type.get<std::string>();
    GOSSAMER_CHECK(name == "sliding_attention" || name == "full_attention", source, ": layer_types[", layer, "] is '",
                   name, "' (expected sliding_attention or full_attention)");
    config.layer_is_sliding[static_cast<size_t>(layer)] = name == "sliding_attention";
  }
}

GptOssConfig from_hf(const json& file, const std::string& source) {
  GptOssConfig config;
  config.layout = CheckpointLayout::kHuggingFace;
  config.num_layers = required<int32_t>(file, {"num_hidden_layers"}, source);
  config.num_experts = required<int32_t>(file, {"num_local_experts", "num_experts"}, source);
  config.experts_per_token = required<int32_t>(file, {"num_experts_per_tok", "experts_per_token"}, source);
  config.vocab_size = required<int32_t>(file, {"vocab_size"}, source);
  config.hidden_size = required<int32_t>(file, {"hidden_size"}, source);
  config.intermediate_size = required<int32_t>(file, {"intermediate_size"}, source);
  config.num_q_heads = required<int32_t>(file, {"num_attention_heads"}, source);
  config.num_kv_heads = required<int32_t>(file, {"num_key_value_heads"}, source);
  config.head_dim = optional<int32_t>(file, {"head_dim"}, config.hidden_size / std::max(config.num_q_heads, 1), source);
  config.sliding_window = required<int32_t>(file, {"sliding_window"}, source);
  config.rms_norm_eps = required<float>(file, {"rms_norm_eps"}, source);
  config.swiglu_limit = required<float>(file, {"swiglu_limit"}, source);
  config.max_position_embeddings = required<int32_t>(file, {"max_position_embeddings"}, source);
  read_layer_types(config, file, source);

  // transformers ≤ 4.x writes `rope_scaling` + top-level `rope_theta`; 5.x may write `rope_parameters`.
  const json* rope = find_key(file, {"rope_scaling", "rope_parameters"});
  config.rope_theta = find_key(file, {"rope_theta"}) ? required<double>(file, {"rope_theta"}, source)
                                                     : (rope ? required<double>(*rope, {"rope_theta"}, source) : 0.0);
  GOSSAMER_CHECK(config.rope_theta > 0.0, source, ": missing field 'rope_theta'");
  if (rope != nullptr && rope->is_object()) {
    const std::string type = rope->value("rope_type", rope->value("type", std::string("default")));
    if (type == "yarn") {
      config.rope_scaling_factor = required<double>(*rope, {"factor"}, source);
      config.rope_beta_fast = optional<double>(*rope, {"beta_fast"}, 32.0, source);
      config.rope_beta_slow = optional<double>(*rope, {"beta_slow"}, 1.0, source);
      config.rope_original_max_positions =
          optional<int32_t>(*rope, {"original_max_position_embeddings"},
                            optional<int32_t>(file, {"initial_context_length"}, 0, source), source);
      config.rope_truncate = rope->value("truncate", true);
      GOSSAMER_CHECK(config.rope_original_max_positions > 0, source,
                     ": yarn rope needs 'original_max_position_embeddings'");
    } else {
      GOSSAMER_CHECK(type == "default", source, ": unsupported rope_type '", type, "'");
    }
  }
  return config;
}

GptOssConfig from_original(const json& file, const std::string& source) {
  GptOssConfig config;
  config.layout = CheckpointLayout::kOriginal;
  config.num_layers = required<int32_t>(file, {"num_hidden_layers"}, source);
  config.num_experts = required<int32_t>(file, {"num_experts"}, source);
  config.experts_per_token = required<int32_t>(file, {"experts_per_token"}, source);
  config.vocab_size = required<int32_t>(file, {"vocab_size"}, source);
  config.hidden_size = required<int32_t>(file, {"hidden_size"}, source);
  config.intermediate_size = required<int32_t>(file, {"intermediate_size"}, source);
  config.num_q_heads = required<int32_t>(file, {"num_attention_heads"}, source);
  config.num_kv_heads = required<int32_t>(file, {"num_key_value_heads"}, source);
  config.head_dim = required<int32_t>(file, {"head_dim"}, source);
  config.sliding_window = required<int32_t>(file, {"sliding_window"}, source);
  config.swiglu_limit = required<float>(file, {"swiglu_limit"}, source);
  // The original form has no eps key: the reference RMSNorm's default is 1e-5.
  config.rms_norm_eps = optional<float>(file, {"rms_norm_eps"}, 1e-5f, source);
  config.rope_theta = required<double>(file, {"rope_theta"}, source);
  config.rope_scaling_factor = required<double>(file, {"rope_scaling_factor"}, source);
  config.rope_beta_fast = required<double>(file, {"rope_ntk_beta"}, source);
  config.rope_beta_slow = required<double>(file, {"rope_ntk_alpha"}, source);
  config.rope_original_max_positions = required<int32_t>(file, {"initial_context_length"}, source);
  config.rope_truncate = false;  // the reference never rounds the correction range
  config.max_position_embeddings =
      static_cast<int32_t>(config.rope_original_max_positions * config.rope_scaling_factor);
  read_layer_types(config, file, source);
  return config;
}

}  // namespace

GptOssConfig GptOssConfig::from_json(const json& file, const std::string& source) {
  GOSSAMER_CHECK(file.is_object(), source, ": config must be a JSON object");
  const bool is_original = file.contains("num_experts") && file.contains("rope_scaling_factor");
  GptOssConfig config = is_original ? from_original(file, source) : from_hf(file, source);
  config.validate(source);
  return config;
}

GptOssConfig GptOssConfig::from_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::string file = path;
  if (fs::is_directory(path)) {
    file = fs::exists(fs::path(path) / "config.json") ? (fs::path(path) / "config.json").string()
                                                      : (fs::path(path) / "original" / "config.json").string();
  }
  const std::string text = read_text_file(file);
  json parsed;
  try {
    parsed = json::parse(text);
  } catch (const json::exception& error) {
    GOSSAMER_THROW(file, ": invalid JSON: ", error.what());
  }
  return from_json(parsed, file);
}

void GptOssConfig::validate(const std::string& source) const {
  auto positive = [&](int64_t value, const char* name) {
    GOSSAMER_CHECK(value > 0, source, ": '", name, "' must be positive, got ", value);
  };
  positive(num_layers, "num_hidden_layers");
  positive(num_experts, "num_experts");
  positive(experts_per_token, "experts_per_token");
  positive(vocab_size, "vocab_size");
  positive(hidden_size, "hidden_size");
  positive(intermediate_size, "intermediate_size");
  positive(head_dim, "head_dim");
  positive(num_q_heads, "num_attention_heads");
  positive(num_kv_heads, "num_key_value_heads");
  positive(sliding_window, "sliding_window");
  positive(max_position_embeddings, "max_position_embeddings");
  GOSSAMER_CHECK(experts_per_token <= num_experts, source, ": experts_per_token (", experts_per_token,
                 ") exceeds num_experts (", num_experts, ")");
  GOSSAMER_CHECK(num_q_heads % num_kv_heads == 0, source, ": num_attention_heads (", num_q_heads,
                 ") must be a multiple of num_key_value_heads (", num_kv_heads, ")");
  GOSSAMER_CHECK(head_dim % 2 == 0, source, ": head_dim must be even, got ", head_dim);
  GOSSAMER_CHECK(hidden_size % 32 == 0 && intermediate_size % 32 == 0, source,
                 ": hidden_size and intermediate_size must be multiples of 32 (MXFP4 blocks)");
  GOSSAMER_CHECK(rms_norm_eps > 0.0f, source, ": rms_norm_eps must be positive");
  GOSSAMER_CHECK(swiglu_limit > 0.0f, source, ": swiglu_limit must be positive");
  GOSSAMER_CHECK(rope_scaling_factor >= 1.0, source, ": rope scaling factor must be ≥ 1");
  GOSSAMER_CHECK(static_cast<int32_t>(layer_is_sliding.size()) == num_layers, source, ": layer types missing");
}

json GptOssConfig::to_hf_json() const {
  json layer_types = json::array();
  for (bool sliding : layer_is_sliding) layer_types.push_back(sliding ? "sliding_attention" : "full_attention");
  json rope_scaling = {{"rope_type", "yarn"},
                       {"factor", rope_scaling_factor},
                       {"beta_fast", rope_beta_fast},
                       {"beta_slow", rope_beta_slow},
                       {"original_max_position_embeddings", rope_original_max_positions},
                       {"truncate", rope_truncate}};
  json config{{"architectures", {"GptOssForCausalLM"}},
              {"model_type", "gpt_oss"},
              {"attention_bias", true},
              {"attention_dropout", 0.0},
              {"experts_per_token", experts_per_token},
              {"num_experts_per_tok", experts_per_token},
              {"head_dim", head_dim},
              {"hidden_act", "silu"},
              {"hidden_size", hidden_size},
              {"intermediate_size", intermediate_size},
              {"initial_context_length", rope_original_max_positions},
              {"initializer_range", 0.02},
              {"max_position_embeddings", max_position_embeddings},
              {"layer_types", layer_types},
              {"num_attention_heads", num_q_heads},
              {"num_hidden_layers", num_layers},
              {"num_key_value_heads", num_kv_heads},
              {"num_local_experts", num_experts},
              {"output_router_logits", false},
              {"router_aux_loss_coef", 0.9},
              {"quantization_config",
               {{"quant_method", "mxfp4"},
                {"modules_to_not_convert",
                 {"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"}}}},
              {"rms_norm_eps", rms_norm_eps},
              {"rope_scaling", rope_scaling},
              {"rope_theta", rope_theta},
              {"sliding_window", sliding_window},
              {"swiglu_limit", swiglu_limit},
              {"tie_word_embeddings", false},
              {"use_cache", true},
              {"vocab_size", vocab_size}};
  // The published ids (<|return|>, <|endoftext|>) only exist in the full vocabulary.
  if (vocab_size > 200002) {
    config["eos_token_id"] = 200002;
    config["pad_token_id"] = 199999;
  }
  return config;
}

}  // namespace gossamer::model
