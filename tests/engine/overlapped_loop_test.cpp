// The overlapped engine loop (engine/engine.h) on a model whose steps really run asynchronously: each step of
// a FakeModel runs on a worker thread between launch_step and wait_step, so the engine's schedule() of the
// next step and its postprocess() of the previous one run while the step computes. Greedy outputs must be
// the model's own, batched, chunked and preempted alike; stops found late compute and emit nothing past
// them; cancels and failed steps leave no blocks behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "engine/engine.h"
#include "engine_test_requests.h"
#include "testing/fake_model.h"

namespace gossamer::engine {
namespace {

using namespace std::chrono_literals;

constexpr TokenId kReturn = 200002;  // <|return|>, a stop token of the scripts below

// A FakeModel whose steps run on a worker thread: launch_step takes the inner model's copy of the step
// (the default launch_step) and starts its wait_step, which computes it, on the worker; wait_step joins.
// It records every launched step's input tokens and can be told to fail one step.
class AsyncFakeModel final : public model::Model {
 public:
  explicit AsyncFakeModel(FakeModelOptions options) : inner_(std::move(options)) {}
  ~AsyncFakeModel() override {
    if (worker_.joinable()) worker_.join();
  }

  const model::GptOssConfig& config() const override { return inner_.config(); }
  std::string backend_name() const override { return "async-fake"; }
  int32_t kv_num_blocks() const override { return inner_.kv_num_blocks(); }
  int32_t kv_block_size() const override { return inner_.kv_block_size(); }
  int64_t kv_bytes_per_block() const override { return inner_.kv_bytes_per_block(); }
  bool samples_on_device() const override { return inner_.samples_on_device(); }
  bool samples_with_token_masks() const override { return inner_.samples_with_token_masks(); }
  void forward(const model::ForwardBatch& batch, std::vector<float>& logits) override { inner_.forward(batch, logits); }
  using model::Model::forward_sample;
  void forward_sample(const model::ForwardBatch& batch, std::span<const model::RowSampling> rows,
                      std::vector<int32_t>& tokens, std::vector<model::RowLogprobs>& logprobs) override {
    inner_.forward_sample(batch, rows, tokens, logprobs);
  }

  void launch_step(const model::ForwardBatch& batch, std::optional<std::span<const model::RowSampling>> rows) override {
    GOSSAMER_CHECK(!in_flight_, "AsyncFakeModel: a step is already in flight");
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const model::SequenceInput& seq : batch.sequences)
        launched_tokens_.insert(launched_tokens_.end(), seq.tokens.begin(), seq.tokens.end());
      launched_sequences_.push_back(static_cast<int32_t>(batch.sequences.size()));
      ++num_launched_;
    }
    inner_.launch_step(batch, rows);  // the copy
    const bool fail = num_launched_ == fail_step_;
    in_flight_ = true;
    worker_ = std::thread([this, fail] {
      error_ = nullptr;
      try {
        inner_.wait_step(result_);
        if (fail) throw Error("AsyncFakeModel: this step fails");
      } catch (...) {
        error_ = std::current_exception();
      }
    });
  }
  void wait_step(model::StepResult& result) override {
    GOSSAMER_CHECK(in_flight_, "AsyncFakeModel: no step in flight");
    worker_.join();
    in_flight_ = false;
    if (error_) std::rethrow_exception(error_);
    std::swap(result, result_);
  }

  // Engine thread only (the engine's callbacks run there): a step launched and not yet waited for.
  bool in_flight() const { return in_flight_; }
  void fail_step(int64_t step) { fail_step_ = step; }
  int64_t num_launched() const { return num_launched_; }
  std::vector<TokenId> launched_tokens() {
    std::lock_guard<std::mutex> lock(mutex_);
    return launched_tokens_;
  }
  // Sequences per launched step, in launch order.
  std::vector<int32_t> launched_sequences() {
    std::lock_guard<std::mutex> lock(mutex_);
    return launched_sequences_;
  }
  const FakeModel& inner() const { return inner_; }

 protected:
  void allocate_kv_cache_impl(int32_t num_blocks, int32_t block_size, int32_t num_sliding_blocks) override {
    inner_.allocate_kv_cache(num_blocks, block_size, num_sliding_blocks);
  }

