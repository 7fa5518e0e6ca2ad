// Every upstream openai/harmony test vector (tests/data/harmony_vectors), built as upstream's tests build them.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "harmony_test_util.h"
#include "text/harmony_parser.h"
#include "text/harmony_renderer.h"

namespace gossamer::text::harmony {
namespace {

using namespace test_support;
using Json = nlohmann::ordered_json;

constexpr const char* kRobot = "Answer the user's questions like a robot.";
constexpr const char* kCapital = "What is the capital of the largest country in the world?";

SystemContent effort(ReasoningEffort level) {
  SystemContent content;
  content.reasoning_effort = level;
  return content;
}

SystemContent dated(std::string date = "2025-06-28") {
  SystemContent content;
  content.conversation_start_date = std::move(date);
  return content;
}

SystemContent analysis_final_channels(ReasoningEffort level) {
  SystemContent content = effort(level);
  content.channel_config = ChannelConfig{{"analysis", "final"}, true};
  return content;
}

Conversation effort_convo(ReasoningEffort level, bool with_instructions) {
  Conversation c;
  c.messages.push_back(system_message(effort(level)));
  if (with_instructions) c.messages.push_back(developer_message(DeveloperContent{kRobot, std::nullopt}));
  c.messages.push_back(Message::text(Role::kUser, kCapital));
  return c;
}

ToolNamespace functions_namespace(std::vector<ToolDescription> tools) {
  ToolNamespace ns;
  ns.name = "functions";
  ns.tools = std::move(tools);
  return ns;
}

Conversation browser_convo(bool with_python) {
  SystemContent system = dated();
  system.tools = ToolNamespaces{{"browser", ToolNamespace::browser()}};
  if (with_python) system.tools->emplace("python", ToolNamespace::python());
  return Conversation{{system_message(system)}};
}

Conversation browser_and_function_convo() {
  Conversation c = browser_convo(false);
  ToolDescription lookup{"lookup_weather",
                         "Use this tool to lookup the weather in a given location. Call it with the parameter "
                         "'location', can be any textual description of a location.",
                         Json::parse(R"({"type":"object","properties":{"location":{"type":"string"}},)"
                                     R"("required":["location"]})")};
  DeveloperContent developer;
  developer.tools = ToolNamespaces{{"functions", functions_namespace({lookup})}};
  c.messages.push_back(developer_message(developer));
  return c;
}

Conversation functions_with_parameters_convo() {
  const Json format = Json::parse(R"({"type":"string","enum":["celsius","fahrenheit"],"default":"celsius"})");
  Json weather =
      Json::parse(R"({"type":"object","properties":{"location":{"type":"string",)"
                  R"("description":"The city and state, e.g. San Francisco, CA"}},"required":["location"]})");
  weather["properties"]["format"] = format;
  Json weathers =
      Json::parse(R"({"type":"object","properties":{"locations":{"type":"array","items":{"type":"string"},)"
                  R"("description":"List of city and state, e.g. [\"San Francisco, CA\", \"New York, NY\"]"}},)"
                  R"("required":["locations"]})");
  weathers["properties"]["format"] = format;
  const Json kitchensink = Json::parse(R"({
    "description": "params object", "type": "object",
    "properties": {
      "string": {"type": "string", "title": "STRING", "description": "A string", "examples": ["hello", "world"]},
      "string_nullable": {"type": "string", "nullable": true, "description": "A nullable string",
                          "default": "the default"},
      "string_enum": {"type": "string", "enum": ["a", "b", "c"]},
      "oneof_string_or_number": {
        "oneOf": [{"type": "string", "default": "default_string_in_oneof"},
                  {"type": "number", "description": "numbers can happen too"}],
        "description": "a oneof", "default": 20}
    }})");
  DeveloperContent developer;
  developer.instructions = "Always respond in riddles";
  developer.tools = ToolNamespaces{
      {"functions",
       functions_namespace({
           {"get_location", "Gets the location of the user.", std::nullopt},
           {"get_current_weather", "Gets the current weather in the provided location.", weather},
           {"get_multiple_weathers", "Gets the current weather in the provided list of locations.", weathers},
           {"kitchensink", "A function with various complex schemas.", kitchensink},
       })}};
  SystemContent system = dated();
  system.reasoning_effort = ReasoningEffort::kHigh;
  return Conversation{{system_message(system), developer_message(developer),
                       Message::text(Role::kUser, "What is the weather like in SF?")}};
}

