// The cpu backend's tensor/expert-parallel ranks (CpuShardedModel) against the unsharded CpuModel on
// the goldens' checkpoints and on small configs with the family's head and expert counts: TP and EP
// 2/4/8, batched prefill and a mixed prefill/decode run through the sliding-window ring, logits within
// 1e-5 relative L2 per sequence; forward_sample with plain rows and with token masks, penalties and
// logprobs against the unsharded logits through the single-device rule. Also the layouts' errors.
#include <gtest/gtest.h>

#include <numeric>

#include "core/random.h"
#include "golden_test.h"
#include "kernels/sampling.h"
#include "kernels/token_mask.h"
#include "model/checkpoint.h"
#include "model/cpu_model.h"
#include "model/cpu_sharded_model.h"
#include "model/dummy_checkpoint.h"
#include "model/host_sampling_batch.h"
#include "model/sequence_runner.h"

namespace gossamer::model {
namespace {

constexpr double kMaxRelative = 1e-5;

struct Source {
  GptOssConfig config;
  GptOssWeights weights;
  std::shared_ptr<const void> storage;
};

// A small config with the published family's heads (64 q / 8 kv) and experts (32 = 20b, 128 = 120b).
GptOssConfig family_config(int32_t num_experts) {
  GptOssConfig c = preset_config("tiny");
  c.num_layers = 2;
  c.layer_is_sliding = {true, false};
  c.sliding_window = 16;
  c.num_q_heads = 64;
  c.num_kv_heads = 8;
  c.num_experts = num_experts;
  c.hidden_size = 128;
  c.intermediate_size = 64;
  c.validate("family test config");
  return c;
}

Source load_source(const std::string& name) {
  if (name == "tiny") {  // the tiny golden's checkpoint (make-dummy --preset tiny --seed 0), built in memory
    DummyWeights dummy = make_dummy_weights(preset_config("tiny"), 0);
    return {preset_config("tiny"), std::move(dummy.weights), std::move(dummy.storage)};
  }
  if (name == "20b-heads" || name == "120b-heads") {
    const GptOssConfig config = family_config(name == "20b-heads" ? 32 : 128);
    DummyWeights dummy = make_dummy_weights(config, 7);
    return {config, std::move(dummy.weights), std::move(dummy.storage)};
  }
  std::shared_ptr<Checkpoint> checkpoint = Checkpoint::open(testing::golden_dir() + "/checkpoints/" + name);
  const GptOssConfig config = checkpoint->config();
  GptOssWeights weights = checkpoint->weights();
  return {config, std::move(weights), std::move(checkpoint)};
}

std::vector<std::vector<int32_t>> random_sequences(uint64_t seed, int count, int length, int32_t vocab) {
  SplitMix64 rng(seed);
  std::vector<std::vector<int32_t>> sequences(static_cast<size_t>(count),
                                              std::vector<int32_t>(static_cast<size_t>(length)));
  for (auto& sequence : sequences) {
    for (int32_t& token : sequence) token = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(vocab));
  }
  return sequences;
}

double relative_l2(const float* ours, const float* ref, int64_t count) {
  double diff = 0.0, norm = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    diff += (double{ours[i]} - ref[i]) * (double{ours[i]} - ref[i]);
    norm += double{ref[i]} * ref[i];
  }
  return std::sqrt(diff / norm);
}

struct LayoutCase {
  std::string source;
  int32_t tp;
  bool ep;
  int32_t length;  // prefill tokens per sequence
};

void PrintTo(const LayoutCase& c, std::ostream* out) {
  *out << c.source << (c.ep ? " EP" : " TP") << c.tp << ", " << c.length << " tokens";
}