 private:
  FakeModel inner_;
  std::thread worker_;
  model::StepResult result_;
  std::exception_ptr error_;
  bool in_flight_ = false;
  std::atomic<int64_t> num_launched_{0};
  std::atomic<int64_t> fail_step_{-1};
  std::mutex mutex_;
  std::vector<TokenId> launched_tokens_;
  std::vector<int32_t> launched_sequences_;
};

// A greedy request that stops at <|return|>.
SubmitParams greedy_to_return(std::vector<TokenId> prompt, int32_t max_tokens, OutputCollector& outputs) {
  SubmitParams params = greedy(std::move(prompt), max_tokens, outputs);
  params.sampling.stop_token_ids = {kReturn};
  return params;
}

// The model's own greedy continuation, up to max_tokens or its first stop token.
std::vector<TokenId> reference_greedy(const FakeModel& model, std::vector<TokenId> history, int32_t max_tokens) {
  std::vector<TokenId> out;
  for (int i = 0; i < max_tokens; ++i) {
    const TokenId token = model.next_token(history);
    out.push_back(token);
    history.push_back(token);
    if (token == kReturn) break;
  }
  return out;
}

class OverlappedLoop : public testing::TestWithParam<bool> {};  // device sampling or not

TEST_P(OverlappedLoop, BatchingAndPreemptionDoNotChangeGreedyOutputs) {
  FakeModelOptions options;
  options.device_sampling = GetParam();
  options.step_delay_us = 200;
  options.stop_one_in = 60;  // about half the requests stop early, on <|return|>
  const FakeModel reference(options);
  EngineConfig config = test_config();
  config.num_kv_blocks = 40;  // 160 positions for 24 requests of ~60: forces preemption
  config.max_model_len = 128;
  auto owned = std::make_unique<AsyncFakeModel>(options);
  AsyncFakeModel* model = owned.get();
  Engine engine(std::move(owned), config);
  OutputCollector outputs;
  std::map<RequestId, int> index_of;
  const int n = 24;
  for (int i = 0; i < n; ++i) index_of[engine.submit(greedy_to_return(prompt_of(i, 10 + i), 40, outputs))] = i;
  ASSERT_TRUE(outputs.wait(n));
  int stopped = 0;
  for (const auto& [id, i] : index_of) {
    const OutputCollector::Record record = outputs.get(id);
    const std::vector<TokenId> expected = reference_greedy(reference, prompt_of(i, 10 + i), 40);
    EXPECT_EQ(record.tokens, expected) << "request " << i;
    EXPECT_EQ(record.num_output_tokens, static_cast<int32_t>(expected.size())) << "request " << i;
    EXPECT_EQ(record.reason, expected.back() == kReturn ? FinishReason::kStop : FinishReason::kLength);
    stopped += record.reason == FinishReason::kStop;
  }
  EXPECT_GT(stopped, 0);
  EXPECT_LT(stopped, n);
  // A stop is found after the next step was scheduled on its placeholder; that row leaves before launch,
  // so the stop token never runs as an input: nothing past a stop is computed.
  const std::vector<TokenId> launched = model->launched_tokens();
  EXPECT_EQ(std::count(launched.begin(), launched.end(), kReturn), 0);
  const EngineStats stats = engine.stats();
  EXPECT_GT(stats.num_preemptions_total, 0);
  EXPECT_EQ(stats.num_free_kv_blocks, config.num_kv_blocks);
  EXPECT_EQ(stats.num_running, 0);
  EXPECT_EQ(stats.num_waiting, 0);
}

TEST_P(OverlappedLoop, AStepsEventsGoOutWhileTheNextStepRuns) {
  FakeModelOptions options;
  options.device_sampling = GetParam();
  options.step_delay_us = 500;
  auto owned = std::make_unique<AsyncFakeModel>(options);
  AsyncFakeModel* model = owned.get();
  Engine engine(std::move(owned), test_config());
  OutputCollector outputs;
  SubmitParams params = greedy_to_return(prompt_of(3, 20), 30, outputs);
  int events_while_in_flight = 0;  // NOTE: callbacks run on the engine thread, one at a time
  params.on_output = [collect = params.on_output, model, &events_while_in_flight](RequestOutput output) {
    events_while_in_flight += model->in_flight();
    collect(std::move(output));
  };
  const RequestId id = engine.submit(std::move(params));
  ASSERT_TRUE(outputs.wait(1));
  const OutputCollector::Record record = outputs.get(id);
  EXPECT_EQ(record.tokens.size(), 30u);
  EXPECT_EQ(record.num_events, 30);
  // Every event but the last (its request had no next step) is delivered after the next step was launched.
  EXPECT_EQ(events_while_in_flight, 29);
}

