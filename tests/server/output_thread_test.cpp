// Server work leaves the engine thread (issue #14 §5): chat completions and Responses requests driven
// through the server's request states with a ResponseChannel whose post() runs work on a thread of its own
// (the stand-in for an HTTP I/O thread) write every byte of their answers (so parse Harmony, detokenize,
// match stop strings and build JSON before that) on that thread, and never on the engine thread, the one
// the model's steps run on.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "server/generation.h"
#include "server/openai_request.h"
#include "server/openai_server.h"
#include "server/responses_generation.h"
#include "server/responses_request.h"
#include "text/harmony_renderer.h"
#include "text/tokenizer.h"

namespace gossamer::server {
namespace {

using namespace std::chrono_literals;

// Plays a fixed answer after any prompt of prompt_len tokens (greedy: the scripted token is the only one
// with mass) and records the threads its steps run on.
class ScriptModel final : public model::Model {
 public:
  explicit ScriptModel(std::vector<int32_t> script) : script_(std::move(script)) {
    config_.num_layers = 1;
    config_.num_experts = 1;
    config_.experts_per_token = 1;
    config_.vocab_size = text::kVocabSize;
    config_.hidden_size = 64;
    config_.intermediate_size = 64;
    config_.head_dim = 64;
    config_.num_q_heads = 1;
    config_.num_kv_heads = 1;
    config_.layer_is_sliding = {false};
    config_.max_position_embeddings = 4096;
  }
  const model::GptOssConfig& config() const override { return config_; }
  std::string backend_name() const override { return "script"; }
  int32_t kv_num_blocks() const override { return num_blocks_; }
  int32_t kv_block_size() const override { return block_size_; }
  int64_t kv_bytes_per_block() const override { return 64; }
  void forward(const model::ForwardBatch& batch, std::vector<float>& logits) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      step_threads_.insert(std::this_thread::get_id());
    }
    const auto vocab = static_cast<size_t>(config_.vocab_size);
    size_t rows = 0;
    for (const model::SequenceInput& seq : batch.sequences) rows += seq.logits == model::LogitsWanted::kLast;
    logits.assign(rows * vocab, -30.0f);
    size_t row = 0;
    for (const model::SequenceInput& seq : batch.sequences) {
      if (seq.logits != model::LogitsWanted::kLast) continue;
      const int32_t generated = seq.num_cached + static_cast<int32_t>(seq.tokens.size()) - prompt_len_;
      const size_t at = std::min(static_cast<size_t>(std::max(generated, 0)), script_.size() - 1);
      logits[row++ * vocab + static_cast<size_t>(script_[at])] = 10.0f;
    }
  }
  void set_prompt_len(int32_t length) { prompt_len_ = length; }
  std::set<std::thread::id> step_threads() {
    std::lock_guard<std::mutex> lock(mutex_);
    return step_threads_;
  }

 protected:
  void allocate_kv_cache_impl(int32_t num_blocks, int32_t block_size, int32_t) override {
    num_blocks_ = num_blocks;
    block_size_ = block_size;
  }

 private:
  model::GptOssConfig config_;
  std::vector<int32_t> script_;
  std::atomic<int32_t> prompt_len_{0};
  int32_t num_blocks_ = 0, block_size_ = 0;
  std::mutex mutex_;
  std::set<std::thread::id> step_threads_;
};

// One thread that runs posted work in order: the stand-in for an HTTP I/O thread.
class PostThread {
 public:
  PostThread() : worker_([this] { run(); }) {}
  ~PostThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    worker_.join();
  }
  void post(std::function<void()> work) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      work_.push_back(std::move(work));
    }
    wake_.notify_all();
  }
  std::thread::id id() const { return worker_.get_id(); }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return stop_ || !work_.empty(); });
      if (work_.empty()) return;
      auto work = std::move(work_.front());
      work_.pop_front();
      lock.unlock();
      work();
      work = nullptr;  // NOTE: outside the lock: it may hold the last reference to a channel
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> work_;
  bool stop_ = false;
  std::thread worker_;  // NOTE: last, so that it starts after the members it uses
};

