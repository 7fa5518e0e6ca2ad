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

INSTANTIATE_TEST_SUITE_P(Weights, TinyModelCudaTest, ::testing::Values("fp8", "bf16", "mxfp4", "mxfp4+fp8"));

}  // namespace
}  // namespace gossamer::model
