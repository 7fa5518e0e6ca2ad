// End-to-end API tests against `gossamer serve` with the scripted fake backend: shapes, errors, auth,
// tool calls and reasoning through HTTP, malformed model output, malformed requests.
#include <gtest/gtest.h>

#include <memory>

#include "scripted_backend.h"
#include "server_process.h"

namespace gossamer::server::testing {
namespace {

using Json = nlohmann::json;

class ServerApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = std::make_unique<ServerProcess>(std::vector<std::string>{
        "--test-backend", "fake", "--test-script", write_script_file(), "--served-model-name", "test-model"});
  }
  static void TearDownTestSuite() { server_.reset(); }

  static Json chat(const std::string& user, Json extra = Json::object()) {
    Json body = {{"model", "test-model"}, {"messages", {{{"role", "user"}, {"content", user}}}}, {"max_tokens", 64}};
    body.update(extra);
    return body;
  }
  static Json tools() {
    return Json::parse(R"([{"type":"function","function":{"name":"get_weather","description":"Current weather",
      "parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}}}}}])");
  }
  static Json post_json(const std::string& path, const Json& body, int expected_status = 200) {
    const auto response = server_->post(path, body);
    EXPECT_EQ(response.status, expected_status) << response.body;
    return Json::parse(response.body);
  }
  // Parsed stream events without the final [DONE] (checked to be there).
  static std::vector<Json> stream(const Json& body) {
    return stream_chunks(server_->port(), "/v1/chat/completions", body);
  }

  static inline std::unique_ptr<ServerProcess> server_;
};

TEST_F(ServerApi, HealthModelsVersion) {
  EXPECT_EQ(server_->get("/health").status, 200);
  const auto models = Json::parse(server_->get("/v1/models").body);
  EXPECT_EQ(models["object"], "list");
  ASSERT_EQ(models["data"].size(), 1u);
  EXPECT_EQ(models["data"][0]["id"], "test-model");
  EXPECT_EQ(models["data"][0]["object"], "model");
  EXPECT_EQ(models["data"][0]["max_model_len"], 8192);
}

