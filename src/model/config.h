// GptOssConfig: every hyper-parameter the model uses, read from the checkpoint's config file.
//
// Reads both the Hugging Face `config.json` and the `original/config.json` form (openai/gpt-oss
// ModelConfig keys). Every field the forward pass uses comes from the file; a missing or invalid field
// throws gossamer::Error naming the field and the file. Immutable once loaded.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace gossamer::model {

enum class CheckpointLayout : uint8_t { kHuggingFace, kOriginal };

struct GptOssConfig {
  int32_t num_layers = 0;
  int32_t num_experts = 0;
  int32_t experts_per_token = 0;
  int32_t vocab_size = 0;
  int32_t hidden_size = 0;
  int32_t intermediate_size = 0;  // per expert; gate_up has 2× rows
  int32_t head_dim = 0;
  int32_t num_q_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t sliding_window = 0;
  std::vector<bool> layer_is_sliding;  // [num_layers]
  float rms_norm_eps = 0.0f;
  float swiglu_limit = 0.0f;
  float swiglu_alpha = 1.702f;  // not in any config file: hard-coded in every reference
  // RoPE / YaRN
  double rope_theta = 0.0;
  double rope_scaling_factor = 1.0;
  int32_t rope_original_max_positions = 0;  // initial_context_length
  double rope_beta_fast = 32.0;
  double rope_beta_slow = 1.0;
  bool rope_truncate = false;
  int32_t max_position_embeddings = 0;
  CheckpointLayout layout = CheckpointLayout::kHuggingFace;

  int32_t q_width() const { return num_q_heads * head_dim; }
  int32_t kv_width() const { return num_kv_heads * head_dim; }
  int32_t qkv_width() const { return q_width() + 2 * kv_width(); }

  // Parses a config JSON (either form; the form is detected from its keys). `source` names the file in errors.
  static GptOssConfig from_json(const nlohmann::json& json, const std::string& source);
  // Reads DIR/config.json (Hugging Face) or, failing that, DIR/original/config.json or DIR itself
  // when DIR is a file.
  static GptOssConfig from_file(const std::string& path);
  // Serialises to the Hugging Face config.json form.
  nlohmann::json to_hf_json() const;
  // Throws gossamer::Error if the values break an assumption of the implementation.
  void validate(const std::string& source) const;
};

}  // namespace gossamer::model
