// Sampling features through HTTP (issue #11 §3): logprobs in OpenAI's shapes (chat and completions,
// streamed and not), n > 1, penalties that change what is generated, reasoning under both field names,
// and the reasoning before a tool call kept in the next turn's prompt.
#include <gtest/gtest.h>

#include <memory>

#include "scripted_backend.h"
#include "server_process.h"

namespace gossamer::server::testing {
namespace {

using Json = nlohmann::json;

class ServerSampling : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = std::make_unique<ServerProcess>(
        std::vector<std::string>{"--test-backend", "fake", "--test-script", write_script_file()});
  }
  static void TearDownTestSuite() { server_.reset(); }
  static Json chat(const std::string& user, Json extra = Json::object()) {
    Json body = {{"messages", {{{"role", "user"}, {"content", user}}}}, {"max_tokens", 80}};
    body.update(extra);
    return body;
  }
  static Json post_json(const std::string& path, const Json& body, int expected_status = 200) {
    const auto response = server_->post(path, body);
    EXPECT_EQ(response.status, expected_status) << response.body;
    return Json::parse(response.body);
  }
  static std::vector<Json> stream(const std::string& path, const Json& body) {
    return stream_chunks(server_->port(), path, body);
  }
  static void expect_entry_shape(const Json& entry, size_t num_top) {
    ASSERT_TRUE(entry["token"].is_string()) << entry;
    EXPECT_LE(entry["logprob"].get<double>(), 0.0);
    ASSERT_TRUE(entry["bytes"].is_array());
    EXPECT_EQ(entry["bytes"].size(), entry["token"].get<std::string>().size());
    ASSERT_EQ(entry["top_logprobs"].size(), num_top) << entry;
    if (num_top > 0) {
      EXPECT_EQ(entry["top_logprobs"][0]["token"], entry["token"]);  // scripted tokens hold all the mass
      EXPECT_TRUE(entry["top_logprobs"][0].contains("bytes"));
    }
  }
  static inline std::unique_ptr<ServerProcess> server_;
};

TEST_F(ServerSampling, ChatLogprobsCoverTheContentTokens) {
  const Json response =
      post_json("/v1/chat/completions", chat("Please answer SCRIPTANSWER", {{"logprobs", true}, {"top_logprobs", 2}}));
  const Json& choice = response["choices"][0];
  EXPECT_EQ(choice["message"]["content"], "The answer is 42.");
  ASSERT_TRUE(choice["logprobs"]["content"].is_array()) << choice;
  EXPECT_TRUE(choice["logprobs"]["refusal"].is_null());
  std::string joined;
  for (const Json& entry : choice["logprobs"]["content"]) {
    expect_entry_shape(entry, 2);
    joined += entry["token"].get<std::string>();
  }
  EXPECT_EQ(joined, "The answer is 42.");
  // Without the flag: null, as OpenAI.
  EXPECT_TRUE(
      post_json("/v1/chat/completions", chat("Please answer SCRIPTANSWER"))["choices"][0]["logprobs"].is_null());
}

TEST_F(ServerSampling, StreamedChatLogprobsArriveWithTheirDeltas) {
  std::string content, joined;
  for (const Json& chunk :
       stream("/v1/chat/completions", chat("Please answer SCRIPTANSWER", {{"stream", true}, {"logprobs", true}}))) {
    const Json& choice = chunk["choices"][0];
    if (choice["delta"].contains("content")) content += choice["delta"]["content"].get<std::string>();
    if (choice["logprobs"].is_object()) {
      for (const Json& entry : choice["logprobs"]["content"]) {
        expect_entry_shape(entry, 0);
        joined += entry["token"].get<std::string>();
      }
    }
  }
  EXPECT_EQ(content, "The answer is 42.");
  EXPECT_EQ(joined, content);
}