TEST_F(ServerApi, ErrorsUseTheOpenAiEnvelope) {
  const auto expect_error = [](const ClientResponse& response, int status, const std::string& type) -> Json {
    EXPECT_EQ(response.status, status) << response.body;
    const Json body = Json::parse(response.body);
    if (!body.contains("error")) {
      ADD_FAILURE() << response.body;
      return Json{{"error", Json::object()}};
    }
    EXPECT_EQ(body["error"]["type"], type);
    EXPECT_TRUE(body["error"]["message"].is_string());
    EXPECT_TRUE(body["error"].contains("param"));
    EXPECT_TRUE(body["error"].contains("code"));
    return body;
  };
  expect_error(server_->get("/v1/nope"), 404, "not_found_error");
  expect_error(server_->get("/v1/chat/completions"), 405, "invalid_request_error");
  expect_error(server_->post_raw("/v1/chat/completions", "{not json"), 400, "invalid_request_error");
  const Json role =
      expect_error(server_->post("/v1/chat/completions", Json{{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}),
                   400, "invalid_request_error");
  EXPECT_EQ(role["error"]["param"], "messages[0].role");
  const Json model =
      expect_error(server_->post("/v1/chat/completions", chat("hi", {{"model", "gpt-9"}})), 404, "not_found_error");
  EXPECT_EQ(model["error"]["code"], "model_not_found");
  const Json context = expect_error(server_->post("/v1/chat/completions", chat("hi", {{"max_tokens", 100000}})), 400,
                                    "invalid_request_error");
  EXPECT_EQ(context["error"]["code"], "context_length_exceeded");
  EXPECT_NE(context["error"]["message"].get<std::string>().find("maximum context length is 8192"), std::string::npos);
  const Json schema = expect_error(
      server_->post(
          "/v1/chat/completions",
          chat("hi", {{"response_format",
                       {{"type", "json_schema"},
                        {"json_schema",
                         {{"name", "x"}, {"schema", {{"type", "object"}, {"patternProperties", Json::object()}}}}}}}})),
      400, "invalid_request_error");
  EXPECT_EQ(schema["error"]["param"], "response_format.json_schema.schema");
  EXPECT_NE(schema["error"]["message"].get<std::string>().find("patternProperties"), std::string::npos);
}

TEST_F(ServerApi, MalformedRequestsNeverCrashTheServer) {
  const std::vector<std::string> bodies = {
      "",
      "null",
      "[]",
      "42",
      "\"x\"",
      "{\"messages\":null}",
      "{\"messages\":[null]}",
      "{\"messages\":[{}]}",
      "{\"messages\":[{\"role\":5}]}",
      "{\"messages\":[{\"role\":\"user\",\"content\":5}]}",
      "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"function\"}]}",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":{}}",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":{\"a\":1}}",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":-5}",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":1e30}",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"seed\":\"s\"}",
      "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{}}]}]}",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"\\ud800\"}]}",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream_options\":3}",
      std::string("{\"messages\":[{\"role\":\"user\",\"content\":\"") + "\xff\xfe" + "\"}]}",
  };
  for (const auto& body : bodies) {
    const auto response = server_->post_raw("/v1/chat/completions", body);
    EXPECT_GE(response.status, 400) << body;
    EXPECT_LT(response.status, 500) << body << " -> " << response.body;
    EXPECT_NO_THROW({ [[maybe_unused]] const Json parsed = Json::parse(response.body); }) << response.body;
  }
  for (const auto& body : {"{\"prompt\":{}}", "{\"prompt\":[1.5]}", "{\"prompt\":[999999999]}", "{}"}) {
    const auto response = server_->post_raw("/v1/completions", body);
    EXPECT_EQ(response.status, 400) << body << " -> " << response.body;
  }
  EXPECT_EQ(server_->get("/health").status, 200);
}

TEST_F(ServerApi, ReasoningAndFinalAnswerNonStreaming) {
  const Json response = post_json("/v1/chat/completions", chat("Please answer SCRIPTANSWER"));
  EXPECT_EQ(response["object"], "chat.completion");
  EXPECT_EQ(response["model"], "test-model");
  const Json& choice = response["choices"][0];
  EXPECT_EQ(choice["message"]["role"], "assistant");
  EXPECT_EQ(choice["message"]["content"], "The answer is 42.");
  EXPECT_EQ(choice["message"]["reasoning"], "The user wants 42. Say 42.");
  EXPECT_EQ(choice["finish_reason"], "stop");
  const Json& usage = response["usage"];
  EXPECT_GT(usage["prompt_tokens"], 0);
  EXPECT_EQ(usage["total_tokens"], usage["prompt_tokens"].get<int>() + usage["completion_tokens"].get<int>());
  EXPECT_GT(usage["completion_tokens_details"]["reasoning_tokens"], 5);
}

TEST_F(ServerApi, ToolCallNonStreaming) {
  const Json response = post_json("/v1/chat/completions", chat("Please call SCRIPTTOOL", {{"tools", tools()}}));
  const Json& choice = response["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_TRUE(choice["message"]["content"].is_null());
  EXPECT_EQ(choice["message"]["reasoning"], "Need weather for Paris.");
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
  const Json& call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(Json::parse(call["function"]["arguments"].get<std::string>()),
            (Json{{"city", "Paris"}, {"unit", "celsius"}}));
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
}

TEST_F(ServerApi, ToolCallStreamingChunkShapes) {
  const auto chunks = stream(chat(
      "Please call SCRIPTTOOL", {{"tools", tools()}, {"stream", true}, {"stream_options", {{"include_usage", true}}}}));
  ASSERT_GE(chunks.size(), 5u);
  // First chunk: the role, after the first token.
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["role"], "assistant");
  std::string reasoning, arguments;
  int first_call_chunks = 0;
  std::string finish;
  int usage_chunks = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const Json& chunk = chunks[i];
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    EXPECT_EQ(chunk["id"], chunks[0]["id"]);
    if (chunk.contains("usage")) {
      ++usage_chunks;
      EXPECT_EQ(i, chunks.size() - 1) << "usage must be the last chunk before [DONE]";
      EXPECT_TRUE(chunk["choices"].empty());
      EXPECT_GT(chunk["usage"]["completion_tokens_details"]["reasoning_tokens"], 0);
      continue;
    }
    const Json& choice = chunk["choices"][0];
    const Json& delta = choice["delta"];
    if (delta.contains("reasoning")) reasoning += delta["reasoning"].get<std::string>();
    if (delta.contains("tool_calls")) {
      for (const Json& call : delta["tool_calls"]) {
        EXPECT_EQ(call["index"], 0);
        if (call.contains("id")) {
          ++first_call_chunks;
          EXPECT_EQ(call["type"], "function");
          EXPECT_EQ(call["function"]["name"], "get_weather");
          EXPECT_EQ(call["function"]["arguments"], "");
        } else {
          EXPECT_FALSE(call["function"].contains("name"));
          arguments += call["function"]["arguments"].get<std::string>();
        }
      }
    }
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
  }
  EXPECT_EQ(reasoning, "Need weather for Paris.");
  EXPECT_EQ(first_call_chunks, 1);
  EXPECT_EQ(arguments, "{\"city\":\"Paris\",\"unit\":\"celsius\"}");
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_EQ(usage_chunks, 1);
}

