// Structured output: request validation (400 naming the field and keyword), and end to end through HTTP
// with the official `openai` SDK on the embedded random model (tests/server/structured_output_sdk_test.mjs):
// response_format json_schema / json_object (streamed), tool_choice required / named / none.
#include "server/structured_output.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "server/api_error.h"
#include "server_process.h"
#include "text/tokenizer.h"

namespace gossamer::server::testing {
namespace {

using OrderedJson = nlohmann::ordered_json;

std::string error_param(const char* body, const std::vector<std::pair<std::string, OrderedJson>>& tools = {}) {
  try {
    parse_structured_output(OrderedJson::parse(body), tools);
  } catch (const ApiError& error) {
    EXPECT_EQ(error.status, 400);
    return error.param.value_or("(none)");
  }
  return "";
}

TEST(StructuredOutput, ParsesAndRejectsWithTheField) {
  const std::vector<std::pair<std::string, OrderedJson>> tools = {
      {"get_weather", OrderedJson::parse(R"({"type":"object","properties":{"city":{"type":"string"}}})")},
      {"broken", OrderedJson::parse(R"({"type":"object","if":{}})")}};
  EXPECT_EQ(error_param(R"({"response_format":{"type":"yaml"}})"), "response_format.type");
  EXPECT_EQ(error_param(R"({"response_format":{"type":"json_schema"}})"), "response_format.json_schema");
  EXPECT_EQ(error_param(
                R"({"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object","allOf":[]}}}})"),
            "response_format.json_schema.schema");
  EXPECT_EQ(error_param(R"({"tool_choice":"required"})"), "tool_choice");
  EXPECT_EQ(error_param(R"({"tool_choice":{"type":"function","function":{"name":"nope"}}})", tools),
            "tool_choice.function.name");
  EXPECT_EQ(error_param(R"({"tool_choice":"sometimes"})", tools), "tool_choice");
  // Forced, the broken schema is a 400 naming it; with "auto" it falls back to any JSON object.
  EXPECT_EQ(error_param(R"({"tool_choice":"required"})", tools), "tools[1].function.parameters");
  EXPECT_EQ(error_param(R"({"tool_choice":"auto"})", tools), "");
  const auto spec = parse_structured_output(
      OrderedJson::parse(R"({"tool_choice":{"type":"function","function":{"name":"get_weather"}},
      "response_format":{"type":"json_schema","json_schema":{"name":"p","schema":{"type":"object"}}}})"),
      {tools[0]});
  EXPECT_EQ(spec->tool_choice, ToolChoice::kNamed);
  EXPECT_EQ(spec->named_tool, "get_weather");
  EXPECT_TRUE(spec->response != nullptr);
  EXPECT_EQ(spec->tools.count("get_weather"), 1u);
  EXPECT_NE(spec->response_format_text.find("# Response Formats"), std::string::npos);
  EXPECT_FALSE(parse_structured_output(OrderedJson::parse(R"({"response_format":{"type":"text"}})"), {})->active());
}

TEST(StructuredOutput, RequestsWithTheSameSchemaShareOneGrammar) {
  // One grammar object per schema text (and one for json_object), so that its token-mask cache serves them all.
  const auto tools = [](const char* schema) {
    return std::vector<std::pair<std::string, OrderedJson>>{{"f", OrderedJson::parse(schema)}};
  };
  const char* weather = R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})";
  const auto a = parse_structured_output(OrderedJson::parse(R"({"tool_choice":"required"})"), tools(weather));
  const auto b = parse_structured_output(OrderedJson::parse(R"({"tool_choice":"auto"})"), tools(weather));
  const auto other = parse_structured_output(OrderedJson::parse(R"({"tool_choice":"required"})"),
                                             tools(R"({"type":"object","properties":{"day":{"type":"string"}}})"));
  EXPECT_EQ(a->tools.at("f"), b->tools.at("f"));
  EXPECT_NE(a->tools.at("f"), other->tools.at("f"));
  const auto object_1 =
      parse_structured_output(OrderedJson::parse(R"({"response_format":{"type":"json_object"}})"), {});
  const auto object_2 =
      parse_structured_output(OrderedJson::parse(R"({"response_format":{"type":"json_object"}})"), {});
  EXPECT_EQ(object_1->response, object_2->response);
  EXPECT_NE(object_1->response->mask_cache, nullptr);
}

// Drives the constraint token by token: the forced header, then the arguments, then <|call|> only once
// the JSON is complete.
TEST(StructuredOutput, ForcedToolCallTokenByToken) {
  const auto tokenizer = text::Tokenizer::load_default();
  const std::vector<std::pair<std::string, OrderedJson>> tools = {
      {"get_weather",
       OrderedJson::parse(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})")}};
  auto constraint = make_structured_output_constraint(
      parse_structured_output(OrderedJson::parse(R"({"tool_choice":"required"})"), tools), *tokenizer);
  std::vector<uint32_t> mask(static_cast<size_t>(engine::token_mask_words(text::kVocabSize)));
  const auto allowed = [&] {
    std::vector<engine::TokenId> out;
    if (!constraint->fill_mask(mask)) return std::vector<engine::TokenId>{-1};  // unconstrained
    for (engine::TokenId t = 0; t < text::kVocabSize; ++t) {
      if ((mask[static_cast<size_t>(t) / 32] >> (t % 32)) & 1u) out.push_back(t);
    }
    return out;
  };
  const auto call = *tokenizer->special_token_id("<|call|>");
  const auto header =
      tokenizer->encode("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>", {}, true);
  for (const engine::TokenId token : header) {
    const auto options = allowed();
    ASSERT_NE(std::find(options.begin(), options.end(), token), options.end());
    EXPECT_LE(options.size(), 2u) << "analysis or the tool call";
    constraint->accept(token);
  }
  const auto arguments = tokenizer->encode_ordinary(R"({"city":"Paris"})");
  for (size_t i = 0; i < arguments.size(); ++i) {
    const auto options = allowed();
    EXPECT_EQ(std::find(options.begin(), options.end(), call), options.end()) << "the JSON is not complete yet";
    ASSERT_NE(std::find(options.begin(), options.end(), arguments[i]), options.end()) << i;
    constraint->accept(arguments[i]);
  }
  EXPECT_EQ(allowed(), std::vector<engine::TokenId>{call}) << "complete: only the end of the call";
}

TEST(StructuredOutput, OpenAiSdkOnTheEmbeddedRandomModel) {
  const std::filesystem::path sdk =
      std::filesystem::path(GOSSAMER_SOURCE_DIR) / "node_modules" / "openai" / "package.json";
  ASSERT_TRUE(std::filesystem::exists(sdk)) << "the openai npm package is missing: run scripts/setup.sh";
  ServerProcess server({"--max-model-len", "2048"});
  const auto [code, output] = run_node_script("structured_output_sdk_test.mjs", server.port());
  EXPECT_EQ(code, 0) << output << "\n--- server log ---\n" << server.log();
  EXPECT_NE(output.find("structured output checks passed"), std::string::npos) << output;
}

}  // namespace
}  // namespace gossamer::server::testing