TEST_F(ServerSampling, CompletionLogprobsInTheLegacyShape) {
  const Json response =
      post_json("/v1/completions", {{"prompt", {5, 6, 7}}, {"max_tokens", 6}, {"logprobs", 3}, {"temperature", 0}});
  const Json& choice = response["choices"][0];
  const Json& logprobs = choice["logprobs"];
  ASSERT_TRUE(logprobs.is_object()) << choice;
  ASSERT_EQ(logprobs["tokens"].size(), 6u);
  ASSERT_EQ(logprobs["token_logprobs"].size(), 6u);
  ASSERT_EQ(logprobs["top_logprobs"].size(), 6u);
  ASSERT_EQ(logprobs["text_offset"].size(), 6u);
  std::string joined;
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(logprobs["text_offset"][i].get<size_t>(), joined.size());
    joined += logprobs["tokens"][i].get<std::string>();
    EXPECT_EQ(logprobs["top_logprobs"][i].size(), 3u);
    // Greedy: the drawn token is the most likely one.
    double best = -1e9;
    for (const auto& [token, value] : logprobs["top_logprobs"][i].items()) best = std::max(best, value.get<double>());
    EXPECT_DOUBLE_EQ(logprobs["token_logprobs"][i].get<double>(), best);
  }
  EXPECT_EQ(joined, choice["text"].get<std::string>());
}

