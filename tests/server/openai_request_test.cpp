#include "server/openai_request.h"

#include <gtest/gtest.h>

#include "server/api_error.h"

namespace gossamer::server {
namespace {

using Json = nlohmann::ordered_json;

class OpenAiRequest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tokenizer_ = text::Tokenizer::load_default();
    renderer_ = std::make_unique<text::harmony::HarmonyRenderer>(tokenizer_);
  }
  ApiContext context() const { return {"my-model", {"alias"}, 4096}; }
  GenerationRequest chat(const std::string& body) {
    return parse_chat_request(Json::parse(body), context(), *renderer_);
  }
  ApiError chat_error(const std::string& body) {
    try {
      chat(body);
    } catch (const ApiError& error) {
      return error;
    }
    ADD_FAILURE() << "no error for " << body;
    return ApiError(0, "", "");
  }
  std::string decode(const std::vector<engine::TokenId>& tokens) { return tokenizer_->decode_bytes(tokens); }

  static inline std::shared_ptr<const text::Tokenizer> tokenizer_;
  static inline std::unique_ptr<text::harmony::HarmonyRenderer> renderer_;
};

TEST_F(OpenAiRequest, RendersAChatInHarmony) {
  const auto request = chat(R"({"model":"my-model","messages":[{"role":"system","content":"Be brief."},
    {"role":"user","content":"Hi"}],"reasoning_effort":"high","max_completion_tokens":7,"temperature":0})");
  const std::string text = decode(request.prompt);
  EXPECT_NE(text.find("Reasoning: high"), std::string::npos) << text;
  EXPECT_NE(text.find("<|start|>developer<|message|># Instructions\n\nBe brief."), std::string::npos) << text;
  EXPECT_NE(text.find("<|start|>user<|message|>Hi<|end|><|start|>assistant"), std::string::npos) << text;
  EXPECT_EQ(request.sampling.max_tokens, 7);
  EXPECT_EQ(request.sampling.temperature, 0.0f);
}

TEST_F(OpenAiRequest, RendersToolsAndPastToolCalls) {
  const auto request = chat(R"({"messages":[{"role":"user","content":"Weather in Paris?"},
    {"role":"assistant","content":null,"reasoning":"Need the tool.","tool_calls":[{"id":"call_1","type":"function",
      "function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
    {"role":"tool","tool_call_id":"call_1","content":"sunny"}],
    "tools":[{"type":"function","function":{"name":"get_weather","description":"Weather now",
      "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]})");
  const std::string text = decode(request.prompt);
  EXPECT_NE(text.find("namespace functions"), std::string::npos) << text;
  EXPECT_NE(text.find("type get_weather = (_: {"), std::string::npos) << text;
  EXPECT_NE(
      text.find(
          "to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>sunny<|end|>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Need the tool."), std::string::npos) << text;
  EXPECT_EQ(request.tool_names, std::vector<std::string>{"get_weather"});
}

TEST_F(OpenAiRequest, ValidationErrorsNameTheField) {
  EXPECT_EQ(chat_error(R"({"messages":[]})").param.value_or(""), "messages");
  EXPECT_EQ(chat_error(R"({"messages":"hi"})").param.value_or(""), "messages");
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"wizard","content":"x"}]})").param.value_or(""), "messages[0].role");
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"user","content":"x"}],"temperature":5})").param.value_or(""),
            "temperature");
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"user","content":"x"}],"temperature":"hot"})").param.value_or(""),
            "temperature");
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"user","content":"x"}],"top_p":0})").param.value_or(""), "top_p");
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"user","content":"x"}],"n":17})").param.value_or(""), "n");
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":0})").param.value_or(""),
            "max_tokens");
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"required"})").param.value_or(""),
            "tool_choice");
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"user","content":"x"}],"reasoning_effort":"max"})").param.value_or(""),
            "reasoning_effort");
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"tool","content":"x","tool_call_id":"nope"}]})").param.value_or(""),
            "messages[0].tool_call_id");
  const ApiError model = chat_error(R"({"model":"other","messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(model.status, 404);
  EXPECT_EQ(model.code, "model_not_found");
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"user","content":"x"}],"stop":[1]})").status, 400);
}

TEST_F(OpenAiRequest, AcceptsAliasesContentPartsAndUnknownFields) {
  const auto request = chat(R"({"model":"alias","messages":[{"role":"user","content":[{"type":"text","text":"a"},
    {"type":"text","text":"b"}]}],"stop":"x","stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,
    "frobnicate":1,"max_tokens":3,"max_completion_tokens":5,"seed":9,"reasoning":{"effort":"low","exclude":true}})");
  EXPECT_NE(decode(request.prompt).find("<|message|>ab<|end|>"), std::string::npos);
  EXPECT_EQ(request.stop, std::vector<std::string>{"x"});
  EXPECT_TRUE(request.stream);
  EXPECT_TRUE(request.include_usage);
  EXPECT_TRUE(request.sampling.ignore_eos);
  EXPECT_EQ(request.sampling.max_tokens, 5);
  EXPECT_EQ(request.sampling.seed.value_or(0), 9u);
  EXPECT_FALSE(request.include_reasoning);
  EXPECT_EQ(request.ignored_fields, std::vector<std::string>{"frobnicate"});
  EXPECT_NE(decode(request.prompt).find("Reasoning: low"), std::string::npos);
}

TEST_F(OpenAiRequest, CompletionsTakeTextOrTokenIds) {
  const auto ids =
      parse_completion_request(Json::parse(R"({"prompt":[1,2,3],"max_tokens":4})"), context(), *tokenizer_);
  EXPECT_EQ(ids.prompt, (std::vector<engine::TokenId>{1, 2, 3}));
  const auto text = parse_completion_request(Json::parse(R"({"prompt":"hello world"})"), context(), *tokenizer_);
  EXPECT_EQ(text.prompt, tokenizer_->encode_ordinary("hello world"));
  EXPECT_EQ(text.sampling.max_tokens, 16);
  EXPECT_THROW(parse_completion_request(Json::parse(R"({"prompt":[-1]})"), context(), *tokenizer_), ApiError);
  EXPECT_THROW(parse_completion_request(Json::parse(R"({"prompt":["a","b"]})"), context(), *tokenizer_), ApiError);
  EXPECT_THROW(parse_completion_request(Json::parse(R"({"prompt":""})"), context(), *tokenizer_), ApiError);
}

TEST(ParseJsonBody, RejectsBadJsonAndNonObjects) {
  EXPECT_THROW(parse_json_body("{"), ApiError);
  EXPECT_THROW(parse_json_body("[1]"), ApiError);
  EXPECT_THROW(parse_json_body("\"\xff\""), ApiError);
  EXPECT_NO_THROW(parse_json_body("{}"));
}

}  // namespace
}  // namespace gossamer::server
