// o200k_harmony tokenizer: the shared vectors, special-token rules, decoding, errors, threads.
#include "text/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "text/tokenizer_test_util.h"

namespace gossamer::text {
namespace {

using testing::read_file;
using testing::test_tokenizer;

std::string ids_to_string(const std::vector<TokenId>& ids) {
  return nlohmann::json(ids).dump();
}

TEST(TokenizerTest, AllSharedTokenizerCases) {
  const auto json = nlohmann::json::parse(
      read_file(std::string(GOSSAMER_TEST_DATA_DIR) + "/harmony_vectors/o200k_tokenizer_cases.json"));
  const auto& cases = json.at("cases");
  ASSERT_EQ(cases.size(), 345u);
  size_t passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string text = cases[i].at("text").get<std::string>();
    const auto expected = cases[i].at("ids").get<std::vector<TokenId>>();
    const auto ids = test_tokenizer().encode_ordinary(text);
    EXPECT_EQ(ids, expected) << "case " << i << " text " << nlohmann::json(text).dump() << "\n  got      "
                             << ids_to_string(ids) << "\n  expected " << ids_to_string(expected);
    EXPECT_EQ(test_tokenizer().decode_bytes(ids), text) << "case " << i;
    passed += ids == expected;
  }
  EXPECT_EQ(passed, 345u);
}

// expected_token_ids.json: each text vector read, CRLF -> LF, trailing whitespace stripped, encoded with all
// special tokens allowed.
TEST(TokenizerTest, HarmonyTextVectorsWithSpecialsAllowed) {
  const std::string dir = std::string(GOSSAMER_TEST_DATA_DIR) + "/harmony_vectors/";
  const auto json = nlohmann::json::parse(read_file(dir + "expected_token_ids.json"));
  const auto& vectors = json.at("vectors");
  ASSERT_EQ(vectors.size(), 21u);
  for (const auto& [name, expected_json] : vectors.items()) {
    std::string text = read_file(dir + name);
    std::string normalized;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
      normalized += text[i];
    }
    while (!normalized.empty() && std::isspace(static_cast<unsigned char>(normalized.back()))) normalized.pop_back();
    const auto expected = expected_json.get<std::vector<TokenId>>();
    const auto ids = test_tokenizer().encode(normalized, {}, /*allow_all_special=*/true);
    EXPECT_EQ(ids, expected) << name;
    EXPECT_EQ(test_tokenizer().decode_bytes(ids), normalized) << name;
  }
}

TEST(TokenizerTest, KnownIdsFromTheSpec) {
  const Tokenizer& tok = test_tokenizer();
  const std::vector<std::pair<std::string, TokenId>> known = {
      {"hello", 24912},  {" world", 2375},      {"<", 27},           {"|", 91},         {"start", 5236},
      {">", 29},         {"assistant", 173781}, {"analysis", 35644}, {"final", 17196},  {"user", 1428},
      {"system", 17360}, {"developer", 77944},  {" to", 316},        {"=", 28},         {" code", 3490},
      {" json", 5701},   {"json", 4108},        {" ", 220},          {"lookup", 29712}, {"_weather", 170154},
      {"Tokyo", 173844}, {"Chicken", 132990}};
  for (const auto& [text, id] : known) {
    EXPECT_EQ(tok.encode_ordinary(text), std::vector<TokenId>{id}) << text;
    EXPECT_EQ(tok.token_bytes(id), text);
  }
  EXPECT_EQ(tok.token_bytes(9552), std::string(" \xF0\x9F"));
  EXPECT_EQ(tok.token_bytes(0), "!");
  EXPECT_EQ(tok.token_bytes(188), std::string(1, '\0'));
  EXPECT_EQ(tok.vocab_size(), 201088);
}