TEST_F(ServerApi, ReasoningFieldAndExclusion) {
  const auto chunks =
      stream(chat("Please answer SCRIPTANSWER", {{"stream", true}, {"reasoning", {{"exclude", true}}}}));
  std::string content;
  for (const Json& chunk : chunks) {
    const Json& delta = chunk["choices"][0]["delta"];
    EXPECT_FALSE(delta.contains("reasoning"));
    if (delta.contains("content")) content += delta["content"].get<std::string>();
    EXPECT_FALSE(chunk.contains("usage"));  // not asked for
  }
  EXPECT_EQ(content, "The answer is 42.");
}

TEST_F(ServerApi, StopStringsMatchTheFinalChannelOnly) {
  const Json response = post_json("/v1/chat/completions", chat("Please answer SCRIPTANSWER", {{"stop", {"42"}}}));
  EXPECT_EQ(response["choices"][0]["message"]["content"], "The answer is ");
  EXPECT_EQ(response["choices"][0]["message"]["reasoning"], "The user wants 42. Say 42.");
  EXPECT_EQ(response["choices"][0]["finish_reason"], "stop");
}

TEST_F(ServerApi, MalformedModelOutputStillAnswers) {
  const Json broken = post_json("/v1/chat/completions", chat("Please break SCRIPTBROKEN"));
  EXPECT_EQ(broken["choices"][0]["message"]["content"], "Hellogarbage after the end");
  const Json no_recipient =
      post_json("/v1/chat/completions", chat("Please call SCRIPTNORECIPIENT", {{"tools", tools()}}));
  EXPECT_EQ(no_recipient["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(no_recipient["choices"][0]["message"]["content"], "{}");
  const Json bad_json = post_json("/v1/chat/completions", chat("Please call SCRIPTBADJSON", {{"tools", tools()}}));
  // The tool's arguments are constrained (structured_output.h): the script's invalid JSON cannot be
  // sampled, and a call that cannot complete within max_tokens ends with `length`, not as a tool call.
  EXPECT_EQ(bad_json["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(bad_json["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>().rfind(
                "{\"city\":", 0),
            0u);
  // The random fake output (not Harmony at all) comes back as content.
  const Json random = post_json("/v1/chat/completions", chat("anything", {{"max_tokens", 8}}));
  EXPECT_EQ(random["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(random["choices"][0]["message"]["content"].get<std::string>().empty());
  EXPECT_EQ(random["usage"]["completion_tokens"], 8);
  EXPECT_EQ(server_->get("/health").status, 200);
}

TEST_F(ServerApi, Utf8IsNeverSplitAcrossChunks) {
  const auto chunks = stream(chat("Please say SCRIPTUTF", {{"stream", true}}));
  std::string content;
  for (const Json& chunk : chunks) {
    const Json& delta = chunk["choices"][0]["delta"];
    if (delta.contains("content")) content += delta["content"].get<std::string>();
  }
  EXPECT_EQ(content, "héllo 🌍 日本語");
}

TEST_F(ServerApi, CompletionsWithTextAndTokenIds) {
  const Json by_ids = post_json("/v1/completions", {{"prompt", {1, 2, 3}}, {"max_tokens", 6}, {"temperature", 0}});
  EXPECT_EQ(by_ids["object"], "text_completion");
  EXPECT_EQ(by_ids["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(by_ids["usage"]["completion_tokens"], 6);
  EXPECT_EQ(by_ids["choices"][0]["finish_reason"], "length");
  int status = 0;
  const auto events =
      stream_events(server_->port(), "/v1/completions",
                    {{"prompt", {1, 2, 3}}, {"max_tokens", 6}, {"temperature", 0}, {"stream", true}}, &status);
  EXPECT_EQ(status, 200);
  std::string text;
  for (size_t i = 0; i + 1 < events.size(); ++i)
    text += Json::parse(events[i])["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, by_ids["choices"][0]["text"]);
  EXPECT_EQ(events.back(), "[DONE]");
  const Json by_text = post_json("/v1/completions", {{"prompt", "hello world"}, {"max_tokens", 2}});
  EXPECT_EQ(by_text["usage"]["prompt_tokens"], 2);
}

TEST_F(ServerApi, KeepAliveConnectionServesStreamsAndPlainResponses) {
  HttpClient client("127.0.0.1", server_->port(), 10.0);
  const Json body = chat("Please answer SCRIPTANSWER");
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(client.request("POST", "/v1/chat/completions", body.dump()).status, 200);
    Json streamed = body;
    streamed["stream"] = true;
    SseReader reader;
    std::vector<std::string> events;
    const auto response =
        client.request("POST", "/v1/chat/completions", streamed.dump(), {}, [&](std::string_view data) {
          for (auto& event : reader.push(data)) events.push_back(event);
          return true;
        });
    EXPECT_EQ(response.status, 200);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back(), "[DONE]");
  }
}

TEST_F(ServerApi, EchoesTheClientRequestId) {
  const auto response =
      server_->post("/v1/chat/completions", chat("Please answer SCRIPTANSWER"), {{"X-Request-Id", "req-123"}});
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.headers.at("x-request-id"), "req-123");
}

TEST_F(ServerApi, TokenizeAndDetokenize) {
  const Json tokens = post_json("/tokenize", {{"prompt", "hello world"}});
  EXPECT_EQ(tokens["count"], 2);
  EXPECT_EQ(tokens["max_model_len"], 8192);
  const Json text = post_json("/detokenize", {{"tokens", tokens["tokens"]}});
  EXPECT_EQ(text["prompt"], "hello world");
  const Json chat_tokens = post_json("/tokenize", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}});
  EXPECT_GT(chat_tokens["count"], 10);
}

TEST_F(ServerApi, MetricsUseVllmNamesAndTypes) {
  post_json("/v1/chat/completions", chat("Please answer SCRIPTANSWER"));
  const std::string text = server_->get("/metrics").body;
  for (const char* line : {"# TYPE vllm:num_requests_running gauge",
                           "# TYPE vllm:num_requests_waiting gauge",
                           "# TYPE vllm:kv_cache_usage_perc gauge",
                           "# TYPE vllm:num_preemptions_total counter",
                           "# TYPE vllm:generation_tokens_total counter",
                           "# TYPE vllm:time_to_first_token_seconds histogram",
                           "# TYPE vllm:inter_token_latency_seconds histogram",
                           "# TYPE vllm:e2e_request_latency_seconds histogram",
                           "# TYPE vllm:request_queue_time_seconds histogram",
                           "# TYPE gossamer:num_requests_running gauge",
                           "vllm:time_to_first_token_seconds_bucket{model_name=\"test-model\",le=\"0.001\"}",
                           "vllm:e2e_request_latency_seconds_bucket{model_name=\"test-model\",le=\"7680\"}",
                           "vllm:request_success_total{model_name=\"test-model\",finished_reason=\"stop\"}",
                           "# TYPE vllm:prompt_tokens_total counter",
                           "# TYPE vllm:request_success_total counter",
                           "# TYPE gossamer:http_requests_total counter",
                           "# TYPE vllm:time_per_output_token_seconds histogram",
                           "# TYPE vllm:request_prefill_time_seconds histogram",
                           "# TYPE vllm:request_decode_time_seconds histogram",
                           "# TYPE vllm:request_inference_time_seconds histogram",
                           "# TYPE vllm:request_params_n histogram",
                           "vllm:request_params_n_bucket{model_name=\"test-model\",le=\"1\"} ",
                           "# TYPE vllm:request_max_num_generation_tokens histogram",
                           "vllm:cache_config_info{model_name=\"test-model\",block_size=\"16\",num_gpu_blocks=\""}) {
    EXPECT_NE(text.find(line), std::string::npos) << line;
  }
  EXPECT_GE(server_->metric("vllm:request_success_total{model_name=\"test-model\",finished_reason=\"stop\"}"), 1);
  EXPECT_GT(server_->metric("vllm:generation_tokens_total{"), 0);
}

TEST(ServerAuth, ApiKeyIsRequiredOnGenerationEndpoints) {
  ServerProcess server({"--test-backend", "fake", "--api-key", "sk-test-1", "--api-key", "sk-test-2"});
  const Json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2}};
  const auto missing = server.post("/v1/chat/completions", body);
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(Json::parse(missing.body)["error"]["type"], "authentication_error");
  EXPECT_EQ(server.post("/v1/chat/completions", body, {{"Authorization", "Bearer sk-wrong"}}).status, 401);
  EXPECT_EQ(server.post("/v1/chat/completions", body, {{"Authorization", "Bearer sk-test-2"}}).status, 200);
  EXPECT_EQ(server.post("/v1/completions", {{"prompt", "x"}}, {{"x-api-key", "sk-test-1"}}).status, 200);
  EXPECT_EQ(server.post("/tokenize", {{"prompt", "x"}}).status, 401);
  EXPECT_EQ(server.get("/health").status, 200);
  EXPECT_EQ(server.get("/metrics").status, 200);
  // Every /v1 route needs the key, /v1/models included; the scheme is case-insensitive.
  EXPECT_EQ(server.get("/v1/models").status, 401);
  EXPECT_EQ(server.get("/v1/models", {{"Authorization", "Bearer sk-test-1"}}).status, 200);
  EXPECT_EQ(server.get("/v1/models", {{"Authorization", "bearer sk-test-1"}}).status, 200);
  EXPECT_EQ(server.get("/v1/models", {{"Authorization", "BEARER sk-test-2"}}).status, 200);
  EXPECT_EQ(server.get("/v1/models/gossamer-test-fake").status, 401);
  const auto model = server.get("/v1/models/gossamer-test-fake", {{"Authorization", "Bearer sk-test-1"}});
  EXPECT_EQ(model.status, 200) << model.body;
  EXPECT_EQ(Json::parse(model.body)["id"], "gossamer-test-fake");
  EXPECT_EQ(server.get("/v1/models/other", {{"Authorization", "Bearer sk-test-1"}}).status, 404);
}

TEST_F(ServerApi, HeadSendsTheHeadWithoutABody) {
  HttpClient client("127.0.0.1", server_->port(), 10.0);
  const auto head = client.request("HEAD", "/v1/models");
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty()) << head.body;
  // The connection stays usable: no stray body bytes were sent.
  EXPECT_EQ(client.request("GET", "/v1/models").status, 200);
}

}  // namespace
}  // namespace gossamer::server::testing
