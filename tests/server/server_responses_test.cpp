// POST /v1/responses (+ GET/DELETE by id) against the scripted fake backend: output items, tools,
// previous_response_id through the store, stateless use with reasoning items carried back, the streamed
// event sequence, the 400s for what needs constrained decoding; and the store's LRU bound.
#include <gtest/gtest.h>

#include <memory>
#include <set>

#include "scripted_backend.h"
#include "server/responses_store.h"
#include "server_process.h"

namespace gossamer::server::testing {
namespace {

using Json = nlohmann::json;

class ServerResponses : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = std::make_unique<ServerProcess>(
        std::vector<std::string>{"--test-backend", "fake", "--test-script", write_script_file()});
  }
  static void TearDownTestSuite() { server_.reset(); }
  static Json post_json(const Json& body, int expected_status = 200) {
    const auto response = server_->post("/v1/responses", body);
    EXPECT_EQ(response.status, expected_status) << response.body;
    return Json::parse(response.body);
  }
  static Json tools() {
    return Json::parse(R"([{"type":"function","name":"get_weather","description":"Current weather",
      "parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}}}}])");
  }
  static const Json* find_item(const Json& response, const std::string& type) {
    for (const Json& item : response["output"]) {
      if (item["type"] == type) return &item;
    }
    return nullptr;
  }
  static inline std::unique_ptr<ServerProcess> server_;
};

TEST_F(ServerResponses, AnswerHasReasoningAndMessageItems) {
  const Json response =
      post_json({{"input", "Please answer SCRIPTANSWER"}, {"instructions", "Be brief."}, {"metadata", {{"k", "v"}}}});
  EXPECT_EQ(response["object"], "response");
  EXPECT_EQ(response["status"], "completed");
  EXPECT_TRUE(response["id"].get<std::string>().starts_with("resp_"));
  ASSERT_EQ(response["output"].size(), 2u) << response;
  EXPECT_EQ(response["output"][0]["type"], "reasoning");
  EXPECT_EQ(response["output"][0]["content"][0]["type"], "reasoning_text");
  EXPECT_EQ(response["output"][0]["content"][0]["text"], "The user wants 42. Say 42.");
  EXPECT_EQ(response["output"][1]["type"], "message");
  EXPECT_EQ(response["output"][1]["role"], "assistant");
  EXPECT_EQ(response["output"][1]["content"][0]["type"], "output_text");
  EXPECT_EQ(response["output"][1]["content"][0]["text"], "The answer is 42.");
  EXPECT_GT(response["usage"]["output_tokens_details"]["reasoning_tokens"].get<int>(), 0);
  EXPECT_EQ(response["usage"]["total_tokens"].get<int>(),
            response["usage"]["input_tokens"].get<int>() + response["usage"]["output_tokens"].get<int>());
  EXPECT_EQ(response["instructions"], "Be brief.");
  EXPECT_EQ(response["metadata"]["k"], "v");
  // Stored by default: GET returns it, DELETE removes it.
  const std::string id = response["id"];
  EXPECT_EQ(Json::parse(server_->get("/v1/responses/" + id).body)["id"], id);
  HttpClient client("127.0.0.1", server_->port(), 10.0);
  const auto deleted = client.request("DELETE", "/v1/responses/" + id);
  EXPECT_EQ(deleted.status, 200);
  EXPECT_EQ(Json::parse(deleted.body)["deleted"], true);
  EXPECT_EQ(server_->get("/v1/responses/" + id).status, 404);
  EXPECT_EQ(server_->get("/v1/responses/resp_unknown").status, 404);
}