// A channel whose post() runs work on a PostThread; it records the thread of every write.
class ThreadChannel final : public ResponseChannel {
 public:
  explicit ThreadChannel(PostThread& thread) : thread_(thread) {}
  void respond(HttpResponse response) override { record(std::move(response.body), true); }
  void start_stream(int, const std::string&, HeaderList) override { record({}, false); }
  void write(std::string data) override { record(std::move(data), false); }
  void end_stream() override { record({}, true); }
  bool closed() const override { return false; }
  void on_close(std::function<void()>) override {}
  void post(std::function<void()> work) override { thread_.post(std::move(work)); }

  std::thread::id worker_id() const { return thread_.id(); }
  bool wait_done() {
    std::unique_lock<std::mutex> lock(mutex_);
    return done_cv_.wait_for(lock, 20s, [&] { return done_; });
  }
  std::string body() {
    std::lock_guard<std::mutex> lock(mutex_);
    return body_;
  }
  // Each call's thread and data (empty for start_stream and end_stream), in order.
  std::vector<std::pair<std::thread::id, std::string>> writes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return writes_;
  }

 private:
  void record(std::string data, bool last) {
    std::lock_guard<std::mutex> lock(mutex_);
    writes_.emplace_back(std::this_thread::get_id(), data);
    body_ += data;
    done_ = done_ || last;
    done_cv_.notify_all();
  }

  PostThread& thread_;
  std::mutex mutex_;
  std::condition_variable done_cv_;
  std::string body_;
  std::vector<std::pair<std::thread::id, std::string>> writes_;
  bool done_ = false;
};

class ServerWorkThread : public testing::Test {
 protected:
  void SetUp() override {
    tokenizer_ = text::Tokenizer::load_default();
    const std::vector<int32_t> script = tokenizer_->encode(
        "<|channel|>analysis<|message|>Say hi.<|end|><|start|>assistant<|channel|>final<|message|>Hello there, "
        "friend.<|return|>",
        {}, true);
    auto model = std::make_unique<ScriptModel>(script);
    model_ = model.get();
    ServerConfig config;
    config.log_stats = false;
    server_ = std::make_unique<OpenAiServer>(config);
    engine::EngineConfig engine_config;
    engine_config.num_kv_blocks = 256;
    engine_config.block_size = 16;
    engine_config.max_model_len = 2048;
    std::vector<std::unique_ptr<model::Model>> replicas;
    replicas.push_back(std::move(model));
    server_->attach(std::move(replicas), engine_config, tokenizer_);
    renderer_ = std::make_unique<text::harmony::HarmonyRenderer>(tokenizer_);
    context_.served_model_name = config.served_model_name;
    context_.max_model_len = 2048;
  }
  void TearDown() override { server_.reset(); }

  // No write came from the engine's thread, and every write from the first generated token on came from the
  // channel's posting thread (before it, only what submit() itself sends on the caller's thread: a Responses
  // stream's opening events).
  void expect_written_off_the_engine_thread(ThreadChannel& channel, const std::string& first_generated) {
    const std::set<std::thread::id> engine_threads = model_->step_threads();
    ASSERT_EQ(engine_threads.size(), 1u);
    const std::thread::id engine_thread = *engine_threads.begin();
    EXPECT_NE(engine_thread, std::this_thread::get_id());
    EXPECT_NE(engine_thread, channel.worker_id());
    bool generating = false;
    int on_worker = 0;
    for (const auto& [thread, data] : channel.writes()) {
      EXPECT_NE(thread, engine_thread) << data;
      generating = generating || data.find(first_generated) != std::string::npos;
      if (generating) {
        EXPECT_EQ(thread, channel.worker_id()) << data;
      }
      on_worker += thread == channel.worker_id();
    }
    EXPECT_TRUE(generating) << "no write holds " << first_generated;
    EXPECT_GT(on_worker, 0);
  }

  // Drops the test's reference and waits until the engine and the channel dropped theirs (every event
  // consumed), so that no event runs against the server after TearDown.
  template <typename State>
  static bool wait_released(std::shared_ptr<State>& state) {
    std::weak_ptr<State> weak = state;
    state.reset();
    for (int i = 0; i < 2000 && !weak.expired(); ++i) std::this_thread::sleep_for(5ms);
    return weak.expired();
  }