TEST_F(ServerSampling, NChoicesNonStreamedAndStreamed) {
  const Json response = post_json("/v1/chat/completions", chat("Please answer SCRIPTANSWER", {{"n", 3}}));
  ASSERT_EQ(response["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(response["choices"][i]["index"], i);
    EXPECT_EQ(response["choices"][i]["message"]["content"], "The answer is 42.");
  }
  const Json single = post_json("/v1/chat/completions", chat("Please answer SCRIPTANSWER"));
  EXPECT_EQ(response["usage"]["completion_tokens"].get<int>(), 3 * single["usage"]["completion_tokens"].get<int>());
  EXPECT_EQ(response["usage"]["prompt_tokens"], single["usage"]["prompt_tokens"]);

  // Streamed completions at temperature 1: each index streams its own text and finish chunk.
  std::map<int, std::string> texts;
  std::map<int, int> finishes;
  const Json body = {{"prompt", {5, 6, 7}}, {"max_tokens", 8}, {"n", 2},
                     {"stream", true},      {"seed", 4},       {"stream_options", {{"include_usage", true}}}};
  int usage_chunks = 0;
  for (const Json& chunk : stream("/v1/completions", body)) {
    if (chunk.contains("usage") && chunk["choices"].empty()) {
      ++usage_chunks;
      EXPECT_EQ(chunk["usage"]["completion_tokens"], 16);
      continue;
    }
    const Json& choice = chunk["choices"][0];
    texts[choice["index"].get<int>()] += choice["text"].get<std::string>();
    if (!choice["finish_reason"].is_null()) ++finishes[choice["index"].get<int>()];
  }
  EXPECT_EQ(usage_chunks, 1);
  EXPECT_EQ(texts.size(), 2u);
  EXPECT_EQ(finishes[0], 1);
  EXPECT_EQ(finishes[1], 1);
}

TEST_F(ServerSampling, FrequencyPenaltyChangesWhatIsGenerated) {
  const std::string plain =
      post_json("/v1/chat/completions",
                chat("Please repeat SCRIPTREPEAT", {{"temperature", 0}}))["choices"][0]["message"]["content"];
  EXPECT_EQ(plain, repeated(" ha", 40));
  // Each repeat costs 2: after ~20 the scripted token falls below the fake model's floor (−30).
  const Json penalised = post_json(
      "/v1/chat/completions", chat("Please repeat SCRIPTREPEAT", {{"temperature", 0}, {"frequency_penalty", 2.0}}));
  EXPECT_NE(penalised["choices"][0]["message"]["content"], plain);
  // Small penalties leave the forced script alone (10 − 2 > −30).
  const Json presence = post_json(
      "/v1/chat/completions",
      chat("Please repeat SCRIPTREPEAT", {{"temperature", 0}, {"presence_penalty", 2.0}, {"repetition_penalty", 1.5}}));
  EXPECT_EQ(presence["choices"][0]["message"]["content"], plain);
}

TEST_F(ServerSampling, FieldsOutOfRangeAre400s) {
  const auto param = [](const Json& extra) {
    const auto response = server_->post("/v1/chat/completions", chat("hi", extra));
    EXPECT_EQ(response.status, 400) << extra;
    return Json::parse(response.body)["error"]["param"];
  };
  EXPECT_EQ(param({{"presence_penalty", 2.5}}), "presence_penalty");
  EXPECT_EQ(param({{"frequency_penalty", -3}}), "frequency_penalty");
  EXPECT_EQ(param({{"repetition_penalty", 0}}), "repetition_penalty");
  EXPECT_EQ(param({{"top_logprobs", 3}}), "top_logprobs");  // needs logprobs: true
  EXPECT_EQ(param({{"logprobs", true}, {"top_logprobs", 21}}), "top_logprobs");
  EXPECT_EQ(param({{"n", 0}}), "n");
  EXPECT_EQ(server_->post("/v1/completions", {{"prompt", "x"}, {"logprobs", 30}}).status, 400);
}

TEST_F(ServerSampling, ReasoningUnderBothNames) {
  const Json message = post_json("/v1/chat/completions", chat("Please answer SCRIPTANSWER"))["choices"][0]["message"];
  EXPECT_EQ(message["reasoning"], "The user wants 42. Say 42.");
  EXPECT_EQ(message["reasoning_content"], "The user wants 42. Say 42.");
}

// Multi-turn tool use: the reasoning that led to a call is in the next prompt (with the call and its
// result); once a turn ends in a final answer, the analysis before it is dropped (harmony's rule).
TEST_F(ServerSampling, ToolRoundTripKeepsTheReasoningBeforeTheCall) {
  const Json tools = Json::parse(R"([{"type":"function","function":{"name":"get_weather",
      "parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}}}}}])");
  // NOTE: the scripted call passes city and unit; tool arguments follow the schema (closed objects, as
  // XGrammar's strict mode), so both must be declared.
  // Turn 1 through HTTP: the model reasons and calls the tool.
  const Json first = post_json("/v1/chat/completions", chat("Please call SCRIPTTOOL", {{"tools", tools}}));
  const Json& message = first["choices"][0]["message"];
  ASSERT_EQ(first["choices"][0]["finish_reason"], "tool_calls");
  const Json call = message["tool_calls"][0];
  Json messages = Json::array({{{"role", "user"}, {"content", "Earlier question"}},
                               {{"role", "assistant"}, {"content", "Earlier answer"}, {"reasoning", "OLD THOUGHT"}},
                               {{"role", "user"}, {"content", "Please call SCRIPTTOOL"}}});
  messages.push_back({{"role", "assistant"},
                      {"content", nullptr},
                      {"reasoning_content", message["reasoning_content"]},
                      {"tool_calls", message["tool_calls"]}});
  messages.push_back({{"role", "tool"}, {"tool_call_id", call["id"]}, {"content", "{\"temp\":21}"}});
  const Json tokens = post_json("/tokenize", {{"messages", messages}, {"tools", tools}})["tokens"];
  const std::string prompt = post_json("/detokenize", {{"tokens", tokens}})["prompt"];
  EXPECT_NE(prompt.find("<|channel|>analysis<|message|>Need weather for Paris.<|end|>"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>"
                        "{\"city\":\"Paris\",\"unit\":\"celsius\"}<|call|>"),
            std::string::npos)
      << prompt;
  EXPECT_NE(
      prompt.find("<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{\"temp\":21}<|end|>"),
      std::string::npos)
      << prompt;
  EXPECT_NE(prompt.find("Earlier answer"), std::string::npos) << prompt;
  // Once the turn has ended in a final answer, the earlier analysis goes (harmony's rule, as upstream).
  Json finished = messages;
  finished.push_back({{"role", "assistant"}, {"content", "It is 21 degrees."}});
  const Json finished_tokens = post_json("/tokenize", {{"messages", finished}, {"tools", tools}})["tokens"];
  const std::string finished_prompt = post_json("/detokenize", {{"tokens", finished_tokens}})["prompt"];
  EXPECT_EQ(finished_prompt.find("OLD THOUGHT"), std::string::npos) << finished_prompt;
  // And the follow-up request itself is served.
  Json follow = {{"messages", messages}, {"tools", tools}, {"max_tokens", 8}};
  EXPECT_EQ(server_->post("/v1/chat/completions", follow).status, 200);
}

}  // namespace
}  // namespace gossamer::server::testing
