#include "bench/bench_multiturn.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "core/error.h"
#include "text/incremental_detokenizer.h"

namespace gossamer::server {

namespace {

std::string random_text(int num_tokens, std::mt19937_64& rng, const text::Tokenizer& tokenizer) {
  std::uniform_int_distribution<int> token(0, text::kNumOrdinaryTokens - 1);
  text::IncrementalDetokenizer detokenizer(tokenizer);
  std::string out;
  for (int i = 0; i < num_tokens; ++i) out += detokenizer.push(token(rng));
  return out + detokenizer.flush();
}

}  // namespace

void run_multiturn(const MultiturnSpec& spec, const text::Tokenizer& tokenizer, const MultiturnSend& send) {
  GOSSAMER_CHECK(spec.num_conversations >= 1, "multiturn: --num-prompts (conversations) must be >= 1");
  GOSSAMER_CHECK(spec.num_turns >= 1, "multiturn: --multiturn-turns must be >= 1");
  GOSSAMER_CHECK(spec.user_len >= 1, "multiturn: --random-input-len (tokens per user turn) must be >= 1");
  // Every user message up front, so that the dataset does not depend on timing.
  std::mt19937_64 rng(spec.seed);
  std::vector<std::vector<std::string>> users(static_cast<size_t>(spec.num_conversations));
  for (auto& turns : users) {
    for (int t = 0; t < spec.num_turns; ++t) turns.push_back(random_text(spec.user_len, rng, tokenizer));
  }

  std::mutex mutex;
  std::condition_variable slot_free;
  int in_flight = 0;
  const int limit = spec.max_concurrency > 0 ? spec.max_concurrency : spec.num_conversations;
  std::vector<std::thread> threads;
  for (int c = 0; c < spec.num_conversations; ++c) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      slot_free.wait(lock, [&] { return in_flight < limit; });
      ++in_flight;
    }
    threads.emplace_back([&, c] {
      nlohmann::json messages = nlohmann::json::array();
      for (int t = 0; t < spec.num_turns; ++t) {
        messages.push_back({{"role", "user"}, {"content", users[static_cast<size_t>(c)][static_cast<size_t>(t)]}});
        const std::optional<std::string> answer = send(messages, c, t);
        if (!answer) break;
        messages.push_back({{"role", "assistant"}, {"content", *answer}});
      }
      std::lock_guard<std::mutex> lock(mutex);
      --in_flight;
      slot_free.notify_one();
    });
  }
  for (auto& thread : threads) thread.join();
}

}  // namespace gossamer::server
