// Lenient parsing of the malformed headers gpt-oss is known to emit (issue #11 §3): each becomes a proper
// message (role, channel, recipient) instead of leaking markup into content or a tool name.
#include "text/harmony_header_repair.h"

#include <gtest/gtest.h>

#include "harmony_test_util.h"
#include "text/harmony_parser.h"

namespace gossamer::text::harmony {
namespace {

using namespace test_support;

std::vector<Message> lenient(const std::string& text) {
  return parse_completion_tokens(any_tokenizer(), any_tokenizer()->encode(text, {}, true), Role::kAssistant, false);
}

const std::string kArgs = R"({"city":"Paris"})";

TEST(HarmonyHeaderRepair, ChannelMarkerInsideTheToolName) {
  for (const std::string header :
       {"<|channel|>commentary to=functions.get_weather<|channel|>commentary <|constrain|>json",
        " to=functions.get_weather<|channel|>commentary<|channel|>commentary json"}) {
    const auto messages = lenient(std::string(header).append("<|message|>").append(kArgs).append("<|call|>"));
    ASSERT_EQ(messages.size(), 1u) << header;
    EXPECT_EQ(messages[0].recipient, "functions.get_weather") << header;
    EXPECT_EQ(messages[0].channel, "commentary") << header;
  }
  // Strict mode leaks it (this is what the repair is for) or fails.
  const ParsedHeader strict =
      parse_harmony_header("<|channel|>commentary to=functions.f<|channel|>commentary", Role::kAssistant);
  EXPECT_TRUE(header_needs_repair(strict));
}

TEST(HarmonyHeaderRepair, RecipientAfterTheContentType) {
  const auto messages =
      lenient("<|channel|>commentary <|constrain|>json to=functions.get_weather<|message|>" + kArgs + "<|call|>");
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].recipient, "functions.get_weather");
  EXPECT_EQ(messages[0].content_type, "<|constrain|>json");
  EXPECT_EQ(messages[0].channel, "commentary");
}

TEST(HarmonyHeaderRepair, RoleThatSwallowedTheChannel) {
  auto messages = lenient(
      "<|channel|>analysis<|message|>think<|end|><|start|>assistantcommentary to=functions.f<|message|>{}<|call|>");
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[1].author.role, Role::kAssistant);
  EXPECT_EQ(messages[1].channel, "commentary");
  EXPECT_EQ(messages[1].recipient, "functions.f");
  messages = lenient("<|channel|>analysis<|message|>think<|end|><|start|>assistant final<|message|>Done.<|return|>");
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[1].channel, "final");
}

TEST(HarmonyHeaderRepair, LeftoverRecipientWordsAndAMissingStart) {
  // A second `to=` and a stray word: the first recipient wins, nothing fails.
  auto messages = lenient("<|channel|>commentary to=functions.a to=functions.b junk<|message|>{}<|call|>");
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].recipient, "functions.a");
  // `<|channel|>` where `<|start|>assistant` was due.
  messages = lenient("<|channel|>analysis<|message|>think<|end|><|channel|>final<|message|>Hi<|return|>");
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[1].channel, "final");
  EXPECT_EQ(messages[1].author.role, Role::kAssistant);
}

TEST(HarmonyHeaderRepair, ValidHeadersAreUnchanged) {
  for (const char* text : {"assistant<|channel|>commentary to=functions.f <|constrain|>json",
                           "assistant<|channel|>final", "functions.f to=assistant<|channel|>commentary"}) {
    const ParsedHeader strict = parse_harmony_header(text, std::nullopt);
    EXPECT_FALSE(header_needs_repair(strict)) << text;
    const ParsedHeader repaired = repair_harmony_header(text, std::nullopt);
    EXPECT_EQ(repaired.author, strict.author) << text;
    EXPECT_EQ(repaired.channel, strict.channel) << text;
    EXPECT_EQ(repaired.recipient, strict.recipient) << text;
    EXPECT_EQ(repaired.content_type, strict.content_type) << text;
  }
}

}  // namespace
}  // namespace gossamer::text::harmony
