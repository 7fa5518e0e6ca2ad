// --kv-cache-dtype fp8 on the cpu backend (the float32 cache holds the e4m3-rounded K/V of the
// full-attention layers, as the cuda backend stores them; docs/kv-cache-fp8.md): on the trained tiny model
// (models/tiny) its logits against the float32 cache's and against transformers' float32 golden, one-shot
// and in chunks that attend to their cached prefix; greedy generations; the flag's parsing and errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "golden_test.h"
#include "model/embedded_default.h"
#include "model/loader.h"
#include "model/sequence_runner.h"

namespace gossamer::model {
namespace {

constexpr int32_t kReturn = 200002, kCall = 200012;
// Bounds on the fp8 cache's logits against the float32 cache's (and transformers', which the float32 cache
// matches within 1e-3: tests/model/tiny_model_test.cpp). Measured here (2026-12-01, x86 CPU): rel L2
// 6.9e-3 … 1.24e-2 per sequence, argmax 0.981 … 1.0. The bounds are 2× the worst rel L2 and 0.95.
constexpr double kMaxRelL2 = 2.5e-2, kMinArgmax = 0.95;

std::unique_ptr<Model> tiny(const std::string& kv_cache_dtype) {
  ModelOptions options;
  options.kv_cache_dtype = kv_cache_dtype;
  return load_model(embedded_model_dir(), "cpu", options);
}

// Logits of the golden's columns [len, columns] out of full rows [len, vocab].
std::vector<float> columns_of(const std::vector<float>& logits, const std::vector<int32_t>& columns, int64_t vocab) {
  const int64_t length = static_cast<int64_t>(logits.size()) / vocab, width = static_cast<int64_t>(columns.size());
  std::vector<float> out(static_cast<size_t>(length * width));
  for (int64_t p = 0; p < length; ++p) {
    for (int64_t c = 0; c < width; ++c) {
      out[static_cast<size_t>(p * width + c)] =
          logits[static_cast<size_t>(p * vocab + columns[static_cast<size_t>(c)])];
    }
  }
  return out;
}

TEST(KvCacheFp8Model, FlagParsesAndRefusesOthers) {
  EXPECT_FALSE(kv_cache_dtype_is_fp8("auto"));
  EXPECT_TRUE(kv_cache_dtype_is_fp8("fp8"));
  EXPECT_TRUE(kv_cache_dtype_is_fp8("fp8_e4m3"));
  try {
    kv_cache_dtype_is_fp8("fp8_e5m2");
    ADD_FAILURE() << "fp8_e5m2 accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("e4m3"), std::string::npos) << error.what();
  }
  EXPECT_THROW(kv_cache_dtype_is_fp8("int8"), Error);
  EXPECT_NE(tiny("fp8")->kv_cache_dtype_name().find("fp8_e4m3"), std::string::npos);
  EXPECT_EQ(tiny("auto")->kv_cache_dtype_name(), "float32");
}

// e4m3 keeps 3 mantissa bits (≤ 2^-4 relative per element) on the full layers' K/V only; kMaxRelL2 above.
TEST(KvCacheFp8Model, LogitsCloseToTheFloat32Cache) {
  const auto golden = nlohmann::json::parse(read_text_file(testing::golden_dir() + "/tiny_trained.json"));
  const auto sequences = golden.at("sequences").get<std::vector<std::vector<int32_t>>>();
  const auto columns = golden.at("columns").get<std::vector<int32_t>>();
  const NpyArray ref = read_npy_f32(testing::golden_dir() + "/tiny_trained_logits.npy");
  auto fp8 = tiny("fp8");
  auto f32 = tiny("auto");
  const int64_t vocab = fp8->config().vocab_size, width = static_cast<int64_t>(columns.size());
  int64_t row = 0;
  double worst_vs_f32 = 0.0, worst_vs_golden = 0.0, worst_argmax = 1.0;
  for (size_t s = 0; s < sequences.size(); ++s) {
    const int64_t length = static_cast<int64_t>(sequences[s].size());
    const std::vector<float> a = columns_of(prefill_logits(*fp8, {sequences[s]}), columns, vocab);
    const std::vector<float> b = columns_of(prefill_logits(*f32, {sequences[s]}), columns, vocab);
    const std::vector<float> chunked =
        columns_of(testing::chunked_prefill_logits(*fp8, sequences[s], 37), columns, vocab);
    const auto vs_f32 = testing::compare_rows(a.data(), b.data(), length, width);
    const auto vs_golden = testing::compare_rows(a.data(), ref.data.data() + row * width, length, width);
    const auto chunked_vs_one_shot = testing::compare_rows(chunked.data(), a.data(), length, width);
    std::printf(
        "[tiny kv fp8, cpu] sequence %zu (%lld positions): vs float32 cache rel L2 %.3e argmax %.4f; vs "
        "transformers rel L2 %.3e argmax %.4f; chunked (37) vs one-shot rel L2 %.3e\n",
        s, static_cast<long long>(length), vs_f32.relative_l2, vs_f32.argmax_match, vs_golden.relative_l2,
        vs_golden.argmax_match, chunked_vs_one_shot.relative_l2);
    EXPECT_GT(vs_f32.relative_l2, 0.0) << "the fp8 cache changed nothing: is the flag reaching the model?";
    EXPECT_LE(vs_f32.relative_l2, kMaxRelL2) << "sequence " << s;
    EXPECT_GE(vs_f32.argmax_match, kMinArgmax) << "sequence " << s;
    EXPECT_LE(vs_golden.relative_l2, kMaxRelL2) << "sequence " << s;
    EXPECT_GE(vs_golden.argmax_match, kMinArgmax) << "sequence " << s;
    // One-shot and chunked prefill store the same rounded K/V and read them back alike.
    EXPECT_LE(chunked_vs_one_shot.relative_l2, 1e-5) << "sequence " << s;
    worst_vs_f32 = std::max(worst_vs_f32, vs_f32.relative_l2);
    worst_vs_golden = std::max(worst_vs_golden, vs_golden.relative_l2);
    worst_argmax = std::min(worst_argmax, vs_f32.argmax_match);
    row += length;
  }
  std::printf("[tiny kv fp8, cpu] worst: vs float32 cache rel L2 %.3e (argmax %.4f), vs transformers %.3e\n",
              worst_vs_f32, worst_argmax, worst_vs_golden);
}

TEST(KvCacheFp8Model, GreedyGenerationsMostlyMatchTransformers) {
  const auto cases = nlohmann::json::parse(read_text_file(testing::golden_dir() + "/tiny_trained.json")).at("greedy");
  auto fp8 = tiny("fp8");
  int same = 0;
  for (const auto& c : cases) {
    const auto expected = c.at("completion").get<std::vector<int32_t>>();
    const auto ours = greedy_generate(*fp8, c.at("prompt").get<std::vector<int32_t>>(),
                                      static_cast<int32_t>(expected.size()), {kReturn, kCall});
    same += ours == expected;
  }
  std::printf("[tiny kv fp8, cpu] %d of %zu greedy generations identical to transformers'\n", same, cases.size());
  EXPECT_GE(same + 1, static_cast<int>(cases.size())) << "at most one greedy generation may differ";
}

}  // namespace
}  // namespace gossamer::model