TEST(TokenizerTest, SpecialTokenTable) {
  const Tokenizer& tok = test_tokenizer();
  const std::vector<std::pair<std::string, TokenId>> named = {
      {"<|startoftext|>", 199998},     {"<|endoftext|>", 199999},
      {"<|reserved_200000|>", 200000}, {"<|reserved_200001|>", 200001},
      {"<|return|>", 200002},          {"<|constrain|>", 200003},
      {"<|reserved_200004|>", 200004}, {"<|channel|>", 200005},
      {"<|start|>", 200006},           {"<|end|>", 200007},
      {"<|message|>", 200008},         {"<|reserved_200009|>", 200009},
      {"<|reserved_200011|>", 200011}, {"<|call|>", 200012},
      {"<|reserved_200013|>", 200013}, {"<|reserved_201087|>", 201087}};
  for (const auto& [text, id] : named) {
    EXPECT_EQ(tok.special_token_id(text), id) << text;
    EXPECT_EQ(tok.token_bytes(id), text);
    EXPECT_TRUE(tok.is_special(id));
  }
  EXPECT_EQ(tok.special_token_id("<|endofprompt|>"), 200018);  // o200k_base's, kept by tiktoken's o200k_harmony
  EXPECT_EQ(tok.token_bytes(200018), "<|reserved_200018|>");   // decoded as the harmony crate does
  EXPECT_EQ(tok.special_token_id("<|reserved_201088|>"), std::nullopt);
  EXPECT_EQ(tok.special_token_id("<|unknown|>"), std::nullopt);
  EXPECT_EQ(tok.special_token_id("hello"), std::nullopt);
  EXPECT_FALSE(tok.is_special(199997));
  EXPECT_FALSE(tok.is_special(201088));
  for (TokenId id = 199998; id < 201088; ++id) {
    const auto text = std::string(tok.token_bytes(id));
    if (id != 200018) {
      EXPECT_EQ(tok.special_token_id(text), id);
    }
  }
}

// tiktoken's special-token rule: leftmost occurrence; disallowed specials are ordinary text.
TEST(TokenizerTest, SpecialTokenEncodeRules) {
  const Tokenizer& tok = test_tokenizer();
  const std::vector<TokenId> start_as_text = {27, 91, 5236, 91, 29};
  EXPECT_EQ(tok.encode_ordinary("<|start|>"), start_as_text);
  EXPECT_EQ(tok.encode("<|start|>", {}), start_as_text);
  EXPECT_EQ(tok.encode("<|start|>", {"<|start|>"}), std::vector<TokenId>{200006});
  EXPECT_EQ(tok.encode("<|start|>", {}, true), std::vector<TokenId>{200006});
  EXPECT_EQ(tok.encode("<|start|>", {"<|end|>"}), start_as_text);

  // A disallowed special stays text while an allowed one after it is split out.
  auto expected = tok.encode_ordinary("<|end|>");
  expected.push_back(200006);
  EXPECT_EQ(tok.encode("<|end|><|start|>", {"<|start|>"}), expected);

  // Text around specials is encoded separately (no piece crosses a special).
  expected = tok.encode_ordinary("hello ");
  expected.push_back(200006);
  for (TokenId id : tok.encode_ordinary(" world")) expected.push_back(id);
  EXPECT_EQ(tok.encode("hello <|start|> world", {}, true), expected);

  // "<|<|start|>": the first "<|" starts no special; the search resumes one byte later.
  expected = tok.encode_ordinary("<|");
  expected.push_back(200006);
  EXPECT_EQ(tok.encode("<|<|start|>", {}, true), expected);

  // Adjacent specials, a reserved one, the endofprompt alias, unterminated and unknown ones.
  EXPECT_EQ(tok.encode("<|start|><|end|><|reserved_200500|>", {}, true),
            (std::vector<TokenId>{200006, 200007, 200500}));
  EXPECT_EQ(tok.encode("<|endofprompt|>", {}, true), std::vector<TokenId>{200018});
  EXPECT_EQ(tok.encode("<|start", {}, true), tok.encode_ordinary("<|start"));
  EXPECT_EQ(tok.encode("<|nope|>", {}, true), tok.encode_ordinary("<|nope|>"));
  EXPECT_EQ(tok.encode("", {}, true), std::vector<TokenId>{});
  EXPECT_EQ(tok.encode_ordinary(""), std::vector<TokenId>{});

  // A conversation header rendered with specials allowed.
  expected = {200006, 173781, 200005, 17196, 200008};
  for (TokenId id : tok.encode_ordinary("Hi")) expected.push_back(id);
  expected.push_back(200007);
  EXPECT_EQ(tok.encode("<|start|>assistant<|channel|>final<|message|>Hi<|end|>", {}, true), expected);
}

