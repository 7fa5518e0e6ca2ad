// The engine's token-mask hook: a constrained request only ever samples allowed tokens, with host
// sampling and with a backend that applies the masks in forward_sample; accept() sees every token in
// order; a constraint that allows nothing aborts its request instead of inventing a token.
#include "engine/token_constraint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "testing/fake_model.h"

namespace gossamer::engine {
namespace {

using namespace std::chrono_literals;

// Allows only tokens[step % 3] at even steps; every token at odd steps (fill_mask returns false).
class CyclingConstraint : public TokenConstraint {
 public:
  explicit CyclingConstraint(bool allow_nothing = false) : allow_nothing_(allow_nothing) {}
  bool fill_mask(std::span<uint32_t> mask) override {
    if (!allow_nothing_ && accepted.size() % 2 == 1) return false;
    std::fill(mask.begin(), mask.end(), 0u);
    if (!allow_nothing_) {
      const TokenId token = kTokens[(accepted.size() / 2) % 3];
      mask[static_cast<size_t>(token) / 32] |= 1u << (token % 32);
    }
    return true;
  }
  void accept(TokenId token) override { accepted.push_back(token); }
  static constexpr TokenId kTokens[3] = {1234, 99, 200001};
  std::vector<TokenId> accepted;

 private:
  bool allow_nothing_;
};

struct Result {
  std::vector<TokenId> tokens;
  FinishReason reason = FinishReason::kNone;
  int64_t device_steps = 0;  // forward_sample calls (masks applied by the backend)
};

Result run(bool device_sampling, std::shared_ptr<TokenConstraint> constraint, float temperature) {
  FakeModelOptions options;
  options.device_sampling = device_sampling;
  EngineConfig config;
  config.block_size = 4;
  config.num_kv_blocks = 64;
  config.max_model_len = 64;
  auto owned = std::make_unique<FakeModel>(options);
  FakeModel* model = owned.get();
  Engine engine(std::move(owned), config);
  std::mutex mutex;
  std::condition_variable done;
  Result result;
  bool finished = false;
  SubmitParams params;
  params.prompt = {5, 6, 7};
  params.sampling.temperature = temperature;
  params.sampling.max_tokens = 12;
  params.sampling.constraint = std::move(constraint);
  params.on_output = [&](const RequestOutput& output) {
    std::lock_guard<std::mutex> lock(mutex);
    result.tokens.insert(result.tokens.end(), output.new_tokens.begin(), output.new_tokens.end());
    if (output.finished) {
      result.reason = output.finish_reason;
      finished = true;
      done.notify_all();
    }
  };
  engine.submit(std::move(params));
  std::unique_lock<std::mutex> lock(mutex);
  EXPECT_TRUE(done.wait_for(lock, 20s, [&] { return finished; }));
  result.device_steps = model->num_forward_sample_calls();
  return result;
}

TEST(TokenConstraint, MaskedStepsSampleOnlyAllowedTokens) {
  for (const bool device : {false, true}) {
    for (const float temperature : {0.0f, 1.0f}) {
      auto constraint = std::make_shared<CyclingConstraint>();
      const Result result = run(device, constraint, temperature);
      ASSERT_EQ(result.tokens.size(), 12u);
      EXPECT_EQ(result.reason, FinishReason::kLength);
      EXPECT_EQ(constraint->accepted, result.tokens);
      EXPECT_EQ(result.device_steps > 0, device) << "a backend that applies masks samples masked rows itself";
      for (size_t i = 0; i < result.tokens.size(); i += 2) {
        EXPECT_EQ(result.tokens[i], CyclingConstraint::kTokens[(i / 2) % 3]) << "step " << i << " device " << device;
      }
    }
  }
}

TEST(TokenConstraint, AMaskThatAllowsNothingAbortsTheRequest) {
  const Result result = run(false, std::make_shared<CyclingConstraint>(true), 1.0f);
  EXPECT_TRUE(result.tokens.empty());
  EXPECT_EQ(result.reason, FinishReason::kAbort);
}

TEST(TokenConstraint, StepInfoReportsEveryMaskFilled) {
  // 12 tokens, each asked for a mask (6 restrict, 6 allow all), each reported once (the first launch's with
  // the next step).
  EngineConfig config;
  config.block_size = 4;
  config.num_kv_blocks = 64;
  config.max_model_len = 64;
  std::mutex mutex;
  std::condition_variable done;
  int32_t masked_rows = 0;
  double mask_seconds = 0.0;
  bool finished = false;
  {
    Engine engine(std::make_unique<FakeModel>(FakeModelOptions{}), config, [&](const StepInfo& info) {
      std::lock_guard<std::mutex> lock(mutex);
      masked_rows += info.num_constrained_rows;
      mask_seconds += info.token_mask_seconds;
      EXPECT_EQ(info.token_mask_seconds > 0.0, info.num_constrained_rows > 0);
    });
    SubmitParams params;
    params.prompt = {5, 6, 7};
    params.sampling.max_tokens = 12;
    params.sampling.constraint = std::make_shared<CyclingConstraint>();
    params.on_output = [&](const RequestOutput& output) {
      std::lock_guard<std::mutex> lock(mutex);
      finished |= output.finished;
      done.notify_all();
    };
    engine.submit(std::move(params));
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(done.wait_for(lock, 20s, [&] { return finished; }));
  }  // joined: every step was reported
  EXPECT_EQ(masked_rows, 12);
  EXPECT_GT(mask_seconds, 0.0);
}

// Logs the two-call launch of sampled steps (Model::launch_forward, launch_sampling) and plain launches.
class TwoHalvesModel final : public FakeModel {
 public:
  TwoHalvesModel(FakeModelOptions options, std::vector<std::string>& log, std::mutex& mutex)
      : FakeModel(std::move(options)), log_(log), mutex_(mutex) {}
  void launch_forward(const model::ForwardBatch& batch) override {
    add("forward");
    FakeModel::launch_forward(batch);
  }
  void launch_sampling(std::span<const model::RowSampling> rows) override {
    add(rows.front().token_mask != nullptr ? "sampling masked" : "sampling");
    FakeModel::launch_sampling(rows);
  }
  void launch_step(const model::ForwardBatch& batch, std::optional<std::span<const model::RowSampling>> rows) override {
    add("step");
    FakeModel::launch_step(batch, rows);
  }

