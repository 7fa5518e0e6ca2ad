// The overlapped engine loop (engine/engine.h) on a model whose steps really run asynchronously: each step of
// a FakeModel runs on a worker thread between launch_step and wait_step, so the engine's schedule() of the
// next step and its postprocess() of the previous one run while the step computes. Greedy outputs must be
// the model's own, batched, chunked and preempted alike; stops found late compute and emit nothing past
// them; cancels and failed steps leave no blocks behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "engine/engine.h"
#include "engine_test_requests.h"
#include "model/step_copy.h"
#include "testing/fake_model.h"

namespace gossamer::engine {
namespace {

using namespace std::chrono_literals;

constexpr TokenId kReturn = 200002;  // <|return|>, a stop token of the scripts below

// A FakeModel whose steps run on a worker thread, in launch order: launch_step copies the step
// (model::StepCopy) and queues it, the worker runs it on the inner model, wait_step takes the oldest
// result. With FakeModelOptions::feeds_pending_tokens (async scheduling) a second step may be launched
// while the first runs: the worker writes its pending ids from the tokens the first drew, as the cuda
// backend does on its device. It records the input tokens of every step as run and can be told to fail one.
class AsyncFakeModel final : public model::Model {
 public:
  explicit AsyncFakeModel(FakeModelOptions options)
      : inner_(options), feeds_(options.device_sampling && options.feeds_pending_tokens) {
    worker_ = std::thread([this] { work(); });
  }
  ~AsyncFakeModel() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    worker_.join();
  }

  const model::GptOssConfig& config() const override { return inner_.config(); }
  std::string backend_name() const override { return "async-fake"; }
  int32_t kv_num_blocks() const override { return inner_.kv_num_blocks(); }
  int32_t kv_block_size() const override { return inner_.kv_block_size(); }
  int64_t kv_bytes_per_block() const override { return inner_.kv_bytes_per_block(); }
  bool samples_on_device() const override { return inner_.samples_on_device(); }
  bool samples_with_token_masks() const override { return inner_.samples_with_token_masks(); }
  bool feeds_pending_tokens_on_device() const override { return feeds_; }
  void forward(const model::ForwardBatch&, std::vector<float>&) override {
    GOSSAMER_THROW("AsyncFakeModel: steps only");
  }

  void launch_step(const model::ForwardBatch& batch, std::optional<std::span<const model::RowSampling>> rows) override {
    GOSSAMER_CHECK(in_flight_.empty() || (feeds_ && in_flight_.size() == 1 && rows),
                   "AsyncFakeModel: a step is already in flight");
    auto job = std::make_shared<Job>();
    job->step.assign(batch, rows, inner_.config().vocab_size);
    GOSSAMER_CHECK(!job->step.has_pending_tokens() || !in_flight_.empty(),
                   "AsyncFakeModel: pending tokens with no step in flight");
    num_launched_ahead_ += in_flight_.empty() ? 0 : 1;
    job->fail = ++num_launched_ == fail_step_;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      launched_sequences_.push_back(static_cast<int32_t>(batch.sequences.size()));
      queued_.push_back(job);
    }
    in_flight_.push_back(std::move(job));
    wake_.notify_all();
  }
  void wait_step(model::StepResult& result) override {
    GOSSAMER_CHECK(!in_flight_.empty(), "AsyncFakeModel: no step in flight");
    const std::shared_ptr<Job> job = in_flight_.front();
    in_flight_.pop_front();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return job->done; });
    if (job->error) std::rethrow_exception(job->error);
    std::swap(result, job->result);
  }

  // Engine thread only (the engine's callbacks run there): a step launched and not yet waited for.
  bool in_flight() const { return !in_flight_.empty(); }
  void fail_step(int64_t step) { fail_step_ = step; }
  int64_t num_launched() const { return num_launched_; }
  // Steps launched while another was in flight.
  int64_t num_launched_ahead() const { return num_launched_ahead_; }
  // The input tokens of every step, as run (pending ones fed).
  std::vector<TokenId> launched_tokens() {
    std::lock_guard<std::mutex> lock(mutex_);
    return run_tokens_;
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
  struct Job {
    model::StepCopy step;
    bool fail = false;
    bool done = false;  // guarded by mutex_
    model::StepResult result;
    std::exception_ptr error;
  };

  void work() {
    std::vector<int32_t> drawn;  // the tokens of the step run last, for the next one's pending rows
    bool last_failed = false;
    while (true) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || !queued_.empty(); });
        if (queued_.empty()) return;
        job = queued_.front();
        queued_.pop_front();
      }
      try {
        if (job->step.has_pending_tokens()) {
          GOSSAMER_CHECK(!last_failed, "AsyncFakeModel: the step its pending tokens come from failed");
          job->step.feed_pending_tokens(drawn);
        }
        {
          std::lock_guard<std::mutex> lock(mutex_);
          for (const model::SequenceInput& seq : job->step.batch.sequences)
            run_tokens_.insert(run_tokens_.end(), seq.tokens.begin(), seq.tokens.end());
        }
        if (job->step.sampled) {
          inner_.forward_sample(job->step.batch, job->step.rows, job->result.tokens, job->result.logprobs);
        } else {
          inner_.forward(job->step.batch, job->result.logits);
        }
        if (job->fail) throw Error("AsyncFakeModel: this step fails");
        drawn = job->result.tokens;
        last_failed = false;
      } catch (...) {
        job->error = std::current_exception();
        last_failed = true;
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        job->done = true;
      }
      done_.notify_all();
    }
  }

  FakeModel inner_;  // the worker's only, once steps run
  const bool feeds_;
  std::deque<std::shared_ptr<Job>> in_flight_;  // engine thread: launched, not waited for
  std::atomic<int64_t> num_launched_{0};
  std::atomic<int64_t> num_launched_ahead_{0};
  std::atomic<int64_t> fail_step_{-1};
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  bool stop_ = false;
  std::deque<std::shared_ptr<Job>> queued_;  // launched, not yet run
  std::vector<TokenId> run_tokens_;
  std::vector<int32_t> launched_sequences_;
  std::thread worker_;
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

