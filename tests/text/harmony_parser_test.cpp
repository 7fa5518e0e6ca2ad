// Streaming parser beyond the upstream vectors: header grammar, strict/lenient, UTF-8 streaming, getters.
#include "text/harmony_parser.h"

#include <gtest/gtest.h>

#include <functional>

#include "harmony_test_util.h"

namespace gossamer::text::harmony {
namespace {

using namespace test_support;

std::vector<TokenId> encode_all(const std::string& text) {
  return any_tokenizer()->encode(text, {}, true);
}

std::vector<Message> parse(const std::string& text, std::optional<Role> hint, bool strict = true) {
  return parse_completion_tokens(any_tokenizer(), encode_all(text), hint, strict);
}

std::string error_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

TEST(HarmonyHeader, Grammar) {
  auto header = [](const char* text, std::optional<Role> hint = std::nullopt) {
    return parse_harmony_header(text, hint);
  };
  ParsedHeader h = header("assistant<|channel|>analysis");
  EXPECT_EQ(h.author, (Author{Role::kAssistant, std::nullopt}));
  EXPECT_EQ(h.channel, "analysis");
  EXPECT_EQ(h.recipient, std::nullopt);
  for (const char* text : {"assistant to=functions.f<|channel|>commentary <|constrain|>json",
                           "assistant<|channel|>commentary to=functions.f <|constrain|>json",
                           "assistant<|channel|>commentary to=functions.f<|constrain|>json"}) {
    h = header(text);
    EXPECT_EQ(h.recipient, "functions.f") << text;
    EXPECT_EQ(h.channel, "commentary") << text;
    EXPECT_EQ(h.content_type, "<|constrain|>json") << text;
  }
  h = header("assistant to=lookup_weather<|channel|>analysis code");
  EXPECT_EQ(h.recipient, "lookup_weather");
  EXPECT_EQ(h.content_type, "code");
  h = header("<|channel|>analysis to=lookup_weather code", Role::kAssistant);
  EXPECT_EQ(h.author.role, Role::kAssistant);
  EXPECT_EQ(h.recipient, "lookup_weather");
  EXPECT_EQ(h.content_type, "code");
  h = header("browser.search to=assistant<|channel|>commentary");
  EXPECT_EQ(h.author, (Author{Role::kTool, "browser.search"}));
  EXPECT_EQ(h.recipient, "assistant");
  h = header("tool<|channel|>commentary");
  EXPECT_EQ(h.author, (Author{Role::kTool, "tool"}));
  h = header("assistant<|channel|>commentary python");  // a bare recipient without to=
  EXPECT_EQ(h.recipient, "python");
  h = header("user");
  EXPECT_EQ(h.author.role, Role::kUser);
  h = header("assistant<|channel|>final\u3000", std::nullopt);  // Unicode whitespace ends and trims
  EXPECT_EQ(h.channel, "final");
  h = header("<|start|>assistant<|channel|>final", Role::kAssistant);  // prompt left in the stream
  EXPECT_EQ(h.recipient, "<|start|>assistant");

  EXPECT_NE(error_of([&] { header("functions.f"); }).find("Unknown role: functions.f"), std::string::npos);
  EXPECT_NE(error_of([&] { header(""); }).find("Unknown role"), std::string::npos);
  EXPECT_NE(error_of([&] { header("assistant<|channel|> final"); }).find("no channel value"), std::string::npos);
  EXPECT_NE(error_of([&] { header("assistant a b to=x json"); }).find("unexpected tokens remaining"),
            std::string::npos);
}

TEST(HarmonyParser, DocsTokenList) {
  const auto tokenizer = real_tokenizer();
  GOSSAMER_REQUIRE_REAL_TOKENIZER(tokenizer);
  const std::vector<TokenId> ids = {200005, 35644, 200008, 1844,  31064, 25,  392,   4827, 382, 220,    17,     659,
                                    220,    17,    16842,  12295, 81645, 13,  51441, 6052, 13,  200007, 200006, 173781,
                                    200005, 17196, 200008, 17,    659,   220, 17,    314,  220, 19,     13,     200002};
  const auto messages = parse_completion_tokens(tokenizer, ids, Role::kAssistant);
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0].text_content(), "User asks: \"What is 2 + 2?\" Simple arithmetic. Provide answer.");
  EXPECT_EQ(messages[1], make_message(Role::kAssistant, "2 + 2 = 4.", "final"));
}

