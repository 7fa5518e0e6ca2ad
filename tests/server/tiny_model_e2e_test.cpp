// End to end through the trained embedded default (models/tiny, docs/tiny-model.md) over plain HTTP:
// reasoning in `reasoning` / `reasoning_content`, the final answer in `content`, tool calls with JSON
// arguments (stream and not), the tool-result round trip, stop strings, usage counts. Greedy
// (temperature 0) on prompts the model answers correctly; the expected texts are what it was trained to
// say, so a broken renderer, parser, sampler or forward pass shows up as a different answer.
#include <gtest/gtest.h>

#include <memory>

#include "model/embedded_default.h"
#include "server/openai_request.h"
#include "server_process.h"
#include "text/harmony_renderer.h"

namespace gossamer::server::testing {
namespace {

using Json = nlohmann::json;

Json weather_tool() {
  return Json::parse(R"([{"type":"function","function":{"name":"get_weather",
    "description":"Get the current weather for a city.","parameters":{"type":"object","properties":{
    "city":{"type":"string","description":"The city name, e.g. Paris"}},"required":["city"]}}}])");
}

Json user(const std::string& text, Json extra = Json::object()) {
  Json body = {{"messages", {{{"role", "user"}, {"content", text}}}}, {"temperature", 0}};
  body.update(extra);
  return body;
}

class TinyModelE2e : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = std::make_unique<ServerProcess>(std::vector<std::string>{"--max-model-len", "2048"});
  }
  static void TearDownTestSuite() { server_.reset(); }

  static Json chat(const Json& body) {
    const auto response = server_->post("/v1/chat/completions", body);
    EXPECT_EQ(response.status, 200) << response.body;
    return Json::parse(response.body);
  }
  static std::vector<Json> stream(const Json& body) {
    Json streamed = body;
    streamed["stream"] = true;
    streamed["stream_options"] = {{"include_usage", true}};
    return stream_chunks(server_->port(), "/v1/chat/completions", streamed);
  }
  // The prompt length the server must report: its own request parser and renderer on the same body.
  static size_t prompt_tokens(const Json& body) {
    static const text::harmony::HarmonyRenderer renderer(text::Tokenizer::load_default());
    ApiContext context;
    context.served_model_name = model::kEmbeddedDefaultName;
    return parse_chat_request(nlohmann::ordered_json::parse(body.dump()), context, renderer).prompt.size();
  }

  static inline std::unique_ptr<ServerProcess> server_;
};

TEST_F(TinyModelE2e, ModelsListAndLoadLineNameTheTrainedModel) {
  const Json models = Json::parse(server_->get("/v1/models").body);
  ASSERT_EQ(models["data"].size(), 1u);
  EXPECT_EQ(models["data"][0]["id"], "gossamer-embedded-tiny-trained");
  EXPECT_NE(server_->log().find("a tiny gpt-oss model trained to speak Harmony"), std::string::npos) << server_->log();
}