// Tokens drawn on the host, on the device, or on the device with async scheduling (step N+1 launched before
// step N's tokens are back, its pending ids fed by the model).
enum class LoopMode { kHostSampling, kDeviceSampling, kAsyncScheduling };

class OverlappedLoop : public testing::TestWithParam<LoopMode> {
 protected:
  bool async() const { return GetParam() == LoopMode::kAsyncScheduling; }
  FakeModelOptions mode_options() const {
    FakeModelOptions options;
    options.device_sampling = GetParam() != LoopMode::kHostSampling;
    options.feeds_pending_tokens = async();
    return options;
  }
  EngineConfig mode_config(EngineConfig config = test_config()) const {
    config.async_scheduling = async();
    return config;
  }
};

TEST_P(OverlappedLoop, BatchingAndPreemptionDoNotChangeGreedyOutputs) {
  FakeModelOptions options = mode_options();
  options.step_delay_us = 200;
  options.stop_one_in = 60;  // about half the requests stop early, on <|return|>
  const FakeModel reference(options);
  EngineConfig config = test_config();
  config.num_kv_blocks = 40;  // 160 positions for 24 requests of ~60: forces preemption
  config.max_model_len = 128;
  auto owned = std::make_unique<AsyncFakeModel>(options);
  AsyncFakeModel* model = owned.get();
  Engine engine(std::move(owned), mode_config(config));
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
  // so the stop token never runs as an input: nothing past a stop is computed. With async scheduling the
  // next step is launched first, so the stop token may run once (what it drew is dropped), never more.
  const std::vector<TokenId> launched = model->launched_tokens();
  if (async()) {
    EXPECT_LE(std::count(launched.begin(), launched.end(), kReturn), stopped);
    EXPECT_GT(model->num_launched_ahead(), model->num_launched() / 2);
  } else {
    EXPECT_EQ(std::count(launched.begin(), launched.end(), kReturn), 0);
    EXPECT_EQ(model->num_launched_ahead(), 0);
  }
  const EngineStats stats = engine.stats();
  EXPECT_EQ(stats.num_steps_launched_ahead_total, model->num_launched_ahead());  // the engine's count is the model's
  EXPECT_GT(stats.num_preemptions_total, 0);
  EXPECT_EQ(stats.num_free_kv_blocks, config.num_kv_blocks);
  EXPECT_EQ(stats.num_running, 0);
  EXPECT_EQ(stats.num_waiting, 0);
}

TEST_P(OverlappedLoop, AStepsEventsGoOutWhileTheNextStepRuns) {
  FakeModelOptions options = mode_options();
  options.step_delay_us = 500;
  auto owned = std::make_unique<AsyncFakeModel>(options);
  AsyncFakeModel* model = owned.get();
  Engine engine(std::move(owned), mode_config());
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
  FakeModelOptions options = mode_options();
  options.step_delay_us = 100000;
  auto owned = std::make_unique<AsyncFakeModel>(options);
  AsyncFakeModel* model = owned.get();
  Engine engine(std::move(owned), mode_config());
  OutputCollector outputs;
  engine.submit(greedy_to_return(prompt_of(1, 8), 3, outputs));
  while (model->num_launched() < 1) std::this_thread::sleep_for(1ms);
  engine.submit(greedy_to_return(prompt_of(2, 8), 3, outputs));
  ASSERT_TRUE(outputs.wait(2));
  const std::vector<int32_t> sequences = model->launched_sequences();
  ASSERT_GE(sequences.size(), 3u);
  EXPECT_EQ(sequences[0], 1);
  if (async()) {
    // Step 2 (the first request's decode) was launched before step 1's token came back, most likely before
    // the second request came in: it joins step 3 then.
    EXPECT_TRUE(sequences[1] == 2 || sequences[2] == 2);
  } else {
    EXPECT_EQ(sequences[1], 2);  // the first request's decode and the second's prompt
  }
}

