// The embedded default (models/tiny, docs/tiny-model.md) against Hugging Face transformers' float32
// GptOssForCausalLM on the same checkpoint (tests/data/golden/tiny_trained*, made by tools/tiny_train.py
// on the GPU machine): logits of held-out conversations within a relative L2 error of 1e-3 per sequence,
// and greedy generations identical to transformers' on held-out prompts (the CPU decode path).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "core/mapped_file.h"
#include "core/npy.h"
#include "golden_test.h"
#include "model/embedded_default.h"
#include "model/sequence_runner.h"

namespace gossamer::model {
namespace {

constexpr int32_t kReturn = 200002, kCall = 200012;

nlohmann::json golden() {
  return nlohmann::json::parse(read_text_file(testing::golden_dir() + "/tiny_trained.json"));
}

Model& embedded() {
  static std::unique_ptr<Model> model = make_embedded_default_model();
  return *model;
}

TEST(TinyModel, IsTheEmbeddedDefaultWithTheFullVocabulary) {
  const GptOssConfig& c = embedded().config();
  EXPECT_EQ(c.vocab_size, 201088);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.num_q_heads, 8 * c.num_kv_heads);
  EXPECT_EQ(c.experts_per_token, 4);
  EXPECT_GT(c.rope_scaling_factor, 1.0);  // YaRN
  EXPECT_NE(std::count(c.layer_is_sliding.begin(), c.layer_is_sliding.end(), true), 0);
  EXPECT_NE(std::count(c.layer_is_sliding.begin(), c.layer_is_sliding.end(), false), 0);
}

TEST(TinyModel, MissingCheckpointIsAClearError) {
  ::setenv("GOSSAMER_EMBEDDED_MODEL_DIR", "/nonexistent/tiny", 1);
  try {
    make_embedded_default_model();
    ADD_FAILURE() << "no error for a missing embedded checkpoint";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/tiny"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("zstd"), std::string::npos) << error.what();
  }
  ::unsetenv("GOSSAMER_EMBEDDED_MODEL_DIR");
}

TEST(TinyModel, LogitsMatchTransformersFloat32) {
  const auto g = golden();
  const auto sequences = g.at("sequences").get<std::vector<std::vector<int32_t>>>();
  const auto columns = g.at("columns").get<std::vector<int32_t>>();
  const auto unused = g.at("unused_columns").get<std::vector<int32_t>>();
  const NpyArray ref = read_npy_f32(testing::golden_dir() + "/tiny_trained_logits.npy");
  int64_t total = 0;
  for (const auto& s : sequences) total += static_cast<int64_t>(s.size());
  const int64_t width = static_cast<int64_t>(columns.size()), vocab = embedded().config().vocab_size;
  ASSERT_EQ(ref.shape, (std::vector<int64_t>{total, width}));
  ASSERT_EQ(unused.size(), 2u);
  int64_t row = 0;
  for (size_t s = 0; s < sequences.size(); ++s) {
    const std::vector<float> logits = prefill_logits(embedded(), {sequences[s]});  // [len, vocab]
    const int64_t length = static_cast<int64_t>(sequences[s].size());
    std::vector<float> ours(static_cast<size_t>(length * width));
    int64_t argmax_outside = 0;
    for (int64_t p = 0; p < length; ++p) {
      const float* full = logits.data() + p * vocab;
      for (int64_t c = 0; c < width; ++c)
        ours[static_cast<size_t>(p * width + c)] = full[columns[static_cast<size_t>(c)]];
      // Rows the corpus never used share one unembedding row: their logits are equal.
      ASSERT_EQ(full[unused[0]], full[unused[1]]) << "sequence " << s << " position " << p;
      // The reference's top 16 at every position are among the columns: our argmax must be too.
      const int32_t best = argmax(full, vocab);
      argmax_outside += !std::binary_search(columns.begin(), columns.end(), best);
    }
    const auto agreement = testing::compare_rows(ours.data(), ref.data.data() + row * width, length, width);
    std::printf("[tiny golden] sequence %zu (%lld positions): rel L2 %.2e, argmax match %.4f\n", s,
                static_cast<long long>(length), agreement.relative_l2, agreement.argmax_match);
    EXPECT_LE(agreement.relative_l2, 1e-3) << "sequence " << s;
    EXPECT_GE(agreement.argmax_match, 0.995) << "sequence " << s;
    EXPECT_EQ(argmax_outside, 0) << "sequence " << s;
    row += length;
  }
}

TEST(TinyModel, GreedyGenerationsMatchTransformers) {
  const auto cases = golden().at("greedy");
  ASSERT_GE(cases.size(), 4u);
  for (const auto& c : cases) {
    const auto prompt = c.at("prompt").get<std::vector<int32_t>>();
    const auto expected = c.at("completion").get<std::vector<int32_t>>();
    const auto ours = greedy_generate(embedded(), prompt, static_cast<int32_t>(expected.size()), {kReturn, kCall});
    EXPECT_EQ(ours, expected) << c.at("domain").get<std::string>() << " prompt of " << prompt.size() << " tokens";
  }
}

}  // namespace
}  // namespace gossamer::model