TEST(HarmonyParser, RecipientAfterChannelWithConstrainToken) {
  const auto messages = parse(
      "<|start|>assistant<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>"
      R"({"latitude":48.8566,"longitude":2.3522})"
      "<|call|>",
      std::nullopt);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0], make_message(Role::kAssistant, R"({"latitude":48.8566,"longitude":2.3522})", "commentary",
                                      "functions.get_weather", "<|constrain|>json"));
  // The constrain marker written as plain text parses the same.
  const auto tokenizer = any_tokenizer();
  std::vector<TokenId> ids = tokenizer->encode("<|start|>assistant<|channel|>commentary to=f", {}, true);
  for (TokenId id : tokenizer->encode_ordinary(" <|constrain|>json")) ids.push_back(id);
  for (TokenId id : tokenizer->encode("<|message|>{}<|call|>", {}, true)) ids.push_back(id);
  EXPECT_EQ(parse_completion_tokens(tokenizer, ids, std::nullopt)[0].content_type, "<|constrain|>json");
}

TEST(HarmonyParser, StrictAndLenient) {
  const std::string tail =
      "<|start|>assistant<|channel|>analysis<|message|>We must refuse<|end|>"
      "<|start|>assistant<|channel|>final<|message|>I'm sorry, but I can't help with that.<|return|>";
  EXPECT_NE(error_of([&] {
              parse("I must refuse<|end|>" + tail, Role::kAssistant);
            }).find("unexpected tokens remaining in message header"),
            std::string::npos);
  auto lenient = parse("I must refuse<|end|>" + tail, Role::kAssistant, false);
  ASSERT_EQ(lenient.size(), 3u);
  EXPECT_EQ(lenient[0], make_message(Role::kAssistant, "I must refuse"));
  EXPECT_EQ(lenient[1], make_message(Role::kAssistant, "We must refuse", "analysis"));
  EXPECT_EQ(lenient[2], make_message(Role::kAssistant, "I'm sorry, but I can't help with that.", "final"));

  EXPECT_THROW(parse("<|channel|>analysis I must refuse<|end|>" + tail, Role::kAssistant), Error);
  lenient = parse("<|channel|>analysis I must refuse<|end|>" + tail, Role::kAssistant, false);
  ASSERT_EQ(lenient.size(), 3u);
  EXPECT_EQ(lenient[0], make_message(Role::kAssistant, "I must refuse", "analysis"));

  const std::string tool_call =
      "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}<|call|>";
  EXPECT_THROW(parse("... Let's use the tool.<|end|>" + tool_call, Role::kAssistant), Error);
  lenient = parse("... Let's use the tool.<|end|>" + tool_call, Role::kAssistant, false);
  ASSERT_EQ(lenient.size(), 2u);
  EXPECT_EQ(lenient[0], make_message(Role::kAssistant, "... Let's use the tool."));
  EXPECT_EQ(lenient[1],
            make_message(Role::kAssistant, "{\"city\": \"Paris\"}", "commentary", "functions.get_weather", "json"));

  EXPECT_NE(error_of([&] {
              parse("<|channel|>commentary Hello<|end|>", Role::kAssistant);
            }).find("Unexpected EOS while waiting for message header to complete"),
            std::string::npos);
  lenient = parse("<|channel|>commentary Hello<|end|>", Role::kAssistant, false);
  ASSERT_EQ(lenient.size(), 1u);
  EXPECT_EQ(lenient[0], make_message(Role::kAssistant, "Hello", "commentary"));

  // Whitespace collapses; a leading role word is dropped; later broken headers are dropped silently.
  lenient = parse("assistant  two\n words<|end|><|start|>assistant broken<|end|>", Role::kAssistant, false);
  ASSERT_EQ(lenient.size(), 1u);
  EXPECT_EQ(lenient[0].text_content(), "two words");
}

TEST(HarmonyParser, ExpectStartErrorsAndFailedState) {
  const auto tokenizer = any_tokenizer();
  HarmonyParser parser(tokenizer, std::nullopt);
  EXPECT_NE(
      error_of([&] { parser.process(tokenizer->encode_ordinary("x")[0]); }).find("while expecting start token 200006"),
      std::string::npos);
  EXPECT_NE(error_of([&] { parser.process(kStartToken); }).find("already failed"), std::string::npos);
  EXPECT_THROW(parser.process_eos(), Error);
  // EOS right after a stop token is fine.
  EXPECT_EQ(parse("<|start|>user<|message|>hi<|end|>", std::nullopt).size(), 1u);
  EXPECT_TRUE(parse("", std::nullopt).empty());
  // Header ids that are not valid UTF-8 or unknown are a clean error.
  HarmonyParser bad(tokenizer, Role::kAssistant);
  bad.process(-5);
  EXPECT_NE(error_of([&] { bad.process(kMessageToken); }).find("could not decode header"), std::string::npos);
}