  PostThread io_;  // NOTE: first, so that it outlives the server and the channels
  std::shared_ptr<const text::Tokenizer> tokenizer_;
  ScriptModel* model_ = nullptr;
  std::unique_ptr<OpenAiServer> server_;
  std::unique_ptr<text::harmony::HarmonyRenderer> renderer_;
  ApiContext context_;
};

TEST_F(ServerWorkThread, StreamedChatCompletionIsWrittenOnTheChannelsThread) {
  const nlohmann::ordered_json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                       {"stream", true},
                                       {"max_tokens", 64},
                                       {"stream_options", {{"include_usage", true}}}};
  GenerationRequest request = parse_chat_request(body, context_, *renderer_);
  model_->set_prompt_len(static_cast<int32_t>(request.prompt.size()));
  auto channel = std::make_shared<ThreadChannel>(io_);
  auto state = std::make_shared<GenerationState>(*server_, channel, std::move(request), true);
  state->submit();
  ASSERT_TRUE(channel->wait_done());
  const std::string stream = channel->body();
  EXPECT_NE(stream.find("\"reasoning_content\":\"Say"), std::string::npos) << stream;
  EXPECT_NE(stream.find("\"content\":\"Hello"), std::string::npos) << stream;
  EXPECT_NE(stream.find("\"finish_reason\":\"stop\""), std::string::npos) << stream;
  EXPECT_NE(stream.find("data: [DONE]"), std::string::npos) << stream;
  const std::vector<std::pair<std::thread::id, std::string>> writes = channel->writes();
  for (const auto& [thread, data] : writes) EXPECT_EQ(thread, channel->worker_id()) << data;  // even the head
  expect_written_off_the_engine_thread(*channel, "\"role\":\"assistant\"");
  EXPECT_TRUE(wait_released(state));
}

TEST_F(ServerWorkThread, ChatCompletionWithAStopStringIsAnsweredOnTheChannelsThread) {
  const nlohmann::ordered_json body = {
      {"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 64}, {"stop", "friend"}, {"n", 2}};
  GenerationRequest request = parse_chat_request(body, context_, *renderer_);
  model_->set_prompt_len(static_cast<int32_t>(request.prompt.size()));
  auto channel = std::make_shared<ThreadChannel>(io_);
  auto state = std::make_shared<GenerationState>(*server_, channel, std::move(request), true);
  state->submit();
  ASSERT_TRUE(channel->wait_done());
  const nlohmann::json answer = nlohmann::json::parse(channel->body());
  ASSERT_EQ(answer["choices"].size(), 2u);
  for (const auto& choice : answer["choices"]) {
    EXPECT_EQ(choice["message"]["content"], "Hello there, ");
    EXPECT_EQ(choice["finish_reason"], "stop");
  }
  expect_written_off_the_engine_thread(*channel, "Hello there");
  EXPECT_TRUE(wait_released(state));
}

TEST_F(ServerWorkThread, StreamedResponsesRequestIsWrittenOnTheChannelsThread) {
  const nlohmann::ordered_json body = {{"input", "hi"}, {"stream", true}, {"store", false}};
  ResponsesStore store;
  ResponsesRequest request = parse_responses_request(body, context_, *renderer_, store);
  model_->set_prompt_len(static_cast<int32_t>(request.generation.prompt.size()));
  auto channel = std::make_shared<ThreadChannel>(io_);
  auto state = std::make_shared<ResponsesState>(*server_, channel, std::move(request));
  state->submit();
  ASSERT_TRUE(channel->wait_done());
  const std::string stream = channel->body();
  EXPECT_NE(stream.find("response.output_text.delta"), std::string::npos) << stream;
  EXPECT_NE(stream.find("event: response.completed"), std::string::npos) << stream;
  expect_written_off_the_engine_thread(*channel, "response.output_item.added");
  EXPECT_TRUE(wait_released(state));
}

}  // namespace
}  // namespace gossamer::server