 private:
  void add(const char* event) {
    std::lock_guard<std::mutex> lock(mutex_);
    log_.push_back(event);
  }
  std::vector<std::string>& log_;
  std::mutex& mutex_;
};

// Logs its fill_mask calls, allows one token; `throws` makes the first fill throw.
class LoggingConstraint : public TokenConstraint {
 public:
  LoggingConstraint(std::vector<std::string>& log, std::mutex& mutex, bool throws)
      : log_(log), mutex_(mutex), throws_(throws) {}
  bool fill_mask(std::span<uint32_t> mask) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      log_.push_back("fill");
    }
    if (throws_) throw Error("LoggingConstraint: a bug");
    std::fill(mask.begin(), mask.end(), 0u);
    mask[0] = 1u << 7;  // token 7
    return true;
  }
  void accept(TokenId) override {}

 private:
  std::vector<std::string>& log_;
  std::mutex& mutex_;
  bool throws_;
};

struct TwoHalvesRun {
  std::vector<std::string> log;
  std::vector<std::pair<std::vector<TokenId>, FinishReason>> results;  // per request, in submission order
};

// Requests run one after another (each waits for the previous), constrained as `constraints` says.
TwoHalvesRun run_two_halves(const std::vector<std::shared_ptr<TokenConstraint>>& constraints,
                            std::vector<std::string>& log, std::mutex& mutex) {
  FakeModelOptions options;
  options.device_sampling = true;
  EngineConfig config;
  config.block_size = 4;
  config.num_kv_blocks = 64;
  config.max_model_len = 64;
  Engine engine(std::make_unique<TwoHalvesModel>(options, log, mutex), config);
  TwoHalvesRun run;
  for (const auto& constraint : constraints) {
    std::condition_variable done;
    bool finished = false;
    std::pair<std::vector<TokenId>, FinishReason> result;
    SubmitParams params;
    params.prompt = {5, 6, 7};
    params.sampling.max_tokens = 3;
    params.sampling.constraint = constraint;
    params.on_output = [&](const RequestOutput& output) {
      std::lock_guard<std::mutex> lock(mutex);
      result.first.insert(result.first.end(), output.new_tokens.begin(), output.new_tokens.end());
      if (output.finished) {
        result.second = output.finish_reason;
        finished = true;
        done.notify_all();
      }
    };
    engine.submit(std::move(params));
    std::unique_lock<std::mutex> lock(mutex);
    EXPECT_TRUE(done.wait_for(lock, 20s, [&] { return finished; }));
    run.results.push_back(result);
  }
  return run;
}