TEST(HarmonyParser, GettersWhileStreaming) {
  const auto tokenizer = any_tokenizer();
  HarmonyParser parser(tokenizer, Role::kAssistant);
  EXPECT_EQ(parser.state(), ParserState::kHeader);
  EXPECT_EQ(parser.current_role(), Role::kAssistant);
  for (TokenId id : encode_all("<|channel|>commentary to=functions.f <|constrain|>json<|message|>")) parser.process(id);
  EXPECT_EQ(parser.state(), ParserState::kContent);
  EXPECT_EQ(parser.current_role(), Role::kAssistant);
  EXPECT_EQ(parser.current_channel(), "commentary");
  EXPECT_EQ(parser.current_recipient(), "functions.f");
  EXPECT_EQ(parser.current_content_type(), "<|constrain|>json");
  EXPECT_EQ(parser.last_content_delta(), std::nullopt);
  std::string streamed;
  for (TokenId id : tokenizer->encode_ordinary("{\"a\": \"\u00e9\u6f22\"}")) {
    parser.process(id);
    if (parser.last_content_delta()) streamed += *parser.last_content_delta();
    EXPECT_EQ(parser.current_content(), streamed);
  }
  EXPECT_EQ(streamed, "{\"a\": \"\u00e9\u6f22\"}");
  parser.process(kCallToken);
  EXPECT_EQ(parser.state(), ParserState::kExpectStart);
  EXPECT_EQ(parser.current_role(), std::nullopt);
  EXPECT_EQ(parser.current_channel(), std::nullopt);
  EXPECT_EQ(parser.current_content(), "");
  ASSERT_EQ(parser.messages().size(), 1u);
  EXPECT_EQ(parser.messages()[0].recipient, "functions.f");
  EXPECT_EQ(parser_state_name(parser.state()), "ExpectStart");
}

// Feeds content ids after an analysis header; returns the message content and the concatenated deltas.
std::pair<std::string, std::string> stream_content(const std::vector<TokenId>& content, bool end_with_eos) {
  const auto tokenizer = real_tokenizer();
  HarmonyParser parser(tokenizer, Role::kAssistant);
  for (TokenId id : encode_all("<|channel|>analysis<|message|>")) parser.process(id);
  std::string deltas;
  for (TokenId id : content) {
    parser.process(id);
    if (parser.last_content_delta()) deltas += *parser.last_content_delta();
  }
  if (end_with_eos) {
    parser.process_eos();
  } else {
    parser.process(kEndToken);
  }
  EXPECT_EQ(parser.messages().size(), 1u);
  return {parser.messages().at(0).text_content(), deltas};
}

std::vector<TokenId> concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(HarmonyParser, Utf8Streaming) {
  const auto tokenizer = real_tokenizer();
  GOSSAMER_REQUIRE_REAL_TOKENIZER(tokenizer);
  ASSERT_EQ(tokenizer->token_bytes(9552), " \xF0\x9F");
  const std::string fffd = "\uFFFD";
  auto ordinary = [&](const char* text) { return tokenizer->encode_ordinary(text); };
  EXPECT_EQ(stream_content(concat({9552, 9552}, ordinary("worked")), false).first, " " + fffd + " " + fffd + "worked");
  EXPECT_EQ(stream_content(concat({9552}, ordinary("XY")), false).first, " " + fffd + "XY");
  EXPECT_EQ(stream_content(concat({9552}, ordinary(" interesting")), false).first, " " + fffd + " interesting");
  EXPECT_EQ(stream_content(concat({9552}, ordinary("Hi")), true).first, " " + fffd + "Hi");
  EXPECT_EQ(stream_content(concat(ordinary("text"), {-1}), true).first, "text" + fffd);
  EXPECT_EQ(stream_content(concat(ordinary("text"), {2147483647}), false).first, "text" + fffd);

  // 💖 split over two ids: no delta for the first half.
  HarmonyParser parser(tokenizer, Role::kAssistant);
  for (TokenId id : encode_all("<|channel|>final<|message|>")) parser.process(id);
  parser.process(31446);
  EXPECT_EQ(parser.last_content_delta(), std::nullopt);
  EXPECT_EQ(parser.current_content(), "");
  parser.process(244);
  EXPECT_EQ(parser.last_content_delta(), "\U0001F496");

  const std::string text =
      "Hello \U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466 family! \u4f60\u597d\u4e16\u754c. "
      "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645. "
      "\u041f\u0440\u0438\u0432\u0435\u0442 \U0001F30D\U0001F3F3\uFE0F\u200D\U0001F308 "
      "\u0928\u092e\u0938\u094d\u0924\u0947 e\u0301\u0302 \U0001D400\U0001D401 \u00e9t\u00e9";
  const auto [content, deltas] = stream_content(ordinary(text.c_str()), false);
  EXPECT_EQ(content, text);
  EXPECT_EQ(deltas, text);
}

}  // namespace
}  // namespace gossamer::text::harmony