// Step 2 is scheduled while step 1 runs, but a request submitted during step 1 still joins it: admission is
// not a step later than in a loop that schedules after each step.
TEST_P(OverlappedLoop, ARequestSubmittedWhileAStepRunsJoinsTheNextStep) {
  FakeModelOptions options;
  options.device_sampling = GetParam();
  options.step_delay_us = 100000;
  auto owned = std::make_unique<AsyncFakeModel>(options);
  AsyncFakeModel* model = owned.get();
  Engine engine(std::move(owned), test_config());
  OutputCollector outputs;
  engine.submit(greedy_to_return(prompt_of(1, 8), 3, outputs));
  while (model->num_launched() < 1) std::this_thread::sleep_for(1ms);
  engine.submit(greedy_to_return(prompt_of(2, 8), 3, outputs));
  ASSERT_TRUE(outputs.wait(2));
  const std::vector<int32_t> sequences = model->launched_sequences();
  ASSERT_GE(sequences.size(), 2u);
  EXPECT_EQ(sequences[0], 1);
  EXPECT_EQ(sequences[1], 2);  // the first request's decode and the second's prompt
}

TEST_P(OverlappedLoop, CancelsWhileAStepRunsFreeEverything) {
  FakeModelOptions options;
  options.device_sampling = GetParam();
  options.step_delay_us = 1000;
  auto owned = std::make_unique<AsyncFakeModel>(options);
  AsyncFakeModel* model = owned.get();
  Engine engine(std::move(owned), test_config());
  OutputCollector outputs;
  std::vector<RequestId> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(engine.submit(greedy_to_return(prompt_of(i, 6 + i), 200, outputs)));
  while (model->num_launched() < 5) std::this_thread::sleep_for(1ms);
  for (const RequestId id : ids) engine.cancel(id);
  ASSERT_TRUE(outputs.wait(8));
  for (const RequestId id : ids) {
    const OutputCollector::Record record = outputs.get(id);
    EXPECT_EQ(record.reason, FinishReason::kAbort);
    EXPECT_EQ(record.num_output_tokens, static_cast<int32_t>(record.tokens.size()));
  }
  for (int i = 0; i < 200 && engine.stats().num_free_kv_blocks != 256; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(engine.stats().num_free_kv_blocks, 256);
}

TEST_P(OverlappedLoop, AFailedStepAbortsItsRequestsAndTheEngineGoesOn) {
  FakeModelOptions options;
  options.device_sampling = GetParam();
  options.step_delay_us = 200;
  const FakeModel reference(options);
  auto owned = std::make_unique<AsyncFakeModel>(options);
  AsyncFakeModel* model = owned.get();
  model->fail_step(4);
  Engine engine(std::move(owned), test_config());
  OutputCollector outputs;
  std::vector<RequestId> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(engine.submit(greedy_to_return(prompt_of(i, 8), 50, outputs)));
  ASSERT_TRUE(outputs.wait(4));
  for (const RequestId id : ids) EXPECT_EQ(outputs.get(id).reason, FinishReason::kAbort);
  const RequestId later = engine.submit(greedy_to_return(prompt_of(9, 8), 10, outputs));
  ASSERT_TRUE(outputs.wait(5));
  EXPECT_EQ(outputs.get(later).tokens, reference_greedy(reference, prompt_of(9, 8), 10));
  EXPECT_EQ(engine.stats().num_free_kv_blocks, 256);
}

INSTANTIATE_TEST_SUITE_P(Sampling, OverlappedLoop, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& info) { return info.param ? "Device" : "Host"; });

}  // namespace
}  // namespace gossamer::engine