TEST(TokenizerTest, DecodeAndUnknownIds) {
  const Tokenizer& tok = test_tokenizer();
  const std::vector<TokenId> ids = {24912, 2375, 200006};
  EXPECT_EQ(tok.decode_bytes(ids), "hello world<|start|>");
  EXPECT_EQ(tok.decode_bytes({}), "");
  for (TokenId bad : {-1, 201088, 300000, INT32_MAX, INT32_MIN}) {
    try {
      (void)tok.token_bytes(bad);
      ADD_FAILURE() << "no error for id " << bad;
    } catch (const Error& error) {
      EXPECT_EQ(std::string(error.what()), "Invalid token for decoding: " + std::to_string(bad));
    }
    const std::vector<TokenId> with_bad = {24912, bad};
    EXPECT_THROW((void)tok.decode_bytes(with_bad), Error);
  }
  // A token that is not valid UTF-8 on its own decodes to its raw bytes.
  const std::vector<TokenId> partial = {9552};
  EXPECT_EQ(tok.decode_bytes(partial), std::string(" \xF0\x9F"));
}

TEST(TokenizerTest, InvalidUtf8IsRejectedWithTheOffset) {
  const Tokenizer& tok = test_tokenizer();
  const std::vector<std::pair<std::string, size_t>> bad = {
      {"\xFF", 0},           {"ab\xC0\x80", 2},       {"abc\xED\xA0\x80", 3},  // overlong, surrogate
      {"hi \xE2\x82", 3},    {"\xF4\x90\x80\x80", 0}, {"x\x80y", 1},           // truncated, > U+10FFFF, stray
      {"ok\xF0\x9F\x98", 2}, {"\xC3\x28", 0}};
  for (const auto& [text, offset] : bad) {
    for (int mode = 0; mode < 2; ++mode) {
      try {
        (void)(mode == 0 ? tok.encode_ordinary(text) : tok.encode(text, {}, true));
        ADD_FAILURE() << "no error for " << nlohmann::json::binary({text.begin(), text.end()}).dump();
      } catch (const Error& error) {
        EXPECT_NE(std::string(error.what()).find("not valid UTF-8 at byte " + std::to_string(offset)),
                  std::string::npos)
            << error.what();
      }
    }
  }
  // Valid edge cases: U+0000, U+10FFFF, U+FFFF, U+D7FF, U+E000.
  for (const std::string& good : {std::string("a\0b", 3), std::string("\xF4\x8F\xBF\xBF"), std::string("\xEF\xBF\xBF"),
                                  std::string("\xED\x9F\xBF"), std::string("\xEE\x80\x80")}) {
    const auto ids = tok.encode_ordinary(good);
    EXPECT_EQ(tok.decode_bytes(ids), good);
  }
}

TEST(TokenizerTest, ManyThreadsEncodeAtOnce) {
  const Tokenizer& tok = test_tokenizer();
  std::vector<std::string> texts;
  for (int i = 0; i < 8; ++i) {
    std::string text;
    for (int j = 0; j < 200; ++j) {
      text += "Thread " + std::to_string(i) + " line " + std::to_string(j) +
              ": héllo wörld 你好 🙂 it's   <|start|>DON'T\r\n";
    }
    texts.push_back(text);
  }
  std::vector<std::vector<TokenId>> expected;
  for (const auto& text : texts) expected.push_back(tok.encode(text, {}, true));
  std::vector<int> mismatches(texts.size(), 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < texts.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        const size_t k = (t + round) % texts.size();
        if (tok.encode(texts[k], {}, true) != expected[k]) ++mismatches[t];
        if (tok.decode_bytes(expected[k]) != texts[k]) ++mismatches[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (size_t t = 0; t < texts.size(); ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

TEST(TokenizerTest, LoadDefaultHonoursTheEnvironmentVariable) {
  ::setenv("GOSSAMER_TIKTOKEN_JSON", "/nonexistent/o200k_base.json", 1);
  try {
    (void)Tokenizer::load_default();
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/o200k_base.json"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("scripts/setup.sh"), std::string::npos) << error.what();
  }
  ::setenv("GOSSAMER_TIKTOKEN_JSON", testing::tiktoken_json_path().c_str(), 1);
  EXPECT_EQ(Tokenizer::load_default()->encode_ordinary("hello world"), (std::vector<TokenId>{24912, 2375}));
  ::unsetenv("GOSSAMER_TIKTOKEN_JSON");
}

}  // namespace
}  // namespace gossamer::text