TEST(TokenConstraint, MasksAreFilledAfterTheForwardStarts) {
  // On a backend that applies masks, a constrained step starts its forward, then fills its masks, then
  // gives its rows; an unconstrained step launches in one call.
  std::vector<std::string> log;
  std::mutex mutex;
  const TwoHalvesRun run =
      run_two_halves({std::make_shared<LoggingConstraint>(log, mutex, false), nullptr}, log, mutex);
  ASSERT_EQ(run.results.size(), 2u);
  EXPECT_EQ(run.results[0].first, (std::vector<TokenId>{7, 7, 7}));
  EXPECT_EQ(run.results[0].second, FinishReason::kLength);
  EXPECT_EQ(run.results[1].first.size(), 3u);
  // 3 constrained steps (the default launch_sampling launches the step), then 3 plain ones.
  std::vector<std::string> expected;
  for (int i = 0; i < 3; ++i) expected.insert(expected.end(), {"forward", "fill", "sampling masked", "step"});
  for (int i = 0; i < 3; ++i) expected.push_back("step");
  EXPECT_EQ(log, expected);
}

TEST(TokenConstraint, AConstraintThatThrowsAfterTheForwardStartedAbortsOnlyItsRequest) {
  std::vector<std::string> log;
  std::mutex mutex;
  const TwoHalvesRun run = run_two_halves({std::make_shared<LoggingConstraint>(log, mutex, true), nullptr}, log, mutex);
  ASSERT_EQ(run.results.size(), 2u);
  EXPECT_TRUE(run.results[0].first.empty());
  EXPECT_EQ(run.results[0].second, FinishReason::kAbort);
  EXPECT_EQ(run.results[1].first.size(), 3u) << "nothing was left in flight";
  EXPECT_EQ(run.results[1].second, FinishReason::kLength);
  ASSERT_GE(log.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(log.begin(), log.begin() + 4),
            (std::vector<std::string>{"forward", "fill", "sampling", "step"}))
      << "the forward was finished unmasked and its tokens dropped";
}

TEST(TokenConstraint, ApplyAndAllowsAny) {
  std::vector<float> logits(70, 1.0f);
  std::vector<uint32_t> mask(3, 0u);
  EXPECT_FALSE(token_mask_allows_any(mask, 70));
  mask[2] = 1u << 5;  // token 69
  EXPECT_TRUE(token_mask_allows_any(mask, 70));
  mask[2] = 1u << 6;  // token 70: past the vocabulary
  EXPECT_FALSE(token_mask_allows_any(mask, 70));
  mask[2] = 1u << 5;
  apply_token_mask(logits, mask);
  for (int t = 0; t < 70; ++t) EXPECT_EQ(std::isinf(logits[t]), t != 69) << t;
}

}  // namespace
}  // namespace gossamer::engine