TEST_F(ServerResponses, ToolRoundTripWithPreviousResponseId) {
  const Json first = post_json({{"input", "Please call SCRIPTTOOL"}, {"tools", tools()}});
  const Json* call = find_item(first, "function_call");
  ASSERT_NE(call, nullptr) << first;
  EXPECT_EQ((*call)["name"], "get_weather");
  EXPECT_EQ(Json::parse((*call)["arguments"].get<std::string>())["city"], "Paris");
  ASSERT_TRUE((*call)["call_id"].is_string());
  EXPECT_NE(find_item(first, "reasoning"), nullptr);
  const Json second = post_json(
      {{"previous_response_id", first["id"]},
       {"tools", tools()},
       {"input", {{{"type", "function_call_output"}, {"call_id", (*call)["call_id"]}, {"output", "{\"temp\":21}"}}}},
       {"max_output_tokens", 5}});
  EXPECT_EQ(second["previous_response_id"], first["id"]);
  EXPECT_TRUE(second["status"] == "completed" || second["status"] == "incomplete") << second;
  // The chained conversation holds the call: its output id resolves (an unknown call id would be a 400).
  const Json unknown =
      post_json({{"input", {{{"type", "function_call_output"}, {"call_id", "call_nope"}, {"output", "x"}}}}}, 400);
  EXPECT_EQ(unknown["error"]["type"], "invalid_request_error");
  EXPECT_EQ(post_json({{"previous_response_id", "resp_missing"}, {"input", "hi"}}, 404)["error"]["code"],
            "previous_response_not_found");
}

TEST_F(ServerResponses, StatelessUseCarriesReasoningBack) {
  const Json first = post_json({{"input", "Please call SCRIPTTOOL"},
                                {"tools", tools()},
                                {"store", false},
                                {"include", {"reasoning.encrypted_content"}}});
  EXPECT_EQ(server_->get("/v1/responses/" + first["id"].get<std::string>()).status, 404);  // not stored
  const Json* reasoning = find_item(first, "reasoning");
  const Json* call = find_item(first, "function_call");
  ASSERT_NE(reasoning, nullptr);
  ASSERT_NE(call, nullptr);
  ASSERT_TRUE((*reasoning)["encrypted_content"].is_string());
  // Codex-style: everything resent, the reasoning item with only its encrypted content.
  Json items = Json::array({{{"type", "message"},
                             {"role", "user"},
                             {"content", {{{"type", "input_text"}, {"text", "Please call SCRIPTTOOL"}}}}},
                            {{"type", "reasoning"},
                             {"id", (*reasoning)["id"]},
                             {"summary", Json::array()},
                             {"encrypted_content", (*reasoning)["encrypted_content"]}},
                            *call,
                            {{"type", "function_call_output"}, {"call_id", (*call)["call_id"]}, {"output", "sunny"}}});
  const Json second = post_json({{"input", items}, {"tools", tools()}, {"store", false}, {"max_output_tokens", 4}});
  EXPECT_TRUE(second["status"] == "completed" || second["status"] == "incomplete") << second;
  items[1]["encrypted_content"] = "forged";
  post_json({{"input", items}, {"tools", tools()}}, 400);
}

TEST_F(ServerResponses, StreamedEventSequence) {
  int status = 0;
  const auto events = stream_events(server_->port(), "/v1/responses",
                                    {{"input", "Please answer SCRIPTANSWER"}, {"stream", true}}, &status);
  EXPECT_EQ(status, 200);
  ASSERT_GE(events.size(), 10u);
  std::vector<std::string> types;
  int64_t last = -1;
  std::string text, reasoning;
  for (const std::string& data : events) {
    ASSERT_NE(data, "[DONE]");
    const Json event = Json::parse(data);
    EXPECT_EQ(event["sequence_number"].get<int64_t>(), last + 1);
    last = event["sequence_number"];
    types.push_back(event["type"]);
    if (event["type"] == "response.output_text.delta") text += event["delta"].get<std::string>();
    if (event["type"] == "response.reasoning_text.delta") reasoning += event["delta"].get<std::string>();
  }
  EXPECT_EQ(types.front(), "response.created");
  EXPECT_EQ(types[1], "response.in_progress");
  EXPECT_EQ(types.back(), "response.completed");
  const std::vector<std::string> order = {
      "response.output_item.added",   "response.content_part.added", "response.reasoning_text.delta",
      "response.reasoning_text.done", "response.output_item.done",   "response.output_item.added",
      "response.content_part.added",  "response.output_text.delta",  "response.output_text.done",
      "response.content_part.done",   "response.output_item.done",   "response.completed"};
  size_t at = 0;
  for (const std::string& type : types) {
    if (at < order.size() && type == order[at]) ++at;
  }
  EXPECT_EQ(at, order.size());
  EXPECT_EQ(text, "The answer is 42.");
  EXPECT_EQ(reasoning, "The user wants 42. Say 42.");
  const Json completed = Json::parse(events.back());
  EXPECT_EQ(completed["response"]["output"].size(), 2u);
}

