// The CPU backend against float32 logits from Hugging Face transformers' GptOssForCausalLM
// (tests/data/golden, made by tools/golden_logits.py). Bounds from the foundation issue: relative L2
// error per sequence ≤ 1e-3 and the same argmax at ≥ 99.5% of positions.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <numeric>

#include "golden_test.h"
#include "model/dummy_checkpoint.h"
#include "model/loader.h"
#include "model/sequence_runner.h"
#include "ring_pool.h"

namespace gossamer::model {
namespace {

using testing::compare_rows;

constexpr double kMaxRelativeL2 = 1e-3;
constexpr double kMinArgmaxMatch = 0.995;

std::string checkpoint_for(const std::string& name) {
  if (name == "tiny" || name == "tiny_conditioned") {
    // Tests run as parallel processes: write to a private folder, then publish it with an atomic rename.
    const auto dir = std::filesystem::temp_directory_path() / ("gossamer_golden_" + name);
    if (!std::filesystem::exists(dir / "model.safetensors")) {
      const auto staging =
          std::filesystem::temp_directory_path() / ("gossamer_golden_" + name + "." + std::to_string(::getpid()));
      write_dummy_checkpoint(preset_config("tiny"), 0, staging.string(),
                             name == "tiny" ? DummyInit::kStandard : DummyInit::kConditioned);
      std::error_code ignored;
      std::filesystem::rename(staging, dir, ignored);
      std::filesystem::remove_all(staging, ignored);
    }
    return dir.string();
  }
  if (name == "original_layout") return testing::golden_dir() + "/checkpoints/original_layout";
  return testing::golden_dir() + "/checkpoints/" + name;
}

class GoldenLogitsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenLogitsTest, BatchedPrefillMatchesTransformers) {
  const std::string name = GetParam();
  const auto tokens = testing::golden_tokens(name);
  const NpyArray ref = testing::golden_logits(name);
  auto model = load_model(checkpoint_for(name), "cpu");
  const int64_t vocab = model->config().vocab_size, length = static_cast<int64_t>(tokens[0].size());
  ASSERT_EQ(ref.shape, (std::vector<int64_t>{static_cast<int64_t>(tokens.size()), length, vocab}));
  const std::vector<float> logits = prefill_logits(*model, tokens);
  for (size_t s = 0; s < tokens.size(); ++s) {
    const auto agreement =
        compare_rows(logits.data() + s * length * vocab, ref.data.data() + s * length * vocab, length, vocab);
    EXPECT_LE(agreement.relative_l2, kMaxRelativeL2) << name << " sequence " << s;
    EXPECT_GE(agreement.argmax_match, kMinArgmaxMatch) << name << " sequence " << s;
    std::printf("[golden] %s seq %zu: rel L2 %.2e, argmax match %.4f\n", name.c_str(), s, agreement.relative_l2,
                agreement.argmax_match);
  }
}

// Prefill a prefix, then decode one token per step through the rest; sequence 1 is prefilled in chunks
// in the same steps as sequence 0 decodes (a mixed batch). Every position must match the golden logits.
TEST_P(GoldenLogitsTest, ChunkedPrefillAndDecodeMatchOneLongPrefill) {
  const std::string name = GetParam();
  const auto tokens = testing::golden_tokens(name);
  const NpyArray ref = testing::golden_logits(name);
  auto model = load_model(checkpoint_for(name), "cpu");
  const int64_t vocab = model->config().vocab_size, length = static_cast<int64_t>(tokens[0].size());
  const int32_t block = 16, blocks_per_seq = static_cast<int32_t>((length + block - 1) / block);
  model->allocate_kv_cache(2 * blocks_per_seq + 3, block);
  // Deliberately non-contiguous, interleaved block tables.
  std::vector<int32_t> table0, table1;
  for (int32_t b = 0; b < blocks_per_seq; ++b) {
    table0.push_back(2 * b + 3);
    table1.push_back(2 * blocks_per_seq - 2 * b);
  }
  std::vector<std::vector<float>> ours(2, std::vector<float>(static_cast<size_t>(length * vocab)));
  const int64_t prefix = length * 2 / 3, chunk = 7;
  int64_t done0 = 0, done1 = 0;
  std::vector<float> logits;
  while (done0 < length || done1 < length) {
    ForwardBatch batch;
    const int64_t n0 = done0 == 0 ? prefix : std::min<int64_t>(1, length - done0);
    const int64_t n1 = std::min<int64_t>(chunk, length - done1);
    if (n0 > 0)
      batch.sequences.push_back(
          {std::span(tokens[0]).subspan(done0, n0), static_cast<int32_t>(done0), table0, LogitsWanted::kAll});
    if (n1 > 0)
      batch.sequences.push_back(
          {std::span(tokens[1]).subspan(done1, n1), static_cast<int32_t>(done1), table1, LogitsWanted::kAll});
    model->forward(batch, logits);
    ASSERT_EQ(static_cast<int64_t>(logits.size()), (n0 + n1) * vocab);
    std::copy_n(logits.begin(), n0 * vocab, ours[0].begin() + done0 * vocab);
    std::copy_n(logits.begin() + n0 * vocab, n1 * vocab, ours[1].begin() + done1 * vocab);
    done0 += n0;
    done1 += n1;
  }
  for (size_t s = 0; s < 2; ++s) {
    const auto agreement = compare_rows(ours[s].data(), ref.data.data() + s * length * vocab, length, vocab);
    EXPECT_LE(agreement.relative_l2, kMaxRelativeL2) << name << " sequence " << s;
    EXPECT_GE(agreement.argmax_match, kMinArgmaxMatch) << name << " sequence " << s;
  }
}

// The sliding-window ring: sliding layers in a pool smaller than the sequences, blocks recycled as soon as
// they fall out of the window (margin 0) and handed to the other sequence. Both sequences prefill in
// chunks of 7, then decode; every position must still match the golden logits.
TEST_P(GoldenLogitsTest, SlidingRingWithRecycledBlocksMatches) {
  const std::string name = GetParam();
  const auto tokens = testing::golden_tokens(name);
  const NpyArray ref = testing::golden_logits(name);
  auto model = load_model(checkpoint_for(name), "cpu");
  const int32_t window = model->config().sliding_window;
  const int64_t vocab = model->config().vocab_size, length = static_cast<int64_t>(tokens[0].size()), chunk = 7;
  const int32_t block = 8, blocks_per_seq = static_cast<int32_t>((length + block - 1) / block);
  const int32_t ring_per_seq = static_cast<int32_t>((window - 1 + chunk + block - 1) / block) + 2;
  model->allocate_kv_cache(2 * blocks_per_seq, block, 2 * ring_per_seq);
  ASSERT_EQ(model->kv_num_sliding_blocks(), 2 * ring_per_seq);
  std::vector<int32_t> table0(static_cast<size_t>(blocks_per_seq)), table1(static_cast<size_t>(blocks_per_seq));
  for (int32_t b = 0; b < blocks_per_seq; ++b) {
    table0[static_cast<size_t>(b)] = b;
    table1[static_cast<size_t>(b)] = blocks_per_seq + b;
  }
  testing::RingPool pool(2 * ring_per_seq);
  testing::RingPool::Sequence ring0, ring1;
  std::vector<std::vector<float>> ours(2, std::vector<float>(static_cast<size_t>(length * vocab)));
  std::vector<float> logits;
  for (int64_t done = 0; done < length;) {
    const int64_t n = std::min<int64_t>(done < length / 2 ? chunk : 1, length - done);
    pool.prepare(ring0, done, done + n, window, 0, block);
    pool.prepare(ring1, done, done + n, window, 0, block);
    ForwardBatch batch;
    batch.sequences.push_back(
        {std::span(tokens[0]).subspan(done, n), static_cast<int32_t>(done), table0, LogitsWanted::kAll, ring0.table});
    batch.sequences.push_back(
        {std::span(tokens[1]).subspan(done, n), static_cast<int32_t>(done), table1, LogitsWanted::kAll, ring1.table});
    model->forward(batch, logits);
    std::copy_n(logits.begin(), n * vocab, ours[0].begin() + done * vocab);
    std::copy_n(logits.begin() + n * vocab, n * vocab, ours[1].begin() + done * vocab);
    done += n;
  }
  std::printf("[ring] %s: window %d, pool %d blocks for 2 x %d positions, %lld blocks handed out\n", name.c_str(),
              window, 2 * ring_per_seq, static_cast<int>(length), static_cast<long long>(pool.handed_out()));
  EXPECT_GT(pool.handed_out(), 2 * ring_per_seq) << "the test must recycle blocks";
  for (size_t s = 0; s < 2; ++s) {
    const auto agreement = compare_rows(ours[s].data(), ref.data.data() + s * length * vocab, length, vocab);
    EXPECT_LE(agreement.relative_l2, kMaxRelativeL2) << name << " sequence " << s;
    EXPECT_GE(agreement.argmax_match, kMinArgmaxMatch) << name << " sequence " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, GoldenLogitsTest,
                         ::testing::Values("tiny", "tiny_conditioned", "hf_sharded", "original_layout"));

TEST(GoldenLogitsTest, LogitsCommandWritesTheSameNpy) {
  const auto dir = std::filesystem::temp_directory_path() / "gossamer_logits_cmd";
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "out.npy").string();
  const std::string input = testing::golden_dir() + "/original_layout_tokens.json";
  const std::string command = std::string(GOSSAMER_BINARY) + " logits --model " + testing::golden_dir() +
                              "/checkpoints/original_layout --input " + input + " --output " + out + " 2>/dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const NpyArray ours = read_npy_f32(out);
  const NpyArray ref = testing::golden_logits("original_layout");
  ASSERT_EQ(ours.shape, ref.shape);
  const auto agreement = compare_rows(ours.data.data(), ref.data.data(), ref.shape[0] * ref.shape[1], ref.shape[2]);
  EXPECT_LE(agreement.relative_l2, kMaxRelativeL2);
}

}  // namespace
}  // namespace gossamer::model
