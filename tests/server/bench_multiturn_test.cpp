// The multiturn dataset of `bench serve`: each turn sends the whole history (earlier answers included),
// turns of a conversation run in order, conversations run concurrently up to the limit, a failed turn
// ends its conversation, and the user messages depend only on the seed.
#include "bench/bench_multiturn.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "text/tokenizer.h"

namespace gossamer::server {
namespace {

using Json = nlohmann::json;

const text::Tokenizer& tokenizer() {
  static const auto t = text::Tokenizer::load_default();
  return *t;
}

TEST(BenchMultiturn, HistoryGrowsTurnByTurn) {
  MultiturnSpec spec;
  spec.num_conversations = 5;
  spec.num_turns = 4;
  spec.user_len = 12;
  spec.max_concurrency = 2;
  std::mutex mutex;
  std::map<std::pair<int, int>, Json> sent;
  std::atomic<int> in_flight{0}, most{0};
  run_multiturn(spec, tokenizer(), [&](const Json& messages, int c, int t) -> std::optional<std::string> {
    const int now = ++in_flight;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    {
      std::lock_guard<std::mutex> lock(mutex);
      sent[{c, t}] = messages;
    }
    --in_flight;
    if (c == 4 && t == 1) return std::nullopt;  // a failed turn ends conversation 4
    return "answer " + std::to_string(c) + "." + std::to_string(t);
  });
  EXPECT_LE(most.load(), 2);
  for (int c = 0; c < 5; ++c) {
    for (int t = 0; t < 4; ++t) {
      const auto found = sent.find({c, t});
      if (c == 4 && t > 1) {
        EXPECT_EQ(found, sent.end());
        continue;
      }
      ASSERT_NE(found, sent.end()) << c << "." << t;
      const Json& messages = found->second;
      ASSERT_EQ(messages.size(), static_cast<size_t>(2 * t + 1));
      for (int k = 0; k < t; ++k) {
        EXPECT_EQ(messages[2 * k + 1]["role"], "assistant");
        EXPECT_EQ(messages[2 * k + 1]["content"], "answer " + std::to_string(c) + "." + std::to_string(k));
        EXPECT_EQ(messages[2 * k], sent[std::make_pair(c, k)].back()) << "the history is the earlier turns' messages";
      }
      EXPECT_EQ(messages.back()["role"], "user");
      EXPECT_FALSE(messages.back()["content"].get<std::string>().empty());
    }
  }
  // Same seed, same user messages.
  std::map<std::pair<int, int>, Json> again;
  run_multiturn(spec, tokenizer(), [&](const Json& messages, int c, int t) -> std::optional<std::string> {
    std::lock_guard<std::mutex> lock(mutex);
    again[{c, t}] = messages.back();
    return "x";
  });
  EXPECT_EQ(again[std::make_pair(3, 2)], sent[std::make_pair(3, 2)].back());
}

}  // namespace
}  // namespace gossamer::server