TEST_F(ServerResponses, StreamedToolCallEvents) {
  const auto events = stream_events(server_->port(), "/v1/responses",
                                    {{"input", "Please call SCRIPTTOOL"}, {"tools", tools()}, {"stream", true}});
  std::string arguments;
  bool added = false, done = false;
  for (const std::string& data : events) {
    const Json event = Json::parse(data);
    if (event["type"] == "response.output_item.added" && event["item"]["type"] == "function_call") {
      added = true;
      EXPECT_EQ(event["item"]["name"], "get_weather");
      EXPECT_EQ(event["item"]["arguments"], "");
    }
    if (event["type"] == "response.function_call_arguments.delta") arguments += event["delta"].get<std::string>();
    if (event["type"] == "response.function_call_arguments.done") {
      done = true;
      EXPECT_EQ(event["arguments"].get<std::string>(), arguments);
    }
  }
  EXPECT_TRUE(added);
  EXPECT_TRUE(done);
  EXPECT_EQ(Json::parse(arguments)["city"], "Paris");
}

// Constrained decoding through the Responses API (the scripted backend's random tokens are the adversary).
TEST_F(ServerResponses, TextFormatAndForcedToolChoiceAreConstrained) {
  const Json schema = Json::parse(R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})");
  const Json structured =
      post_json({{"input", "hi"},
                 {"max_output_tokens", 400},
                 {"text", {{"format", {{"type", "json_schema"}, {"name", "x"}, {"schema", schema}}}}}});
  EXPECT_EQ(structured["text"]["format"]["type"], "json_schema");
  for (const Json& item : structured["output"]) {
    if (item["type"] != "message" || structured["status"] != "completed") continue;
    const Json answer = Json::parse(item["content"][0]["text"].get<std::string>());
    EXPECT_TRUE(answer["n"].is_number_integer()) << answer.dump();
  }
  const Json forced =
      post_json({{"input", "hi"}, {"tools", tools()}, {"tool_choice", "required"}, {"max_output_tokens", 400}});
  if (forced["status"] == "completed") {
    bool called = false;
    for (const Json& item : forced["output"]) called |= item["type"] == "function_call";
    EXPECT_TRUE(called) << forced.dump();
  }
  const Json named = post_json({{"input", "hi"},
                                {"tools", tools()},
                                {"tool_choice", {{"type", "function"}, {"name", "get_weather"}}},
                                {"max_output_tokens", 400}});
  for (const Json& item : named["output"]) {
    if (item["type"] == "function_call") {
      EXPECT_EQ(item["name"], "get_weather");
    } else {
      EXPECT_NE(item["type"], "message") << named.dump();
    }
  }
}

TEST_F(ServerResponses, UnsupportedFieldsAre400) {
  EXPECT_EQ(post_json({{"input", "hi"}, {"text", {{"format", {{"type", "yaml"}}}}}}, 400)["error"]["param"],
            "text.format.type");
  EXPECT_EQ(post_json({{"input", "hi"}, {"background", true}}, 400)["error"]["param"], "background");
  EXPECT_EQ(post_json({{"input", "hi"}, {"tools", {{{"type", "web_search"}}}}}, 400)["error"]["param"],
            "tools[0].type");
  EXPECT_EQ(post_json({{"instructions", "x"}}, 400)["error"]["param"], "input");
}

TEST(ResponsesStore, EvictsTheLeastRecentlyUsed) {
  ResponsesStore store(2, size_t{1} << 20);
  store.put("a", {{{"id", "a"}}, nlohmann::ordered_json::array()});
  store.put("b", {{{"id", "b"}}, nlohmann::ordered_json::array()});
  EXPECT_TRUE(store.get("a").has_value());  // a is now the most recent
  store.put("c", {{{"id", "c"}}, nlohmann::ordered_json::array()});
  EXPECT_TRUE(store.get("a").has_value());
  EXPECT_FALSE(store.get("b").has_value());
  EXPECT_TRUE(store.get("c").has_value());
  ResponsesStore small(100, 64);  // bytes bound
  small.put("x", {{{"text", std::string(40, 'x')}}, nlohmann::ordered_json::array()});
  small.put("y", {{{"text", std::string(40, 'y')}}, nlohmann::ordered_json::array()});
  EXPECT_EQ(small.size(), 1u);
  EXPECT_TRUE(small.get("y").has_value());
}

}  // namespace
}  // namespace gossamer::server::testing