Conversation cot_convo() {
  return Conversation{{
      Message::text(Role::kUser, "What is 2 + 2?"),
      make_message(Role::kAssistant, "User asks a simple question: \"What is 2 + 2?\" The answer: 4.", "analysis"),
      make_message(Role::kAssistant, "2 + 2 equals 4.", "final"),
      Message::text(Role::kUser, "What about 9 / 2?"),
  }};
}

Conversation ongoing_analysis_convo() {
  return Conversation{{
      Message::text(Role::kUser, "What is the weather in SF?"),
      make_message(Role::kAssistant,
                   "User asks: \u201cWhat is the weather in SF?\u201d We need to use lookup_weather tool.", "analysis"),
      make_message(Role::kAssistant, R"({"location": "San Francisco"})", "commentary", "functions.lookup_weather",
                   "<|constrain|>json"),
      tool_message("functions.lookup_weather", R"({"temperature": 20, "description": "sunny"})"),
  }};
}

Conversation two_finals_convo() {
  return Conversation{{
      Message::text(Role::kUser, "What is 2 + 2?"),
      make_message(Role::kAssistant, "thinking 2+2", "analysis"),
      make_message(Role::kAssistant, "4", "final"),
      Message::text(Role::kUser, "What is 3 + 5?"),
      make_message(Role::kAssistant, "thinking 3+5", "analysis"),
      make_message(Role::kAssistant, "8", "final"),
  }};
}

struct RenderCase {
  std::function<Conversation()> build;
  RenderOptions options;
};

RenderOptions conversation_mode() {
  return RenderOptions{RenderMode::kConversation, Role::kAssistant, true};
}
RenderOptions keep_analysis() {
  return RenderOptions{RenderMode::kCompletion, Role::kAssistant, false};
}

const std::map<std::string, RenderCase>& render_cases() {
  using R = ReasoningEffort;
  auto user = [](const char* text, SystemContent system) {
    return [=] { return Conversation{{system_message(system), Message::text(Role::kUser, text)}}; };
  };
  static const std::map<std::string, RenderCase> cases = {
      {"test_simple_convo.txt", {user("What is 2 + 2?", SystemContent{}), {}}},
      {"test_simple_convo_low_effort.txt", {[] { return effort_convo(R::kLow, true); }, {}}},
      {"test_simple_convo_medium_effort.txt", {[] { return effort_convo(R::kMedium, true); }, {}}},
      {"test_simple_convo_high_effort.txt", {[] { return effort_convo(R::kHigh, true); }, {}}},
      {"test_simple_convo_low_effort_no_instruction.txt", {[] { return effort_convo(R::kLow, false); }, {}}},
      {"test_simple_convo_medium_effort_no_instruction.txt", {[] { return effort_convo(R::kMedium, false); }, {}}},
      {"test_simple_convo_high_effort_no_instruction.txt", {[] { return effort_convo(R::kHigh, false); }, {}}},
      {"test_reasoning_system_message.txt", {user("What is 2 + 2?", analysis_final_channels(R::kMedium)), {}}},
      {"test_reasoning_system_message_no_instruction.txt",
       {user("What is the best place to eat candy in the world?", analysis_final_channels(R::kHigh)), {}}},
      {"test_reasoning_system_message_with_dates.txt",
       {[] {
          SystemContent system = analysis_final_channels(R::kMedium);
          system.knowledge_cutoff = "2021-01";
          system.conversation_start_date = "2021-01-01";
          return Conversation{{system_message(system), Message::text(Role::kUser, "What is 42 * pi?")}};
        },
        {}}},
      {"test_no_tools.txt", {[] { return Conversation{{system_message(dated())}}; }, {}}},
      {"test_browser_tool_only.txt", {[] { return browser_convo(false); }, {}}},
      {"test_browser_and_python_tool.txt", {[] { return browser_convo(true); }, {}}},
      {"test_browser_and_function_tool.txt", {browser_and_function_convo, {}}},
      {"test_render_functions_with_parameters.txt", {functions_with_parameters_convo, {}}},
      {"test_dropping_cot_by_default.txt", {cot_convo, {}}},
      {"test_preserve_cot.txt", {cot_convo, keep_analysis()}},
      {"test_does_not_drop_if_ongoing_analysis.txt", {ongoing_analysis_convo, {}}},
      {"test_keep_analysis_between_finals.txt", {two_finals_convo, conversation_mode()}},
  };
  return cases;
}

