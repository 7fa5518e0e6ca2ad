// The JSON grammar engine: schemas compile (or fail naming the keyword), the byte-level matcher accepts
// exactly the valid texts, and token masks over the real o200k vocabulary never lead anywhere invalid:
// random and adversarial token walks always end in JSON that parses and validates.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "grammar_test_util.h"
#include "text/grammar/json_schema_compiler.h"
#include "tokenizer_test_util.h"

namespace gossamer::text::testing {
namespace {

using grammar::GrammarMatcher;
using grammar::TokenMasker;
using grammar::TokenVocabulary;

const std::shared_ptr<const TokenVocabulary>& vocabulary() {
  static const auto v = TokenVocabulary::build(test_tokenizer());
  return v;
}

bool matches(const std::shared_ptr<const grammar::Grammar>& g, const std::string& text) {
  GrammarMatcher matcher(g);
  return matcher.advance(text) && matcher.can_end();
}

TEST(GrammarSchema, UnsupportedOrInvalidKeywordsAreNamed) {
  const auto keyword_of = [](const char* schema) -> std::string {
    try {
      grammar::compile_json_schema(Json::parse(schema));
    } catch (const grammar::SchemaError& error) {
      return error.keyword();
    }
    return "";
  };
  EXPECT_EQ(keyword_of(R"({"type":"object","patternProperties":{}})"), "patternProperties");
  EXPECT_EQ(keyword_of(R"({"type":"strin"})"), "type");
  EXPECT_EQ(keyword_of(R"({"type":"string","minLength":5,"maxLength":2})"), "maxLength");
  EXPECT_EQ(keyword_of(R"({"$ref":"#/$defs/missing"})"), "$ref");
  EXPECT_EQ(keyword_of(R"j({"type":"string","pattern":"(?=x)"})j"), "pattern");
  EXPECT_EQ(keyword_of(R"({"type":"object","properties":{"a":{}},"required":["b"]})"), "required");
  EXPECT_EQ(keyword_of(R"({"type":"integer","minimum":2.5,"maximum":2.7})"), "maximum");
  EXPECT_EQ(keyword_of(R"({"allOf":[]})"), "allOf");
  EXPECT_EQ(keyword_of(R"({"type":"string","format":"binary","description":"x"})"), "");  // format = annotation
}

TEST(GrammarMatcher, AcceptsExactlyTheValidTexts) {
  const auto g = grammar::compile_json_schema(Json::parse(
      R"({"type":"object","properties":{"a":{"type":"integer","minimum":-5,"maximum":120},"b":{"type":"string","maxLength":3},
          "c":{"type":"array","items":{"enum":["x",1,true]},"maxItems":2}},"required":["a"]})"));
  for (const char* ok : {R"({"a":0})", R"({"a":-5,"b":"abc"})", R"({ "a" : 120 , "c" : ["x",1] })",
                         R"({"a":7,"b":"\u00e9\n","c":[]})", R"({"a":1,"b":"日本"})", R"({"b":"x","a":1})"}) {
    EXPECT_TRUE(matches(g, ok)) << ok;
  }
  for (const char* bad :
       {R"({"a":121})", R"({"a":-6})", R"({"b":"x","b":"y","a":1})", R"({"a":1,"b":"abcd"})", R"({"a":1,"d":2})",
        R"({"a":01})", R"({"a":1.5})", R"({"a":1,"c":["x",1,true]})", R"({"a":1,"c":[2]})", R"({})",
        R"({"a":1,"b":"\ud800"})", R"({"a":1}x)", R"({"a":1,})", "{\"a\":1,\"b\":\"\x01\"}", R"({"a":1}   )"}) {
    EXPECT_FALSE(matches(g, bad)) << bad;
  }
  const auto any = grammar::json_object_grammar();
  EXPECT_TRUE(matches(any, R"({"k":[1,2.5e-3,{"n":null}],"t":true,"s":"\"q\""})"));
  EXPECT_FALSE(matches(any, R"([1])"));
  EXPECT_FALSE(matches(any, R"({"k":tru})"));
  // Numbers need lookahead: "12" may still grow, and ends the value only where the grammar allows.
  GrammarMatcher number(grammar::compile_json_schema(Json::parse(R"({"type":"number","minimum":10,"maximum":20})")));
  EXPECT_TRUE(number.advance("1"));
  EXPECT_FALSE(number.can_end());
  EXPECT_FALSE(number.advance("."));  // 1.x is below the minimum
  EXPECT_TRUE(number.advance("3"));
  EXPECT_FALSE(number.advance("0"));  // 130 and longer are above the maximum
  EXPECT_TRUE(number.advance(".5"));
  EXPECT_TRUE(number.can_end());
}

TEST(GrammarMatcher, FormatsAndPatterns) {
  const auto date = grammar::compile_json_schema(Json::parse(R"({"type":"string","format":"date-time"})"));
  EXPECT_TRUE(matches(date, R"("2024-02-29T13:45:00Z")"));
  EXPECT_TRUE(matches(date, R"("2024-02-29T13:45:00.123+05:30")"));
  EXPECT_FALSE(matches(date, R"("2024-13-01T00:00:00Z")"));
  const auto uuid = grammar::compile_json_schema(Json::parse(R"({"type":"string","format":"uuid"})"));
  EXPECT_TRUE(matches(uuid, R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_FALSE(matches(uuid, R"("123e4567")"));
  const auto sku = grammar::compile_json_schema(Json::parse(R"({"type":"string","pattern":"^[A-Z]{3}-(\\d{2}|x+)$"})"));
  EXPECT_TRUE(matches(sku, R"("ABC-12")"));
  EXPECT_TRUE(matches(sku, R"("ABC-xxx")"));
  EXPECT_FALSE(matches(sku, R"("ABC-1")"));
}

TEST(TokenMasker, MaskEqualsTokenByTokenSimulation) {
  // Against the slow definition (each token's bytes fed to a copy of the matcher), in several states.
  const auto g = grammar::compile_json_schema(tool_schema_corpus()[3]);
  TokenMasker masker(vocabulary());
  std::vector<uint32_t> mask(static_cast<size_t>(vocabulary()->num_words()));
  for (const char* prefix : {"", "{", R"({"items":[{"sku":"AB)", R"({"items":[{"sku":"ABC-1234","quantity":9)",
                             R"({"items":[],"coupon":"x\)", R"({"items":[],"coupon":"ab)"}) {
    GrammarMatcher matcher(g);
    ASSERT_TRUE(matcher.advance(std::string(prefix))) << prefix;
    masker.fill_mask(matcher, mask);
    int32_t allowed = 0;
    for (TokenId token = 0; token < kNumOrdinaryTokens; ++token) {
      GrammarMatcher copy = matcher;
      const bool expected = copy.advance(test_tokenizer().token_bytes(token));
      const bool got = (mask[static_cast<size_t>(token) / 32] >> (token % 32)) & 1u;
      ASSERT_EQ(got, expected) << "prefix " << prefix << " token " << token << " '"
                               << test_tokenizer().token_bytes(token) << "'";
      allowed += got;
    }
    EXPECT_GT(allowed, 0) << prefix;
  }
}

// Every ordinary token is allowed in `mask` exactly when a copy of the matcher takes its bytes.
void expect_mask_is_exact(const GrammarMatcher& matcher, const std::vector<uint32_t>& mask, const std::string& what) {
  for (TokenId token = 0; token < kNumOrdinaryTokens; ++token) {
    GrammarMatcher copy = matcher;
    const bool expected = copy.advance(test_tokenizer().token_bytes(token));
    const bool got = (mask[static_cast<size_t>(token) / 32] >> (token % 32)) & 1u;
    ASSERT_EQ(got, expected) << what << ": token " << token << " '" << test_tokenizer().token_bytes(token) << "'";
  }
}

TEST(TokenMasker, AMaskerOutlivesItsGrammars) {
  // One masker for grammar after grammar: a pattern's cached token lists must never answer for a later
  // grammar's pattern (one freed and the next allocated at the same address was how this failed).
  TokenMasker masker(vocabulary());
  std::vector<uint32_t> mask(static_cast<size_t>(vocabulary()->num_words()));
  for (int round = 0; round < 4; ++round) {
    for (const char* pattern : {"^[a-c]{5}$", "^[0-9]{5}$"}) {
      const auto g = grammar::compile_json_schema(Json{{"type", "string"}, {"pattern", pattern}});
      GrammarMatcher matcher(g);
      ASSERT_TRUE(matcher.advance(std::string("\"")));
      masker.fill_mask(matcher, mask);
      expect_mask_is_exact(matcher, mask, std::string("pattern ") + pattern);
    }
  }
}

TEST(TokenMasker, MaskInsideStringsEqualsTokenByTokenSimulation) {
  // The precomputed in-string sets: open keys, values near their length bound (room for fewer code points
  // than long tokens start), after multi-byte characters and escapes, in plain JSON.
  const auto file = grammar::compile_json_schema(tool_schema_corpus()[5]);  // path <= 80, content <= 400, open metadata
  const auto any = grammar::json_object_grammar();
  TokenMasker masker(vocabulary());
  std::vector<uint32_t> mask(static_cast<size_t>(vocabulary()->num_words()));
  const std::string near_bound = R"({"path":")" + std::string(77, 'a');  // 3 code points left
  const std::vector<std::pair<std::shared_ptr<const grammar::Grammar>, std::string>> cases = {
      {file, R"({"path":")"},
      {file, near_bound},
      {file, near_bound + R"(\u00e9)"},                        // 2 left after an escape
      {file, near_bound + "日"},                               // 2 left after a 3-byte character
      {file, near_bound + R"(\n\t)"},                          // at the bound: nothing but the closing quote
      {file, R"({"path":"a","content":"b","metadata":{"ke)"},  // an open object's key
      {file, R"({"path":"a","content":"b","metadata":{"k":"v)"},
      {any, R"({"a)"},
      {any, R"({"a":["xé)"},
  };
  for (const auto& [g, prefix] : cases) {
    GrammarMatcher matcher(g);
    ASSERT_TRUE(matcher.advance(prefix)) << prefix;
    masker.fill_mask(matcher, mask);
    expect_mask_is_exact(matcher, mask, "prefix " + prefix);
  }
}

TEST(TokenMasker, RandomAndAdversarialWalksAlwaysParseAndValidate) {
  TokenMasker masker(vocabulary());
  std::vector<double> mask_us;
  std::vector<Json> schemas = tool_schema_corpus();
  schemas.push_back(Json::object());  // any JSON value
  for (size_t s = 0; s < schemas.size(); ++s) {
    const auto g = grammar::compile_json_schema(schemas[s]);
    for (int trial = 0; trial < 4; ++trial) {
      std::mt19937_64 rng(1000 * s + static_cast<uint64_t>(trial));
      GrammarMatcher matcher(g);
      std::string out;
      ASSERT_TRUE(random_walk(matcher, masker, test_tokenizer(), rng, trial % 2 == 1, 4000, out, &mask_us))
          << "schema " << s << " did not finish: " << out.substr(0, 300);
      const Json value = Json::parse(out, nullptr, false);
      ASSERT_FALSE(value.is_discarded()) << "schema " << s << " produced invalid JSON: " << out;
      EXPECT_EQ(validate(value, schemas[s], schemas[s]), "") << "schema " << s << ": " << out;
    }
  }
  std::sort(mask_us.begin(), mask_us.end());
  const double mean = std::accumulate(mask_us.begin(), mask_us.end(), 0.0) / static_cast<double>(mask_us.size());
  std::printf(
      "[ mask time ] %zu masks over 201,088 tokens, thread CPU time: mean %.1f us, p50 %.1f us, p99 %.1f us, max %.1f "
      "us\n",
      mask_us.size(), mean, mask_us[mask_us.size() / 2], mask_us[mask_us.size() * 99 / 100], mask_us.back());
}

}  // namespace
}  // namespace gossamer::text::testing
