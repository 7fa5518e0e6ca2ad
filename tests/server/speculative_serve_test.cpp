// `gossamer serve --speculative-config` end to end on the trained embedded default (docs/engine-scheduler.md,
// "Speculative decoding by prompt lookup"): the same answers as a server without drafts (greedy and seeded,
// streamed and not, with logprobs), drafts accepted by the /metrics counters under vLLM's names too, fewer stream
// chunks than tokens, and the configurations it refuses at start with a clear message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server_process.h"

namespace gossamer::server::testing {
namespace {

using Json = nlohmann::json;

constexpr const char* kSpeculative = R"({"method": "ngram", "num_speculative_tokens": 3})";

// Prompts whose answers repeat what they were given (so that lookups find drafts), and one that does not.
const std::vector<std::string> kPrompts = {
    "Please repeat this list: apple, banana, cherry, apple, banana, cherry.",
    "Copy this sentence exactly: the cat sat on the mat and the dog sat on the log.",
    "Write the word hello three times, then count from one to ten.",
};

Json chat_body(const std::string& question, double temperature) {
  return {{"messages", {{{"role", "user"}, {"content", question}}}},
          {"temperature", temperature},
          {"seed", 11},
          {"max_tokens", 160}};
}

TEST(SpeculativeServe, AnswersAsTheServerWithoutDraftsAndCountsThem) {
  const ServerProcess plain({"--max-model-len", "2048"});
  const ServerProcess drafted({"--max-model-len", "2048", "--speculative-config", kSpeculative});
  EXPECT_NE(drafted.log().find("speculative decoding: ngram, 3 tokens, lookup 2-4"), std::string::npos)
      << drafted.log();
  for (const std::string& prompt : kPrompts) {
    for (const double temperature : {0.0, 0.8}) {
      const Json expected = plain.chat_completion(chat_body(prompt, temperature));
      const Json got = drafted.chat_completion(chat_body(prompt, temperature));
      EXPECT_EQ(got["choices"][0]["message"], expected["choices"][0]["message"]) << prompt << " at " << temperature;
      EXPECT_EQ(got["usage"]["completion_tokens"], expected["usage"]["completion_tokens"]) << prompt;
    }
  }
  // Logprobs: one entry per token, the same tokens, the same values up to the multi-token forward's rounding.
  Json with_logprobs = chat_body(kPrompts[1], 0.0);
  with_logprobs["logprobs"] = true;
  with_logprobs["top_logprobs"] = 2;
  const Json plain_logprobs = plain.chat_completion(with_logprobs)["choices"][0]["logprobs"]["content"];
  const Json drafted_logprobs = drafted.chat_completion(with_logprobs)["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(drafted_logprobs.size(), plain_logprobs.size());
  EXPECT_GT(plain_logprobs.size(), 0u);
  for (size_t i = 0; i < plain_logprobs.size(); ++i) {
    EXPECT_EQ(drafted_logprobs[i]["token"], plain_logprobs[i]["token"]) << i;
    EXPECT_NEAR(drafted_logprobs[i]["logprob"].get<double>(), plain_logprobs[i]["logprob"].get<double>(), 1e-3) << i;
    EXPECT_EQ(drafted_logprobs[i]["top_logprobs"].size(), 2u) << i;
  }
  // Streamed: the same text in fewer chunks than tokens (an event carries every token a step kept).
  Json streamed = chat_body(kPrompts[0], 0.0);
  streamed["stream"] = true;
  streamed["stream_options"] = {{"include_usage", true}};
  std::string content, reasoning;
  int chunks_with_text = 0, completion_tokens = 0;
  for (const Json& chunk : stream_chunks(drafted.port(), "/v1/chat/completions", streamed)) {
    if (chunk.contains("usage") && chunk["usage"].is_object())
      completion_tokens = chunk["usage"]["completion_tokens"].get<int>();
    for (const Json& choice : chunk["choices"]) {
      const Json& delta = choice["delta"];
      const bool text = delta.value("content", Json()).is_string() || delta.value("reasoning", Json()).is_string();
      if (delta.value("content", Json()).is_string()) content += delta["content"].get<std::string>();
      if (delta.value("reasoning", Json()).is_string()) reasoning += delta["reasoning"].get<std::string>();
      chunks_with_text += text;
    }
  }
  const Json expected = plain.chat_completion(chat_body(kPrompts[0], 0.0));
  EXPECT_EQ(content, expected["choices"][0]["message"]["content"].get<std::string>());
  EXPECT_EQ(reasoning, expected["choices"][0]["message"]["reasoning"].get<std::string>());
  EXPECT_GT(completion_tokens, 0);
  EXPECT_LT(chunks_with_text, completion_tokens);
  // The counters, under both prefixes; none without drafts.
  const double drafts = drafted.metric("gossamer:spec_decode_num_drafts_total{");
  const double draft_tokens = drafted.metric("gossamer:spec_decode_num_draft_tokens_total{");
  const double accepted = drafted.metric("gossamer:spec_decode_num_accepted_tokens_total{");
  EXPECT_GT(drafts, 0);
  EXPECT_GE(draft_tokens, drafts);
  EXPECT_GT(accepted, 0);
  EXPECT_LE(accepted, draft_tokens);
  EXPECT_EQ(drafted.metric("vllm:spec_decode_num_accepted_tokens_total{"), accepted);
  EXPECT_EQ(plain.metric("gossamer:spec_decode_num_drafts_total{"), 0);
}

TEST(SpeculativeServe, RefusesWhatItCannotDo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--speculative-config", R"({"method": "eagle3", "model": "x", "num_speculative_tokens": 3})"},
       "is not supported"},
      {{"--speculative-config", R"({"method": "ngram"})"}, "num_speculative_tokens is required"},
      {{"--speculative-config", "ngram"}, "is not JSON"},
      {{"--speculative-config", kSpeculative, "--async-scheduling"}, "needs async scheduling off"},
  };
  for (const auto& [args, message] : cases) {
    try {
      const ServerProcess server(args);
      ADD_FAILURE() << "serve started with " << args[1];
    } catch (const std::runtime_error& error) {
      EXPECT_NE(std::string(error.what()).find(message), std::string::npos) << error.what();
    }
  }
}

}  // namespace
}  // namespace gossamer::server::testing