TEST_F(TinyModelE2e, ReasonsThenAnswersWithUsage) {
  const Json body = user("What day comes after Friday?");
  const Json response = chat(body);
  const Json& choice = response["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "stop");
  EXPECT_EQ(choice["message"]["content"], "Saturday comes after Friday.");
  const std::string reasoning = choice["message"]["reasoning"];
  EXPECT_NE(reasoning.find("The day after Friday is Saturday."), std::string::npos) << reasoning;
  const Json& usage = response["usage"];
  EXPECT_EQ(usage["prompt_tokens"], prompt_tokens(body));
  EXPECT_EQ(usage["total_tokens"].get<int>(),
            usage["prompt_tokens"].get<int>() + usage["completion_tokens"].get<int>());
  const int reasoning_tokens = usage["completion_tokens_details"]["reasoning_tokens"];
  EXPECT_GT(reasoning_tokens, 10);
  EXPECT_GT(usage["completion_tokens"].get<int>(), reasoning_tokens + 5);

  // The stream carries the same reasoning, answer and usage.
  std::string streamed_reasoning, streamed_content, finish;
  Json streamed_usage;
  for (const Json& chunk : stream(body)) {
    if (chunk.contains("usage") && !chunk["usage"].is_null()) streamed_usage = chunk["usage"];
    if (chunk["choices"].empty()) continue;
    const Json& delta = chunk["choices"][0]["delta"];
    if (delta.contains("reasoning")) streamed_reasoning += delta["reasoning"].get<std::string>();
    if (delta.contains("content") && delta["content"].is_string())
      streamed_content += delta["content"].get<std::string>();
    if (!chunk["choices"][0]["finish_reason"].is_null()) finish = chunk["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(streamed_reasoning, reasoning);
  EXPECT_EQ(streamed_content, "Saturday comes after Friday.");
  EXPECT_EQ(finish, "stop");
  // The same prompt a second time: its full blocks come from the prefix cache; everything else is equal.
  ASSERT_TRUE(streamed_usage.contains("prompt_tokens_details"));
  EXPECT_GT(streamed_usage["prompt_tokens_details"]["cached_tokens"].get<int>(), 0);
  EXPECT_LT(streamed_usage["prompt_tokens_details"]["cached_tokens"].get<int>(),
            streamed_usage["prompt_tokens"].get<int>());
  Json without_cache = streamed_usage, expected = usage;
  without_cache.erase("prompt_tokens_details");
  expected.erase("prompt_tokens_details");
  EXPECT_EQ(without_cache, expected);
}

TEST_F(TinyModelE2e, ArithmeticAnswer) {
  const Json response = chat(user("What is 7 times 8?"));
  EXPECT_EQ(response["choices"][0]["message"]["content"], "7 × 8 = 56.");
  EXPECT_NE(response["choices"][0]["message"]["reasoning"].get<std::string>().find("7 × 8 = 56"), std::string::npos);
}

// The column-arithmetic checkpoint (docs/tiny-model.md, run 3): issue #18's headline example, column by
// column with the operands' digits copied, carries and borrows.
TEST_F(TinyModelE2e, AddsColumnByColumnWithCarries) {
  const Json response = chat(user("What is 17 + 25?"));
  const Json& message = response["choices"][0]["message"];
  EXPECT_EQ(message["content"], "17 + 25 = 42.");
  const std::string reasoning = message["reasoning"].get<std::string>();
  EXPECT_NE(reasoning.find("Ones: 17 has 7, 25 has 5; 7 + 5 = 12, write 2, carry 1, so far 2."), std::string::npos)
      << reasoning;
  EXPECT_NE(reasoning.find("so far 42. So 17 + 25 = 42."), std::string::npos) << reasoning;
}

TEST_F(TinyModelE2e, SubtractsColumnByColumnWithBorrows) {
  const Json response = chat(user("What is 52 - 17?"));
  const Json& message = response["choices"][0]["message"];
  EXPECT_EQ(message["content"], "52 - 17 = 35.");
  const std::string reasoning = message["reasoning"].get<std::string>();
  EXPECT_NE(reasoning.find("2 is less than 7, so borrow: 12 - 7 = 5"), std::string::npos) << reasoning;
  EXPECT_NE(reasoning.find("so far 35. So 52 - 17 = 35."), std::string::npos) << reasoning;
}

TEST_F(TinyModelE2e, AddsTersely) {
  const Json response = chat(user("What is 17 + 25?", {{"reasoning_effort", "low"}}));
  const Json& message = response["choices"][0]["message"];
  EXPECT_EQ(message["content"], "17 + 25 = 42.");
  EXPECT_EQ(message["reasoning"],
            "Ones: 7 + 5 = 12, write 2, carry 1, so far 2. Tens: 1 + 2 + 1 = 4, write 4, so far 42. "
            "17 + 25 = 42.");
}

TEST_F(TinyModelE2e, CallsGetWeatherWithJsonArguments) {
  const Json body = user("What's the weather in Tokyo?", {{"tools", weather_tool()}});
  const Json response = chat(body);
  const Json& choice = response["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_TRUE(choice["message"]["content"].is_null()) << choice.dump();
  EXPECT_NE(choice["message"]["reasoning"].get<std::string>().find("get_weather"), std::string::npos);
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << choice.dump();
  const Json& call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(Json::parse(call["function"]["arguments"].get<std::string>()), (Json{{"city", "Tokyo"}}));

  std::string name, arguments, finish;
  for (const Json& chunk : stream(body)) {
    if (chunk["choices"].empty()) continue;
    const Json& delta = chunk["choices"][0]["delta"];
    if (delta.contains("tool_calls")) {
      for (const Json& part : delta["tool_calls"]) {
        if (part["function"].contains("name")) name += part["function"]["name"].get<std::string>();
        if (part["function"].contains("arguments")) arguments += part["function"]["arguments"].get<std::string>();
      }
    }
    if (!chunk["choices"][0]["finish_reason"].is_null()) finish = chunk["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(name, "get_weather");
  EXPECT_EQ(Json::parse(arguments), (Json{{"city", "Tokyo"}}));
  EXPECT_EQ(finish, "tool_calls");
}

TEST_F(TinyModelE2e, AnswersFromTheToolResult) {
  Json body = user("What's the weather in Tokyo?", {{"tools", weather_tool()}});
  body["messages"].push_back({{"role", "assistant"},
                              {"content", nullptr},
                              {"tool_calls",
                               {{{"id", "call_1"},
                                 {"type", "function"},
                                 {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Tokyo\"}"}}}}}}});
  body["messages"].push_back({{"role", "tool"},
                              {"tool_call_id", "call_1"},
                              {"content", "{\"city\": \"Tokyo\", \"temperature_c\": 21, \"condition\": \"sunny\"}"}});
  const Json response = chat(body);
  const Json& message = response["choices"][0]["message"];
  EXPECT_EQ(response["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(message["content"], "It is sunny and 21°C in Tokyo right now.");
  EXPECT_NE(message["reasoning"].get<std::string>().find("get_weather says Tokyo is sunny at 21°C"), std::string::npos);
  EXPECT_FALSE(message.contains("tool_calls") && !message["tool_calls"].empty()) << message.dump();
}

TEST_F(TinyModelE2e, StopStringCutsTheAnswer) {
  const Json response = chat(user("What day comes after Friday?", {{"stop", {" after"}}}));
  EXPECT_EQ(response["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(response["choices"][0]["message"]["content"], "Saturday comes");
}

TEST(TinyModelE2eReasoningField, ReasoningContentToo) {
  ServerProcess server({"--reasoning-field", "both", "--max-model-len", "2048"});
  const auto response = server.post("/v1/chat/completions", user("How many days are in April?"));
  ASSERT_EQ(response.status, 200) << response.body;
  const Json message = Json::parse(response.body)["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "April has 30 days.");
  EXPECT_EQ(message["reasoning"], message["reasoning_content"]);
  EXPECT_EQ(message["content"], "April has 30 days.");
}

}  // namespace
}  // namespace gossamer::server::testing