TEST_P(OverlappedLoop, CancelsWhileAStepRunsFreeEverything) {
  FakeModelOptions options = mode_options();
  options.step_delay_us = 1000;
  auto owned = std::make_unique<AsyncFakeModel>(options);
  AsyncFakeModel* model = owned.get();
  Engine engine(std::move(owned), mode_config());
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
  FakeModelOptions options = mode_options();
  options.step_delay_us = 200;
  const FakeModel reference(options);
  auto owned = std::make_unique<AsyncFakeModel>(options);
  AsyncFakeModel* model = owned.get();
  model->fail_step(4);
  Engine engine(std::move(owned), mode_config());
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

// Async scheduling keeps today's order for the steps of penalized rows whose token is pending and of
// constrained rows: the tokens equal the ones drawn without it.
TEST_P(OverlappedLoop, PenalizedRowsWaitForTheirPendingToken) {
  if (!async()) GTEST_SKIP() << "async scheduling only";
  FakeModelOptions options = mode_options();
  options.scripts.push_back({{}, std::vector<int32_t>(40, 1234)});  // the same token, forced, 40 times
  const auto run = [&](bool async_scheduling) {
    auto owned = std::make_unique<AsyncFakeModel>(options);
    AsyncFakeModel* model = owned.get();
    EngineConfig config = test_config();
    config.async_scheduling = async_scheduling;
    Engine engine(std::move(owned), config);
    OutputCollector outputs;
    SubmitParams params = greedy(prompt_of(5, 6), 30, outputs);
    params.sampling.frequency_penalty = 2.0f;  // 10 − 2·c falls below the fake's floor after 20 repeats
    params.sampling.ignore_eos = true;
    const RequestId id = engine.submit(std::move(params));
    EXPECT_TRUE(outputs.wait(1));
    EXPECT_EQ(model->num_launched_ahead(), 0);
    return outputs.get(id).tokens;
  };
  const std::vector<TokenId> tokens = run(true);
  EXPECT_EQ(tokens.size(), 30u);
  EXPECT_NE(tokens, std::vector<TokenId>(30, 1234));
  EXPECT_EQ(tokens, run(false));
}

// Seeded sampling draws the same tokens with and without async scheduling (each row's seed is taken at
// launch, in the same order per request).
TEST_P(OverlappedLoop, SeededSamplingIsTheSameLaunchedAhead) {
  if (GetParam() == LoopMode::kHostSampling) GTEST_SKIP() << "device sampling only";
  const auto run = [&](bool async_scheduling) {
    FakeModelOptions options = mode_options();
    options.feeds_pending_tokens = async_scheduling;
    EngineConfig config = test_config();
    config.async_scheduling = async_scheduling;
    Engine engine(std::make_unique<AsyncFakeModel>(options), config);
    OutputCollector outputs;
    std::vector<RequestId> ids;
    for (int i = 0; i < 6; ++i) {
      SubmitParams params = greedy(prompt_of(i, 5 + i), 25, outputs);
      params.sampling.temperature = 1.0f;
      params.sampling.seed = 77 + i;
      ids.push_back(engine.submit(std::move(params)));
    }
    EXPECT_TRUE(outputs.wait(6));
    std::vector<std::vector<TokenId>> tokens;
    for (const RequestId id : ids) tokens.push_back(outputs.get(id).tokens);
    return tokens;
  };
  EXPECT_EQ(run(true), run(false));
}

INSTANTIATE_TEST_SUITE_P(Sampling, OverlappedLoop,
                         testing::Values(LoopMode::kHostSampling, LoopMode::kDeviceSampling,
                                         LoopMode::kAsyncScheduling),
                         [](const testing::TestParamInfo<LoopMode>& info) {
                           switch (info.param) {
                             case LoopMode::kHostSampling: return "Host";
                             case LoopMode::kDeviceSampling: return "Device";
                             case LoopMode::kAsyncScheduling: return "DeviceAsync";
                           }
                           return "";
                         });

}  // namespace
}  // namespace gossamer::engine
