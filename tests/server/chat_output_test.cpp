#include "server/chat_output.h"

#include <gtest/gtest.h>

#include "server/stop_strings.h"

namespace gossamer::server {
namespace {

std::shared_ptr<const text::Tokenizer> tokenizer() {
  static auto instance = text::Tokenizer::load_default();
  return instance;
}

std::vector<text::TokenId> harmony_tokens(const std::string& text) {
  return tokenizer()->encode(text, {}, true);
}

// Feeds every token and the end; returns the concatenation of all deltas.
ChatDelta run(ChatOutputParser& parser, const std::string& output) {
  ChatDelta all;
  for (const auto token : harmony_tokens(output)) all.append(parser.push(token));
  all.append(parser.finish());
  return all;
}

TEST(ChatOutput, AnalysisIsReasoningAndFinalIsContent) {
  ChatOutputParser parser(tokenizer(), {});
  const ChatDelta all = run(parser,
                            "<|channel|>analysis<|message|>User says hi. Reply.<|end|>"
                            "<|start|>assistant<|channel|>final<|message|>Hello there!<|return|>");
  EXPECT_EQ(all.reasoning, "User says hi. Reply.");
  EXPECT_EQ(all.content, "Hello there!");
  EXPECT_EQ(parser.reasoning(), "User says hi. Reply.");
  EXPECT_EQ(parser.content(), "Hello there!");
  EXPECT_TRUE(parser.tool_calls().empty());
  EXPECT_FALSE(parser.malformed());
  EXPECT_GT(parser.num_reasoning_tokens(), 3);
}

// max_tokens can end the output inside a header: those tokens are the start of a message that never began,
// not content (the server once answered "assistantfinal" for them).
TEST(ChatOutput, OutputCutInsideAHeaderAddsNoContent) {
  for (const char* output : {"<|channel|>analysis<|message|>Add them.<|end|><|start|>assistant<|channel|>final",
                             "<|channel|>analysis<|message|>Add them.<|end|><|start|>assistant", "<|channel|>final"}) {
    ChatOutputParser parser(tokenizer(), {});
    const ChatDelta all = run(parser, output);
    EXPECT_EQ(all.content, "") << output;
    EXPECT_EQ(parser.content(), "") << output;
    EXPECT_TRUE(parser.tool_calls().empty()) << output;
  }
}

TEST(ChatOutput, ToolCallStreamsNameFirstThenArguments) {
  ChatOutputParser parser(tokenizer(), {});
  std::vector<ToolCallDelta> deltas;
  for (const auto token : harmony_tokens("<|channel|>analysis<|message|>Need weather.<|end|>"
                                         "<|start|>assistant<|channel|>commentary to=functions.get_weather "
                                         "<|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>")) {
    for (auto& call : parser.push(token).tool_calls) deltas.push_back(call);
  }
  parser.finish();
  ASSERT_GE(deltas.size(), 2u);
  EXPECT_EQ(deltas[0].index, 0);
  ASSERT_TRUE(deltas[0].id.has_value());
  EXPECT_EQ(deltas[0].id->rfind("call_", 0), 0u);
  EXPECT_EQ(deltas[0].name.value_or(""), "get_weather");
  EXPECT_EQ(deltas[0].arguments, "");
  std::string arguments;
  for (size_t i = 1; i < deltas.size(); ++i) {
    EXPECT_FALSE(deltas[i].id.has_value());
    arguments += deltas[i].arguments;
  }
  EXPECT_EQ(arguments, "{\"city\":\"Paris\"}");
  ASSERT_EQ(parser.tool_calls().size(), 1u);
  EXPECT_EQ(parser.tool_calls()[0].name, "get_weather");
  EXPECT_EQ(parser.tool_calls()[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_EQ(parser.reasoning(), "Need weather.");
}

TEST(ChatOutput, RecipientInTheRolePartIsAToolCallToo) {
  ChatOutputParser parser(tokenizer(), {});
  run(parser, " to=functions.lookup<|channel|>commentary <|constrain|>json<|message|>{}<|call|>");
  ASSERT_EQ(parser.tool_calls().size(), 1u);
  EXPECT_EQ(parser.tool_calls()[0].name, "lookup");
}

TEST(ChatOutput, CommentaryWithoutRecipientIsContent) {
  ChatOutputParser parser(tokenizer(), {});
  run(parser, "<|channel|>commentary<|message|>Let me check.<|end|>");
  EXPECT_EQ(parser.content(), "Let me check.");
}

TEST(ChatOutput, NonHarmonyOutputPassesThroughAsContent) {
  ChatOutputParser parser(tokenizer(), {});
  const ChatDelta all = run(parser, "just some words, not harmony");
  EXPECT_TRUE(parser.malformed());
  EXPECT_EQ(all.content, "just some words, not harmony");
}

TEST(ChatOutput, GarbageAfterAValidMessageKeepsWhatCameBefore) {
  ChatOutputParser parser(tokenizer(), {});
  const ChatDelta all = run(parser, "<|channel|>final<|message|>Hello<|end|>garbage here<|return|>");
  EXPECT_TRUE(parser.malformed());
  EXPECT_EQ(all.content, "Hellogarbage here");
}

TEST(ChatOutput, AHeaderThatNeverEndsBecomesContent) {
  ChatOutputParser parser(tokenizer(), {});
  std::string endless = "<|channel|>";
  for (int i = 0; i < 100; ++i) endless += " word";
  const ChatDelta all = run(parser, endless);
  EXPECT_TRUE(parser.malformed());
  EXPECT_NE(all.content.find("word word"), std::string::npos);
}

TEST(ChatOutput, StopStringsMatchOnTheFinalChannelOnly) {
  ChatOutputParser parser(tokenizer(), {"STOP"});
  const ChatDelta all = run(parser,
                            "<|channel|>analysis<|message|>I will say STOP later.<|end|>"
                            "<|start|>assistant<|channel|>final<|message|>Hello STOP world<|return|>");
  EXPECT_EQ(all.reasoning, "I will say STOP later.");
  EXPECT_EQ(all.content, "Hello ");
  EXPECT_TRUE(parser.stopped_by_string());
}

TEST(ChatOutput, SplitUtf8NeverLeaksHalfACharacter) {
  ChatOutputParser parser(tokenizer(), {});
  std::string content;
  for (const auto token : harmony_tokens("<|channel|>final<|message|>héllo 🌍 日本語<|return|>")) {
    const ChatDelta delta = parser.push(token);
    // every delta must be valid UTF-8 on its own
    EXPECT_NO_THROW(nlohmann::json(delta.content).dump()) << delta.content;
    content += delta.content;
  }
  content += parser.finish().content;
  EXPECT_EQ(content, "héllo 🌍 日本語");
}

TEST(StopStrings, HoldsBackAPossiblePrefixAcrossPushes) {
  StopStringMatcher matcher({"</end>"});
  std::string out = matcher.push("abc</e");
  EXPECT_EQ(out, "a");
  out += matcher.push("nd> tail");
  EXPECT_EQ(out, "abc");
  EXPECT_TRUE(matcher.stopped());
  EXPECT_EQ(matcher.push("more"), "");
}

TEST(StopStrings, FlushReturnsTheHeldText) {
  StopStringMatcher matcher({"XYZ"});
  const std::string out = matcher.push("hello XY");
  EXPECT_EQ(out + matcher.flush(), "hello XY");
  EXPECT_FALSE(matcher.stopped());
}

// The malformed headers gpt-oss is known to emit become clean tool calls and content (lenient parsing).
TEST(ChatOutput, MalformedHeadersBecomeCleanToolCallsAndContent) {
  for (const std::string output :
       {"<|channel|>analysis<|message|>Need it.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather"
        "<|channel|>commentary <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>",
        "<|channel|>analysis<|message|>Need it.<|end|><|start|>assistantcommentary to=functions.get_weather"
        "<|message|>{\"city\":\"Paris\"}<|call|>",
        "<|channel|>analysis<|message|>Need it.<|end|><|channel|>commentary <|constrain|>json to=functions.get_weather"
        "<|message|>{\"city\":\"Paris\"}<|call|>"}) {
    ChatOutputParser parser(tokenizer(), {});
    const ChatDelta all = run(parser, output);
    ASSERT_EQ(parser.tool_calls().size(), 1u) << output;
    EXPECT_EQ(parser.tool_calls()[0].name, "get_weather") << output;
    EXPECT_EQ(parser.tool_calls()[0].arguments, "{\"city\":\"Paris\"}") << output;
    EXPECT_EQ(all.reasoning, "Need it.") << output;
    EXPECT_EQ(all.content.find("<|"), std::string::npos) << all.content;
    EXPECT_FALSE(parser.malformed()) << output;
  }
  ChatOutputParser parser(tokenizer(), {});
  const ChatDelta all = run(parser, "<|channel|>analysis<|message|>Hm.<|end|><|channel|>final<|message|>Hi!<|return|>");
  EXPECT_EQ(all.content, "Hi!");
  EXPECT_EQ(all.reasoning, "Hm.");
}

}  // namespace
}  // namespace gossamer::server
