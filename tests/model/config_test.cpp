#include "model/config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/dummy_checkpoint.h"
#include "model/rope.h"

namespace gossamer::model {
namespace {

using nlohmann::json;

json published_120b_config() {
  // openai/gpt-oss-120b/config.json as published (tests/data/golden/checkpoints/hf_sharded/config.json has the same
  // fields).
  json layer_types = json::array();
  for (int i = 0; i < 18; ++i) {
    layer_types.push_back("sliding_attention");
    layer_types.push_back("full_attention");
  }
  return json{
      {"architectures", {"GptOssForCausalLM"}},
      {"attention_bias", true},
      {"attention_dropout", 0.0},
      {"eos_token_id", 200002},
      {"experts_per_token", 4},
      {"head_dim", 64},
      {"hidden_act", "silu"},
      {"hidden_size", 2880},
      {"initial_context_length", 4096},
      {"initializer_range", 0.02},
      {"intermediate_size", 2880},
      {"layer_types", layer_types},
      {"max_position_embeddings", 131072},
      {"model_type", "gpt_oss"},
      {"num_attention_heads", 64},
      {"num_experts_per_tok", 4},
      {"num_hidden_layers", 36},
      {"num_key_value_heads", 8},
      {"num_local_experts", 128},
      {"output_router_logits", false},
      {"pad_token_id", 199999},
      {"quantization_config", {{"modules_to_not_convert", {"model.layers.*.self_attn"}}, {"quant_method", "mxfp4"}}},
      {"rms_norm_eps", 1e-05},
      {"rope_scaling",
       {{"beta_fast", 32.0},
        {"beta_slow", 1.0},
        {"factor", 32.0},
        {"original_max_position_embeddings", 4096},
        {"rope_type", "yarn"},
        {"truncate", false}}},
      {"rope_theta", 150000},
      {"router_aux_loss_coef", 0.9},
      {"sliding_window", 128},
      {"swiglu_limit", 7.0},
      {"tie_word_embeddings", false},
      {"transformers_version", "4.55.0.dev0"},
      {"use_cache", true},
      {"vocab_size", 201088}};
}

TEST(ConfigTest, ReadsThePublishedHuggingFaceConfig) {
  const GptOssConfig c = GptOssConfig::from_json(published_120b_config(), "config.json");
  EXPECT_EQ(c.num_layers, 36);
  EXPECT_EQ(c.num_experts, 128);
  EXPECT_EQ(c.experts_per_token, 4);
  EXPECT_EQ(c.vocab_size, 201088);
  EXPECT_EQ(c.qkv_width(), 5120);
  EXPECT_TRUE(c.layer_is_sliding[0]);
  EXPECT_FALSE(c.layer_is_sliding[1]);
  EXPECT_FALSE(c.rope_truncate);
  EXPECT_EQ(c.rope_original_max_positions, 4096);
  EXPECT_EQ(c.layout, CheckpointLayout::kHuggingFace);
}

TEST(ConfigTest, ReadsTheOriginalForm) {
  const json original = {{"num_hidden_layers", 24},   {"num_experts", 32},
                         {"experts_per_token", 4},    {"vocab_size", 201088},
                         {"hidden_size", 2880},       {"intermediate_size", 2880},
                         {"swiglu_limit", 7.0},       {"head_dim", 64},
                         {"num_attention_heads", 64}, {"num_key_value_heads", 8},
                         {"sliding_window", 128},     {"initial_context_length", 4096},
                         {"rope_theta", 150000},      {"rope_scaling_factor", 32.0},
                         {"rope_ntk_alpha", 1.0},     {"rope_ntk_beta", 32.0}};
  const GptOssConfig c = GptOssConfig::from_json(original, "original/config.json");
  EXPECT_EQ(c.layout, CheckpointLayout::kOriginal);
  EXPECT_EQ(c.num_layers, 24);
  EXPECT_EQ(c.max_position_embeddings, 131072);
  EXPECT_EQ(c.rope_beta_fast, 32.0);
  EXPECT_EQ(c.rope_beta_slow, 1.0);
  EXPECT_TRUE(c.layer_is_sliding[22]);
  EXPECT_FALSE(c.layer_is_sliding[23]);
}

TEST(ConfigTest, ReadsTransformersFiveRopeParameters) {
  json file = published_120b_config();
  json rope = file["rope_scaling"];
  rope["rope_theta"] = 50000.0;
  rope["factor"] = 8.0;
  file.erase("rope_scaling");
  file.erase("rope_theta");
  file["rope_parameters"] = rope;
  const GptOssConfig c = GptOssConfig::from_json(file, "config.json");
  EXPECT_EQ(c.rope_theta, 50000.0);
  EXPECT_EQ(c.rope_scaling_factor, 8.0);
}

TEST(ConfigTest, ErrorsNameTheField) {
  json file = published_120b_config();
  file["num_hidden_layers"] = "many";
  EXPECT_THROW(GptOssConfig::from_json(file, "config.json"), Error);
  file = published_120b_config();
  file["layer_types"].erase(0);
  try {
    GptOssConfig::from_json(file, "x/config.json");
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("layer_types"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("x/config.json"), std::string::npos);
  }
  file = published_120b_config();
  file["num_key_value_heads"] = 7;
  EXPECT_THROW(GptOssConfig::from_json(file, "config.json"), Error);
}

TEST(ConfigTest, HfJsonRoundTrips) {
  const GptOssConfig tiny = preset_config("tiny");
  const GptOssConfig again = GptOssConfig::from_json(tiny.to_hf_json(), "roundtrip");
  EXPECT_EQ(again.hidden_size, tiny.hidden_size);
  EXPECT_EQ(again.layer_is_sliding, tiny.layer_is_sliding);
  EXPECT_EQ(again.rope_scaling_factor, tiny.rope_scaling_factor);
}

// ω_i of transformers' YaRN (float64 reference values; fp32 differs in the last ulp).
TEST(RopeTest, YarnFrequenciesMatchTheReferenceTable) {
  const RopeTables rope = RopeTables::from_config(preset_config("20b"));
  const std::pair<int, double> expected[] = {{0, 1.0},
                                             {8, 0.05081327482},
                                             {9, 3.170569618e-02},
                                             {10, 1.933500113e-02},
                                             {13, 3.860359317e-03},
                                             {17, 1.293187012e-04},
                                             {18, 3.830881237e-05},
                                             {31, 3.023511428e-07}};
  for (const auto& [i, omega] : expected) EXPECT_NEAR(rope.inv_freq[static_cast<size_t>(i)] / omega, 1.0, 2e-6) << i;
  EXPECT_NEAR(rope.concentration, 1.3465735902799727, 1e-7);
}

}  // namespace
}  // namespace gossamer::model
