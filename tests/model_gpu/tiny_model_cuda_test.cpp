// The cuda backend on the trained embedded model (models/tiny, docs/tiny-model.md) against transformers'
// float32 logits of the same checkpoint (tests/data/golden/tiny_trained*), in fp8 and bf16 weights, with
// the bounds of the other cuda goldens (tests/model_gpu/cuda_model_test.cpp). A trained model has clear
// winners where the random ones are chaotic, so the printed relative error is the format's error on
// realistic activations. Greedy generations are compared with transformers' and the agreement printed.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "../model/golden_test.h"
#include "core/mapped_file.h"
#include "core/npy.h"
#include "model/embedded_default.h"
#include "model/loader.h"
#include "model/sequence_runner.h"

namespace gossamer::model {
namespace {

struct Bounds {
  double max_relative_l2;
  double min_argmax_match;
};

class TinyModelCudaTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TinyModelCudaTest, LogitsWithinBoundsOfTransformersFloat32) {
  if (resolve_device("auto") != "cuda") GTEST_SKIP() << "no CUDA GPU: the tiny model's cuda golden test not run";
  const std::string weights = GetParam();
  // bf16: the other goldens' bounds. fp8 (and mxfp4, whose dense layers are the same FP8 linears): the
  // trained run 3 measured rel L2 2.9–3.0e-2 but argmax 93.5–97.8% over every position (H200, 2026-12-01),
  // below the 95% of the random goldens: the prompt positions of a trained model have near-ties between
  // plausible next tokens, which 128×128-block FP8 flips. The completions, where it is sure, are held by
  // the greedy check below (4 of 4 identical in fp8 and bf16).
  const Bounds bounds = weights == "bf16" ? Bounds{2e-2, 0.98} : Bounds{6e-2, 0.92};
  const auto golden = nlohmann::json::parse(read_text_file(testing::golden_dir() + "/tiny_trained.json"));
  const auto sequences = golden.at("sequences").get<std::vector<std::vector<int32_t>>>();
  const auto columns = golden.at("columns").get<std::vector<int32_t>>();
  const NpyArray ref = read_npy_f32(testing::golden_dir() + "/tiny_trained_logits.npy");
  ModelOptions options;
  options.weights = weights;
  auto model = load_model(embedded_model_dir(), "cuda", options);
  const int64_t vocab = model->config().vocab_size, width = static_cast<int64_t>(columns.size());
  int64_t row = 0;
  for (size_t s = 0; s < sequences.size(); ++s) {
    const std::vector<float> logits = prefill_logits(*model, {sequences[s]});
    const int64_t length = static_cast<int64_t>(sequences[s].size());
    std::vector<float> ours(static_cast<size_t>(length * width));
    for (int64_t p = 0; p < length; ++p) {
      for (int64_t c = 0; c < width; ++c) {
        ours[static_cast<size_t>(p * width + c)] =
            logits[static_cast<size_t>(p * vocab + columns[static_cast<size_t>(c)])];
      }
    }
    const auto agreement = testing::compare_rows(ours.data(), ref.data.data() + row * width, length, width);
    std::printf("[cuda tiny golden] %s sequence %zu (%lld positions): rel L2 %.3e, argmax match %.4f\n",
                weights.c_str(), s, static_cast<long long>(length), agreement.relative_l2, agreement.argmax_match);
    EXPECT_LE(agreement.relative_l2, bounds.max_relative_l2) << weights << " sequence " << s;
    EXPECT_GE(agreement.argmax_match, bounds.min_argmax_match) << weights << " sequence " << s;
    row += length;
  }
  int same = 0;
  const auto cases = golden.at("greedy");
  for (const auto& c : cases) {
    const auto expected = c.at("completion").get<std::vector<int32_t>>();
    const auto generated = greedy_generate(*model, c.at("prompt").get<std::vector<int32_t>>(),
                                           static_cast<int32_t>(expected.size()), {200002, 200012});
    same += generated == expected;
  }
  std::printf("[cuda tiny golden] %s: %d of %zu greedy generations identical to transformers'\n", weights.c_str(), same,
              cases.size());
  EXPECT_GE(same + 1, static_cast<int>(cases.size())) << weights << ": at most one greedy generation may differ";
}

INSTANTIATE_TEST_SUITE_P(Weights, TinyModelCudaTest, ::testing::Values("fp8", "bf16", "mxfp4"));

// --kv-cache-dtype fp8 (docs/kv-cache-fp8.md) against the bf16 KV cache on the same weights, one-shot and in
// chunks of 37 that attend to their cached prefix through the e4m3 cache (the prefill kernels' prefix
// path), and greedy generations (the decode kernel). Bounds: the cpu backend measured the e4m3 cache's own
// effect on this model at rel L2 6.9e-3 … 1.24e-2 and argmax ≥ 0.981 (tests/model/kv_cache_fp8_model_test.cpp);
// fp8 vs bf16 KV takes 2.5e-2 and 0.95 (bf16 weights) or 0.92 (mxfp4: its FP8 dense layers' near-ties, see
// above); against transformers the weights' own bound plus 2.5e-2.
class TinyModelCudaKvFp8Test : public ::testing::TestWithParam<std::string> {};

TEST_P(TinyModelCudaKvFp8Test, LogitsCloseToTheBf16Cache) {
  if (resolve_device("auto") != "cuda") GTEST_SKIP() << "no CUDA GPU: the tiny model's fp8 KV test not run";
  const std::string weights = GetParam();
  const double min_argmax = weights == "bf16" ? 0.95 : 0.92;
  const Bounds vs_transformers = weights == "bf16" ? Bounds{2e-2 + 2.5e-2, 0.95} : Bounds{6e-2 + 2.5e-2, 0.90};
  const auto golden = nlohmann::json::parse(read_text_file(testing::golden_dir() + "/tiny_trained.json"));
  const auto sequences = golden.at("sequences").get<std::vector<std::vector<int32_t>>>();
  const auto columns = golden.at("columns").get<std::vector<int32_t>>();
  const NpyArray ref = read_npy_f32(testing::golden_dir() + "/tiny_trained_logits.npy");
  ModelOptions options;
  options.weights = weights;
  auto bf16_kv = load_model(embedded_model_dir(), "cuda", options);
  options.kv_cache_dtype = "fp8";
  auto fp8_kv = load_model(embedded_model_dir(), "cuda", options);
  const int64_t vocab = fp8_kv->config().vocab_size, width = static_cast<int64_t>(columns.size());
  auto pick = [&](const std::vector<float>& logits) {
    const int64_t length = static_cast<int64_t>(logits.size()) / vocab;
    std::vector<float> out(static_cast<size_t>(length * width));
    for (int64_t p = 0; p < length; ++p) {
      for (int64_t c = 0; c < width; ++c) {
        out[static_cast<size_t>(p * width + c)] =
            logits[static_cast<size_t>(p * vocab + columns[static_cast<size_t>(c)])];
      }
    }
    return out;
  };
  int64_t row = 0;
  for (size_t s = 0; s < sequences.size(); ++s) {
    const int64_t length = static_cast<int64_t>(sequences[s].size());
    const std::vector<float> base = pick(prefill_logits(*bf16_kv, {sequences[s]}));
    const std::vector<float> ours = pick(prefill_logits(*fp8_kv, {sequences[s]}));
    const std::vector<float> chunked = pick(testing::chunked_prefill_logits(*fp8_kv, sequences[s], 37));
    const auto one_shot = testing::compare_rows(ours.data(), base.data(), length, width);
    const auto in_chunks = testing::compare_rows(chunked.data(), base.data(), length, width);
    const auto golden_rows = testing::compare_rows(ours.data(), ref.data.data() + row * width, length, width);
    std::printf(
        "[cuda tiny kv fp8] %s sequence %zu (%lld positions): vs bf16 KV rel L2 %.3e argmax %.4f; chunked (37) vs "
        "bf16 KV rel L2 %.3e argmax %.4f; vs transformers rel L2 %.3e argmax %.4f\n",
        weights.c_str(), s, static_cast<long long>(length), one_shot.relative_l2, one_shot.argmax_match,
        in_chunks.relative_l2, in_chunks.argmax_match, golden_rows.relative_l2, golden_rows.argmax_match);
    EXPECT_GT(one_shot.relative_l2, 0.0) << "fp8 KV changed nothing: is the flag reaching the kernels?";
    for (const auto& a : {one_shot, in_chunks}) {
      EXPECT_LE(a.relative_l2, 2.5e-2) << weights << " sequence " << s;
      EXPECT_GE(a.argmax_match, min_argmax) << weights << " sequence " << s;
    }
    EXPECT_LE(golden_rows.relative_l2, vs_transformers.max_relative_l2) << weights << " sequence " << s;
    EXPECT_GE(golden_rows.argmax_match, vs_transformers.min_argmax_match) << weights << " sequence " << s;
    row += length;
  }
  int same = 0;
  const auto cases = golden.at("greedy");
  for (const auto& c : cases) {
    const auto expected = c.at("completion").get<std::vector<int32_t>>();
    const auto generated = greedy_generate(*fp8_kv, c.at("prompt").get<std::vector<int32_t>>(),
                                           static_cast<int32_t>(expected.size()), {200002, 200012});
    same += generated == expected;
  }
  std::printf("[cuda tiny kv fp8] %s: %d of %zu greedy generations identical to transformers'\n", weights.c_str(), same,
              cases.size());
  EXPECT_GE(same + 1, static_cast<int>(cases.size())) << weights << ": at most one greedy generation may differ";
}

INSTANTIATE_TEST_SUITE_P(Weights, TinyModelCudaKvFp8Test, ::testing::Values("bf16", "mxfp4"));

// The cache sizing the engine reads: e4m3 full-attention layers take half a bf16 layer's bytes per position,
// sliding-window layers keep bf16's.
TEST(TinyModelCudaKvFp8, FullLayersTakeHalfTheBytes) {
  if (resolve_device("auto") != "cuda") GTEST_SKIP() << "no CUDA GPU: the cuda KV sizing test not run";
  ModelOptions options;
  options.weights = "fp8";  // any format: the cache's sizing is the config's
  auto bf16_kv = load_model(embedded_model_dir(), "cuda", options);
  options.kv_cache_dtype = "fp8";
  auto fp8_kv = load_model(embedded_model_dir(), "cuda", options);
  const int64_t row = int64_t{2} * fp8_kv->config().kv_width();
  EXPECT_EQ(bf16_kv->kv_layer_bytes_per_token(false), 2 * row);
  EXPECT_EQ(fp8_kv->kv_layer_bytes_per_token(false), row);
  EXPECT_EQ(fp8_kv->kv_layer_bytes_per_token(true), 2 * row);
  const int64_t full = fp8_kv->config().num_layers - fp8_kv->num_sliding_layers();
  EXPECT_EQ(bf16_kv->kv_bytes_per_token() - fp8_kv->kv_bytes_per_token(), full * row);
  EXPECT_NE(fp8_kv->kv_cache_dtype_name().find("fp8_e4m3"), std::string::npos);
  EXPECT_EQ(bf16_kv->kv_cache_dtype_name(), "bf16");
}

}  // namespace
}  // namespace gossamer::model