const std::set<std::string> kParseVectors = {"test_simple_reasoning_response.txt", "test_simple_tool_call.txt",
                                             "test_streamable_parser.txt", "test_tool_response_parsing.txt"};

std::vector<TokenId> expected_ids(const std::string& name) {
  static const Json expected = Json::parse(read_file(vector_path("expected_token_ids.json")));
  return expected.at("vectors").at(name).get<std::vector<TokenId>>();
}

std::vector<TokenId> read_id_vector(const std::string& name) {
  std::vector<TokenId> ids;
  std::istringstream in(read_vector(name));
  for (TokenId id = 0; in >> id;) ids.push_back(id);
  return ids;
}

TEST(HarmonyVectors, EveryFileIsCovered) {
  size_t num_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(vector_path(""))) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("test_")) continue;
    ++num_files;
    EXPECT_TRUE(render_cases().contains(name) || kParseVectors.contains(name)) << name << " has no test";
  }
  EXPECT_EQ(num_files, 23u);
  EXPECT_EQ(render_cases().size() + kParseVectors.size(), 23u);
}

class HarmonyRenderVector : public ::testing::TestWithParam<std::string> {};

TEST_P(HarmonyRenderVector, MatchesTextAndIds) {
  const std::string& name = GetParam();
  const RenderCase& test_case = render_cases().at(name);
  const auto tokenizer = any_tokenizer();
  const HarmonyRenderer renderer(tokenizer);
  const RenderedConversation rendered = renderer.render(test_case.build(), test_case.options);
  EXPECT_EQ(rendered.text, read_vector(name));
  EXPECT_EQ(tokenizer->decode_bytes(rendered.tokens), rendered.text);
  // The structure does not depend on BPE: the byte-level stand-in renders the same text.
  const auto bytes = HarmonyRenderer(byte_tokenizer()).render(test_case.build(), test_case.options);
  EXPECT_EQ(byte_tokenizer()->decode_bytes(bytes.tokens), rendered.text);
  GOSSAMER_REQUIRE_REAL_TOKENIZER(real_tokenizer());
  EXPECT_EQ(rendered.tokens, expected_ids(name));
}

std::vector<std::string> render_case_names() {
  std::vector<std::string> names;
  for (const auto& [name, test_case] : render_cases()) names.push_back(name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(All, HarmonyRenderVector, ::testing::ValuesIn(render_case_names()), [](const auto& info) {
  std::string name = info.param.substr(0, info.param.size() - 4);
  return name;
});

// The text vectors that are parser inputs must also be what the tokenizer gives for them.
TEST(HarmonyVectors, ParserTextVectorsTokenizeToExpectedIds) {
  const auto tokenizer = real_tokenizer();
  GOSSAMER_REQUIRE_REAL_TOKENIZER(tokenizer);
  for (const char* name : {"test_streamable_parser.txt", "test_tool_response_parsing.txt"}) {
    EXPECT_EQ(tokenizer->encode(read_vector(name), {}, true), expected_ids(name)) << name;
  }
}

TEST(HarmonyVectors, SimpleReasoningResponse) {
  const auto tokenizer = real_tokenizer();
  GOSSAMER_REQUIRE_REAL_TOKENIZER(tokenizer);
  const auto messages =
      parse_completion_tokens(tokenizer, read_id_vector("test_simple_reasoning_response.txt"), Role::kAssistant);
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0], make_message(Role::kAssistant,
                                      "User asks: \"What is 2 + 2?\" Simple arithmetic. Provide answer.", "analysis"));
  EXPECT_EQ(messages[1], make_message(Role::kAssistant, "2 + 2 = 4.", "final"));
}