std::string case_name(const ::testing::TestParamInfo<LayoutCase>& info) {
  std::string name = info.param.source + "_" + (info.param.ep ? "EP" : "TP") + std::to_string(info.param.tp);
  for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

class ShardedModelTest : public ::testing::TestWithParam<LayoutCase> {
 protected:
  void SetUp() override {
    source_ = load_source(GetParam().source);
    reference_ = std::make_unique<CpuModel>(source_.config, source_.weights, source_.storage);
    sharded_ = std::make_unique<CpuShardedModel>(source_.config, source_.weights, source_.storage,
                                                 ParallelLayout{GetParam().tp, GetParam().ep, 1});
  }
  Source source_;
  std::unique_ptr<Model> reference_, sharded_;
};

TEST_P(ShardedModelTest, PrefillLogitsEqualUnsharded) {
  const int64_t vocab = source_.config.vocab_size, length = GetParam().length;
  const auto sequences = random_sequences(11, 2, GetParam().length, source_.config.vocab_size);
  const std::vector<float> ref = prefill_logits(*reference_, sequences);
  const std::vector<float> ours = prefill_logits(*sharded_, sequences);
  ASSERT_EQ(ours.size(), ref.size());
  for (int64_t s = 0; s < 2; ++s) {
    const double error = relative_l2(ours.data() + s * length * vocab, ref.data() + s * length * vocab, length * vocab);
    EXPECT_LE(error, kMaxRelative) << sharded_->parallel_layout() << " sequence " << s;
  }
  EXPECT_EQ(sharded_->parallel_layout(),
            (GetParam().ep ? "TP" + std::to_string(GetParam().tp) + " EP" + std::to_string(GetParam().tp)
                           : "TP" + std::to_string(GetParam().tp) + " EP1"));
}

// Sequence 0 prefills a prefix then decodes one token per step while sequence 1 prefills in chunks in
// the same steps; the sliding layers use their own pool (the ring's addressing). Every step's logits match.
TEST_P(ShardedModelTest, MixedPrefillAndDecodeEqualUnsharded) {
  const int32_t vocab = source_.config.vocab_size, block = 16, length = 40;
  const auto sequences = random_sequences(12, 2, length, vocab);
  const int32_t blocks_per_seq = (length + block - 1) / block;
  std::vector<int32_t> table0(static_cast<size_t>(blocks_per_seq)), table1(table0.size()), ring0(table0.size()),
      ring1(table0.size());
  for (int32_t b = 0; b < blocks_per_seq; ++b) {  // interleaved, non-contiguous blocks
    table0[static_cast<size_t>(b)] = 2 * b + 1;
    table1[static_cast<size_t>(b)] = 2 * b;
    ring0[static_cast<size_t>(b)] = blocks_per_seq + b;
    ring1[static_cast<size_t>(b)] = b;
  }
  for (Model* model : {reference_.get(), sharded_.get()})
    model->allocate_kv_cache(2 * blocks_per_seq, block, 2 * blocks_per_seq);
  int32_t done0 = 0, done1 = 0;
  for (int step = 0; done0 < length || done1 < length; ++step) {
    const int32_t take0 = std::min(length - done0, step == 0 ? 24 : 1), take1 = std::min(length - done1, 5);
    ForwardBatch batch;
    const std::span<const int32_t> s0(sequences[0]), s1(sequences[1]);
    if (take0 > 0)
      batch.sequences.push_back({s0.subspan(static_cast<size_t>(done0), static_cast<size_t>(take0)), done0, table0,
                                 LogitsWanted::kAll, ring0});
    if (take1 > 0)
      batch.sequences.push_back({s1.subspan(static_cast<size_t>(done1), static_cast<size_t>(take1)), done1, table1,
                                 LogitsWanted::kLast, ring1});
    std::vector<float> ref, ours;
    reference_->forward(batch, ref);
    sharded_->forward(batch, ours);
    ASSERT_EQ(ours.size(), ref.size());
    EXPECT_LE(relative_l2(ours.data(), ref.data(), static_cast<int64_t>(ref.size())), kMaxRelative) << "step " << step;
    done0 += take0;
    done1 += take1;
  }
}

// Greedy rows drawn vocab-parallel are the argmax of the unsharded logits; seeded rows are drawn.
TEST_P(ShardedModelTest, ForwardSampleGreedyIsTheUnshardedArgmax) {
  const auto sequences = random_sequences(13, 3, 12, source_.config.vocab_size);
  std::vector<int32_t> table(3);
  std::iota(table.begin(), table.end(), 0);
  reference_->allocate_kv_cache(3, 16);
  sharded_->allocate_kv_cache(3, 16);
  ForwardBatch batch;
  for (int s = 0; s < 3; ++s) {
    batch.sequences.push_back(
        {sequences[static_cast<size_t>(s)], 0, std::span<const int32_t>(table).subspan(static_cast<size_t>(s), 1)});
  }
  std::vector<float> ref;
  reference_->forward(batch, ref);
  const std::vector<RowSampling> rows = {{0.0f, 0, 1.0f, 0}, {0.8f, 20, 0.9f, 5}, {0.0f, 0, 1.0f, 0}};
  std::vector<int32_t> tokens;
  sharded_->forward_sample(batch, rows, tokens);
  ASSERT_EQ(tokens.size(), 3u);
  EXPECT_EQ(tokens[0], argmax(ref.data(), source_.config.vocab_size));
  EXPECT_EQ(tokens[2], argmax(ref.data() + 2 * source_.config.vocab_size, source_.config.vocab_size));
  EXPECT_GE(tokens[1], 0);
  EXPECT_LT(tokens[1], source_.config.vocab_size);
}

// Rows with token masks, penalties and logprobs sample on the vocab slices: the unsharded model's tokens
// and logprobs (its logits through the single-device rule: the mask, then kernels::sampling_cpu), and the
// step moves no full logits (fewer bytes than one gather of [rows, vocab] f32 above the plain rows' step).
TEST_P(ShardedModelTest, ForwardSampleWithMasksPenaltiesAndLogprobsEqualsUnsharded) {
  const int32_t vocab = source_.config.vocab_size, words = (vocab + 31) / 32;
  const auto sequences = random_sequences(14, 4, 12, vocab);
  std::vector<int32_t> table(4);
  std::iota(table.begin(), table.end(), 0);
  reference_->allocate_kv_cache(4, 16);
  sharded_->allocate_kv_cache(4, 16);
  ForwardBatch batch;
  for (int s = 0; s < 4; ++s) {
    batch.sequences.push_back(
        {sequences[static_cast<size_t>(s)], 0, std::span<const int32_t>(table).subspan(static_cast<size_t>(s), 1)});
  }
  std::vector<float> logits;
  reference_->forward(batch, logits);
  std::vector<uint32_t> mask(static_cast<size_t>(words), 0u);
  SplitMix64 rng(15);
  for (uint32_t& word : mask) word = static_cast<uint32_t>(rng.next());
  std::vector<int32_t> penalty_tokens, penalty_counts;
  for (int32_t t = 0; t < vocab; t += vocab / 64) {
    penalty_tokens.push_back(t);
    penalty_counts.push_back(t % 3);
  }
  std::vector<RowSampling> rows = {{0.0f, 0, 1.0f, 0}, {0.8f, 20, 0.9f, 5}, {0.0f, 0, 1.0f, 0}, {1.0f, 0, 1.0f, 9}};
  const std::vector<RowSampling> plain = rows;
  rows[0].token_mask = mask.data();
  rows[0].num_top_logprobs = 5;
  rows[1].penalty_tokens = rows[2].penalty_tokens = penalty_tokens;
  rows[1].penalty_counts = rows[2].penalty_counts = penalty_counts;
  rows[1].presence = rows[2].presence = 0.4f;
  rows[1].frequency = rows[2].frequency = 0.3f;
  rows[1].repetition = rows[2].repetition = 1.2f;
  rows[1].num_top_logprobs = 0;
  rows[2].token_mask = mask.data();
  rows[3].num_top_logprobs = 20;

  // The single-device rule on the unsharded logits.
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].token_mask == nullptr) continue;
    kernels::TokenMaskParams masking;
    masking.logits = logits.data() + r * static_cast<size_t>(vocab);
    masking.masks = rows[r].token_mask;
    masking.num_rows = 1;
    masking.vocab = vocab;
    masking.words = words;
    kernels::token_mask_cpu(masking);
  }
  HostSamplingBatch expected(rows, vocab);
  kernels::sampling_cpu(expected.params(logits.data()));

  auto& sharded = dynamic_cast<CpuShardedModel&>(*sharded_);
  std::vector<int32_t> tokens;
  std::vector<RowLogprobs> logprobs;
  const int64_t before_plain = sharded.communicated_bytes();
  sharded.forward_sample(batch, plain, tokens);
  const int64_t plain_bytes = sharded.communicated_bytes() - before_plain;
  const int64_t before = sharded.communicated_bytes();
  sharded.forward_sample(batch, rows, tokens, logprobs);
  const int64_t bytes = sharded.communicated_bytes() - before;
  EXPECT_LT(bytes - plain_bytes, static_cast<int64_t>(rows.size()) * vocab * 4)
      << "plain step " << plain_bytes << " B, with masks, penalties and logprobs " << bytes << " B";

  ASSERT_EQ(tokens.size(), rows.size());
  ASSERT_EQ(logprobs.size(), rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    EXPECT_EQ(tokens[r], expected.tokens[r]) << "row " << r;
    if (rows[r].num_top_logprobs < 0) continue;
    const RowLogprobs want = expected.logprobs(static_cast<int32_t>(r));
    EXPECT_NEAR(logprobs[r].logprob, want.logprob, kMaxRelative * std::max(1.0f, std::abs(want.logprob)))
        << "row " << r;
    ASSERT_EQ(logprobs[r].top.size(), want.top.size()) << "row " << r;
    for (size_t j = 0; j < want.top.size(); ++j) {
      EXPECT_EQ(logprobs[r].top[j].first, want.top[j].first) << "row " << r << " top " << j;
      EXPECT_NEAR(logprobs[r].top[j].second, want.top[j].second,
                  kMaxRelative * std::max(1.0f, std::abs(want.top[j].second)))
          << "row " << r << " top " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, ShardedModelTest,
    ::testing::Values(LayoutCase{"tiny", 2, false, 150}, LayoutCase{"tiny", 4, false, 150},
                      LayoutCase{"tiny", 8, false, 150}, LayoutCase{"tiny", 2, true, 150},
                      LayoutCase{"tiny", 4, true, 150}, LayoutCase{"tiny", 8, true, 150},
                      LayoutCase{"hf_sharded", 2, false, 40}, LayoutCase{"hf_sharded", 4, false, 40},
                      LayoutCase{"hf_sharded", 8, false, 40}, LayoutCase{"hf_sharded", 2, true, 40},
                      LayoutCase{"original_layout", 2, false, 48}, LayoutCase{"original_layout", 4, false, 48},
                      LayoutCase{"original_layout", 8, false, 48}, LayoutCase{"20b-heads", 8, false, 24},
                      LayoutCase{"20b-heads", 8, true, 24}, LayoutCase{"120b-heads", 4, true, 24},
                      LayoutCase{"120b-heads", 8, true, 24}),
    case_name);

TEST(ShardingLayoutTest, BadLayoutsGiveClearErrors) {
  auto message = [](const ParallelLayout& layout, const GptOssConfig& config, int gpus) {
    try {
      validate_layout(layout, config, gpus);
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  const GptOssConfig tiny = preset_config("tiny"), big = preset_config("20b");
  EXPECT_NE(message({3, false, 1}, tiny, -1).find("does not divide the model's 16 attention heads"), std::string::npos);
  GptOssConfig odd_kv = tiny;  // 24 query heads over 3 KV heads: TP 2 splits the queries, not the KV heads
  odd_kv.num_q_heads = 24;
  odd_kv.num_kv_heads = 3;
  EXPECT_NE(message({2, false, 1}, odd_kv, -1).find("neither divides nor is a multiple of the model's 3 KV heads"),
            std::string::npos);
  EXPECT_EQ(message({16, false, 1}, big, 16), "");  // 8 KV heads, each on 2 ranks
  EXPECT_NE(message({16, true, 1}, tiny, -1).find("does not divide the model's 8 experts"), std::string::npos);
  EXPECT_NE(message({8, false, 2}, big, 8).find("needs 16 GPUs"), std::string::npos);
  EXPECT_NE(message({2, false, 1}, big, 1).find("but 1 are present"), std::string::npos);
  EXPECT_NE(message({0, false, 1}, big, -1).find("must be ≥ 1"), std::string::npos);
  EXPECT_EQ(message({8, true, 1}, big, 8), "");
  EXPECT_EQ(message({4, true, 2}, big, 8), "");
}

TEST(ShardingLayoutTest, ShardsCoverEveryHeadExpertAndToken) {
  const GptOssConfig config = preset_config("120b");
  for (int32_t tp : {1, 2, 4, 8}) {
    for (bool ep : {false, true}) {
      const ParallelLayout layout{tp, ep, 1};
      int64_t q = 0, experts = 0, vocab = 0, inter = 0;
      for (int32_t rank = 0; rank < tp; ++rank) {
        const RankShard shard = shard_for(layout, config, rank);
        EXPECT_EQ(shard.q_heads.begin, q);
        EXPECT_EQ(shard.vocab.begin, vocab);
        q = shard.q_heads.end;
        vocab = shard.vocab.end;
        experts += shard.experts.size();
        inter += shard.intermediate.size();
        // the local query heads read only the local KV heads
        EXPECT_EQ(shard.q_heads.begin / 8, shard.kv_heads.begin);
        EXPECT_EQ((shard.q_heads.end - 1) / 8, shard.kv_heads.end - 1);
      }
      EXPECT_EQ(q, 64);
      EXPECT_EQ(vocab, config.vocab_size);
      EXPECT_EQ(experts, ep ? 128 : 128 * tp);
      EXPECT_EQ(inter, ep ? 2880 * tp : 2880);
    }
  }
}

}  // namespace
}  // namespace gossamer::model