TEST(HarmonyVectors, SimpleToolCall) {
  const auto tokenizer = real_tokenizer();
  GOSSAMER_REQUIRE_REAL_TOKENIZER(tokenizer);
  const std::vector<TokenId> ids = read_id_vector("test_simple_tool_call.txt");
  const auto messages = parse_completion_tokens(tokenizer, ids, Role::kAssistant);
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0].channel, "analysis");
  EXPECT_EQ(messages[0].recipient, std::nullopt);
  EXPECT_EQ(messages[1].author, (Author{Role::kAssistant, std::nullopt}));
  EXPECT_EQ(messages[1].recipient, "lookup_weather");
  EXPECT_EQ(messages[1].channel, "analysis");
  EXPECT_EQ(messages[1].content_type, "code");
  // The contents are exactly the ids between <|message|> and the stop token (or the end), decoded.
  const auto message_at = std::find(ids.begin(), ids.end(), kMessageToken);
  const auto return_at = std::find(ids.begin(), ids.end(), kReturnToken);
  const auto second_message_at = std::find(return_at, ids.end(), kMessageToken);
  EXPECT_EQ(messages[0].text_content(), tokenizer->decode_bytes(std::vector<TokenId>(message_at + 1, return_at)));
  EXPECT_EQ(messages[1].text_content(),
            tokenizer->decode_bytes(std::vector<TokenId>(second_message_at + 1, ids.end())));
}

TEST(HarmonyVectors, StreamableParser) {
  const auto tokenizer = any_tokenizer();
  const auto ids = tokenizer->encode(read_vector("test_streamable_parser.txt"), {}, true);
  HarmonyParser parser(tokenizer, Role::kAssistant);
  std::string streamed;
  for (TokenId id : ids) {
    parser.process(id);
    if (parser.last_content_delta()) streamed += *parser.last_content_delta();
  }
  parser.process_eos();
  const auto& messages = parser.messages();
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[0],
            make_message(Role::kAssistant,
                         "User asks \"Who is the current US president?\" It's 2025, presumably current president is "
                         "Joe Biden? Actually as of 2025-07-28, there was a 2024 election. In 2024, President is "
                         "probably President Biden still? But w\ne need up to date info. Let's browse to confirm.",
                         "analysis"));
  EXPECT_EQ(messages[1], make_message(Role::kAssistant,
                                      R"({"query": "current US president July 2025", "topn": 10, "source": "news"})",
                                      "commentary", "browser.search", "code"));
  Message tool = tool_message("browser.search", R"({"result": "https://openai.com/"})");
  tool.recipient = "assistant";
  tool.channel = "commentary";
  EXPECT_EQ(messages[2], tool);
  EXPECT_EQ(streamed, messages[0].text_content() + messages[1].text_content() + messages[2].text_content());
  EXPECT_EQ(parser.tokens(), ids);
}

TEST(HarmonyVectors, ToolResponseParsing) {
  const auto tokenizer = any_tokenizer();
  const auto ids = tokenizer->encode(read_vector("test_tool_response_parsing.txt"), {}, true);
  const auto messages = parse_completion_tokens(tokenizer, ids, std::nullopt);
  ASSERT_EQ(messages.size(), 1u);
  Message tool = tool_message("browser.search", R"({"result": "https://openai.com/"})");
  tool.recipient = "assistant";
  tool.channel = "commentary";
  EXPECT_EQ(messages[0], tool);
}

}  // namespace
}  // namespace gossamer::text::harmony
