// Differential test against the npm `tiktoken` package (OpenAI's Rust core compiled to WASM), run under
// node: a deterministic ~200 KB corpus of adversarial text is encoded by both and every id compared.
// Set-up (scripts/setup.sh) installs node and the package, so their absence is a failure, not a skip.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "text/pretokenizer_classes.h"
#include "text/tokenizer.h"
#include "text/tokenizer_test_util.h"
#include "text/utf8.h"

namespace gossamer::text {
namespace {

// Deterministic corpus: std::mt19937 is specified exactly by the standard; only its raw output is used.
class CorpusGenerator {
 public:
  explicit CorpusGenerator(uint32_t seed) : rng_(seed) {}

  uint32_t below(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[below(static_cast<uint32_t>(items.size()))];
  }

  std::vector<std::string> segments(size_t target_bytes) {
    std::vector<std::string> out;
    size_t total = 0;
    while (total < target_bytes) {
      std::string segment;
      switch (below(9)) {
        case 0: segment = random_unicode(1 + below(80)); break;
        case 1: segment = code(); break;
        case 2: segment = whitespace_mix(); break;
        case 3: segment = contractions(); break;
        case 4: segment = numbers(); break;
        case 5: segment = long_word(); break;
        case 6: segment = prose(); break;
        case 7: segment = specials(); break;
        default: segment = random_unicode(1 + below(400)); break;
      }
      total += segment.size();
      out.push_back(std::move(segment));
    }
    return out;
  }

 private:
  // Ranges chosen to hit every class of the o200k regex: Lu/Ll/Lt/Lm/Lo, marks, numbers of all kinds,
  // White_Space and its near misses, rare and recently encoded scripts, unassigned and private-use points.
  std::string random_unicode(size_t count) {
    static const std::vector<std::pair<char32_t, char32_t>> ranges = {
        {0x20, 0x7E},        {0x20, 0x7E},       {0x20, 0x7E},       {0xA0, 0xFF},       {0x100, 0x24F},
        {0x250, 0x2FF},      {0x300, 0x36F},     {0x370, 0x3FF},     {0x400, 0x4FF},     {0x530, 0x58F},
        {0x590, 0x5FF},      {0x600, 0x6FF},     {0x900, 0x97F},     {0x980, 0x9FF},     {0xE00, 0xE7F},
        {0x10A0, 0x10FF},    {0x1100, 0x11FF},   {0x1C80, 0x1C8F},   {0x1DC0, 0x1DFF},   {0x1E00, 0x1EFF},
        {0x1F00, 0x1FFF},    {0x2000, 0x206F},   {0x20D0, 0x20FF},   {0x2150, 0x218F},   {0x2460, 0x24FF},
        {0x3000, 0x303F},    {0x3040, 0x30FF},   {0x4E00, 0x9FFF},   {0xA7C0, 0xA7FF},   {0xAC00, 0xD7A3},
        {0xFB00, 0xFB4F},    {0xFE00, 0xFE0F},   {0xFF00, 0xFFEF},   {0xFFF0, 0xFFFF},   {0x10330, 0x1034F},
        {0x105C0, 0x105FF},  {0x10D40, 0x10D8F}, {0x11F00, 0x11F5F}, {0x12000, 0x1203F}, {0x16100, 0x1613F},
        {0x16D40, 0x16D7F},  {0x16EA0, 0x16EDF}, {0x17000, 0x1707F}, {0x1D400, 0x1D4FF}, {0x1E4D0, 0x1E4FF},
        {0x1E5D0, 0x1E5FF},  {0x1F300, 0x1F64F}, {0x1F900, 0x1F9FF}, {0x1FA70, 0x1FAFF}, {0x20000, 0x2004F},
        {0x2EBF0, 0x2EC1F},  {0x31350, 0x3139F}, {0x323B0, 0x323FF}, {0xE0000, 0xE007F}, {0xF0000, 0xF004F},
        {0x10FFF0, 0x10FFFF}};
    static const std::vector<char32_t> spaces = {'\t',   '\n',   '\v',   '\f',   '\r',   ' ',    0x85,   0xA0,
                                                 0x1680, 0x2000, 0x2007, 0x200A, 0x200B, 0x2028, 0x2029, 0x202F,
                                                 0x205F, 0x3000, 0x1C,   0x1D,   0x1E,   0x1F,   0x180E, 0xFEFF};
    std::string out;
    for (size_t i = 0; i < count; ++i) {
      if (below(6) == 0) {
        append_utf8(out, pick(spaces));
        continue;
      }
      const auto& [lo, hi] = pick(ranges);
      append_utf8(out, lo + below(static_cast<uint32_t>(hi - lo + 1)));
    }
    return out;
  }

  std::string code() {
    static const std::vector<std::string> snippets = {
        "for (size_t i = 0; i < n; ++i) {\n  out[i] = in[i] * 2;\n}\n",
        "def tokenize(text: str) -> list[int]:\r\n    return [ord(c) for c in text]  # naïve\r\n",
        "{\"role\": \"assistant\", \"content\": \"Hello\\nWorld\", \"n\": 12345678}\n",
        "#include <vector>\n\ntemplate <typename T>\nstruct Foo { T value_; };  // NOTE: trailing   \n",
        "SELECT id, name FROM users WHERE email LIKE '%@example.com' ORDER BY created_at DESC;\n",
        "const f = async (x) => { await fetch(`/api/v1/items/${x}`); return x ?? null; };",
        "\tif x != nil {\n\t\treturn fmt.Errorf(\"bad: %w\", err)\n\t}\n",
        "    <div class=\"container\"><a href=\"https://example.com/path?q=1&r=2\">link</a></div>\n",
        "fn main() { let v: Vec<u8> = b\"\\xF0\\x9F\".to_vec(); println!(\"{:?}\", v); }\n",
        "x=[1,2,3];y={'a':1};z=lambda:None;print(x[::-1],y,z)//comment/*x*/\n"};
    static const std::vector<std::string> identifiers = {
        "HTMLParser", "camelCase",   "snake_case_name", "URLs",      "getHTTPResponseCode",
        "__init__",   "ÆsirVölundr", "x1y2z3",          "MAX_VALUE", "iOS",
        "NaN"};
    std::string out = pick(snippets);
    const size_t at = below(static_cast<uint32_t>(out.size()));
    // keep UTF-8 intact: insert only at an ASCII position
    if (static_cast<unsigned char>(out[at]) < 0x80) out.insert(at, " " + pick(identifiers) + " ");
    return out;
  }

  std::string whitespace_mix() {
    static const std::vector<std::string> pieces = {
        " ",        " ",  "  ", "\t",          "\n", "\r\n", "\r", "\n\n", "\xC2\xA0", "\xE3\x80\x80", "\xE2\x80\xA8",
        "\xC2\x85", "\v", "\f", "\xE2\x80\x89"};
    static const std::vector<std::string> after = {"word", "Word", "1", "!", "/", "", "é", "中", "🙂", "'s", "\n"};
    std::string out = pick(after);
    const uint32_t runs = 1 + below(6);
    for (uint32_t r = 0; r < runs; ++r) {
      const uint32_t n = 1 + below(40);
      for (uint32_t i = 0; i < n; ++i) out += pick(pieces);
      out += pick(after);
    }
    return out;
  }

  std::string contractions() {
    static const std::vector<std::string> words = {"I",   "you", "we",   "they",  "DON", "can", "it", "he",
                                                   "She", "o",   "ÉLAN", "naïve", "x",   "Ǆ",   "ǅ",  "ǆ"};
    static const std::vector<std::string> suffixes = {"s",  "t",  "re",    "ve", "m",  "ll", "d", "S", "T",
                                                      "RE", "Ve", "vE",    "M",  "LL", "lL", "D", "ſ", "\xE2\x84\xAA",
                                                      "x",  "",   "ll've", "d'", "s's"};
    static const std::vector<std::string> apostrophes = {"'", "'", "'", "\xE2\x80\x99", "''"};
    std::string out;
    const uint32_t n = 1 + below(12);
    for (uint32_t i = 0; i < n; ++i) {
      if (below(3) > 0) out += " ";
      out += pick(words) + pick(apostrophes) + pick(suffixes);
      if (below(4) == 0) out += pick(std::vector<std::string>{".", ",", "!", "?", "\n", "123"});
    }
    return out;
  }

  std::string numbers() {
    static const std::vector<std::string> other_digits = {"٣", "۴", "५", "৬", "๗",  "１", "²",
                                                          "½", "Ⅻ", "⑩", "𝟗", "〇", "፲"};
    std::string out;
    const uint32_t n = 1 + below(10);
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t len = 1 + below(30);
      for (uint32_t d = 0; d < len; ++d)
        out += below(8) == 0 ? pick(other_digits) : std::string(1, char('0' + below(10)));
      out += pick(std::vector<std::string>{" ", ".", ",", "-", "e", "x", "%", "$", "", " +", "\n", "a"});
    }
    return out;
  }

  std::string long_word() {
    static const std::vector<std::string> letters = {"a", "b", "e", "r", "n",  "t",       "A",
                                                     "Z", "é", "ñ", "ж", "中", "\xCC\x81"};
    std::string out;
    const uint32_t kind = below(5);
    const uint32_t len = 100 + below(3000);
    if (kind == 0) return std::string(len, "aZ!. _-0"[below(8)]);
    if (kind == 1) {
      for (uint32_t i = 0; i < len / 4; ++i)
        out += pick(std::vector<std::string>{"🙂", "👍🏽", "🇫🇷", "👨‍👩‍👧"});
      return out;
    }
    for (uint32_t i = 0; i < len; ++i) out += kind == 2 ? std::string(1, char('a' + below(26))) : pick(letters);
    return out;
  }

  std::string prose() {
    static const std::vector<std::string> sentences = {"The quick brown fox jumps over the lazy dog. ",
                                                       "Это простой пример текста на русском языке. ",
                                                       "これは日本語のテキストです。",
                                                       "这是一个中文句子，包含标点符号！",
                                                       "هذا نص عربي للاختبار. ",
                                                       "यह हिंदी में एक वाक्य है। ",
                                                       "Ελληνικά κείμενα με τόνους. ",
                                                       "한국어 문장도 포함합니다. ",
                                                       "Ça coûte 12,50 € — n'est-ce pas? ",
                                                       "ÀÉÎÕÜ àéîõü ÑÑÑ ñ. ",
                                                       "ภาษาไทยไม่มีช่องว่าง ",
                                                       "Ẓ̵̡̛a̴l̷g̶o̸ t̵e̸x̴t̷ ",
                                                       "עברית נכתבת מימין לשמאל. ",
                                                       "Ge'ez: ሰላም ዓለም። "};
    std::string out;
    const uint32_t n = 1 + below(8);
    for (uint32_t i = 0; i < n; ++i) out += pick(sentences);
    return out;
  }

  std::string specials() {
    static const std::vector<std::string> tokens = {"<|start|>",
                                                    "<|end|>",
                                                    "<|message|>",
                                                    "<|channel|>",
                                                    "<|return|>",
                                                    "<|call|>",
                                                    "<|constrain|>",
                                                    "<|endoftext|>",
                                                    "<|reserved_200100|>",
                                                    "<|endofprompt|>",
                                                    "<|bogus|>",
                                                    "<|",
                                                    "|>",
                                                    "<|<|start|>",
                                                    "<|start"};
    std::string out;
    const uint32_t n = 1 + below(6);
    for (uint32_t i = 0; i < n; ++i) out += pick(tokens) + pick(std::vector<std::string>{"", "user", " hi", "\n"});
    return out;
  }

  std::mt19937 rng_;
};

std::string find_node() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const auto candidate = std::filesystem::path(dir.empty() ? "." : dir) / "node";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

std::string describe(const Tokenizer& tok, const std::vector<TokenId>& ids, size_t at) {
  std::string out;
  const size_t lo = at >= 4 ? at - 4 : 0;
  for (size_t i = lo; i < ids.size() && i < at + 5; ++i) {
    std::string bytes;
    try {
      bytes = utf8_lossy(tok.token_bytes(ids[i]));
    } catch (...) {
      bytes = "?";
    }
    out += (i == at ? " >>" : " ") + std::to_string(ids[i]) + nlohmann::json(bytes).dump();
  }
  return out;
}

// Empty if equal; otherwise where and how the id lists first differ.
std::string first_mismatch(const Tokenizer& tok, const std::vector<TokenId>& got, const std::vector<TokenId>& want) {
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  if (i == got.size() && i == want.size()) return "";
  return "first difference at id index " + std::to_string(i) + " (ours " + std::to_string(got.size()) +
         " ids, tiktoken " + std::to_string(want.size()) + ")\n  ours:     " + describe(tok, got, i) +
         "\n  tiktoken: " + describe(tok, want, i);
}

// npm tiktoken's ids for `segments` (each alone, all joined, and joined with specials allowed), through
// tools/tiktoken_reference.mjs. Fails the test (fatally) if node or the package is missing.
void run_reference(const std::vector<std::string>& segments, const std::string& tag, nlohmann::json& reference) {
  const std::string node = find_node();
  ASSERT_FALSE(node.empty()) << "node is not on PATH; run `bash scripts/setup.sh`";
  const std::string source = GOSSAMER_SOURCE_DIR;
  ASSERT_TRUE(std::filesystem::exists(source + "/node_modules/tiktoken/package.json"))
      << "npm package tiktoken missing; run `bash scripts/setup.sh`";
  const std::string input = ::testing::TempDir() + "gossamer_tiktoken_" + tag + "_corpus.json";
  const std::string output = ::testing::TempDir() + "gossamer_tiktoken_" + tag + "_ids.json";
  std::ofstream(input) << nlohmann::json{{"segments", segments}}.dump();
  const std::string command =
      "'" + node + "' '" + source + "/tools/tiktoken_reference.mjs' --input '" + input + "' --output '" + output + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  reference = nlohmann::json::parse(testing::read_file(output));
  ASSERT_EQ(reference.at("segments").size(), segments.size());
}

TEST(TokenizerDifferentialTest, AgreesWithNpmTiktokenOnEveryId) {
  CorpusGenerator generator(20261130);
  const std::vector<std::string> segments = generator.segments(200 * 1024);
  std::string joined;
  for (const auto& segment : segments) joined += segment;
  ASSERT_EQ(utf8_valid_prefix(joined), joined.size());
  nlohmann::json reference;
  run_reference(segments, "corpus", reference);
  if (HasFatalFailure()) return;

  const Tokenizer& tok = testing::test_tokenizer();
  size_t mismatched_segments = 0;
  size_t total_ids = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    const auto want = reference["segments"][i].get<std::vector<TokenId>>();
    const auto got = tok.encode_ordinary(segments[i]);
    total_ids += want.size();
    const std::string diff = first_mismatch(tok, got, want);
    if (!diff.empty() && ++mismatched_segments <= 5) {
      ADD_FAILURE() << "segment " << i << " " << nlohmann::json(segments[i].substr(0, 300)).dump() << "\n" << diff;
    }
  }
  EXPECT_EQ(mismatched_segments, 0u) << "of " << segments.size() << " segments";

  const auto whole = tok.encode_ordinary(joined);
  EXPECT_EQ(first_mismatch(tok, whole, reference.at("whole").get<std::vector<TokenId>>()), "") << "whole corpus";
  const auto parallel = tok.encode_ordinary_parallel(joined, 4);
  EXPECT_EQ(first_mismatch(tok, parallel, reference.at("whole").get<std::vector<TokenId>>()), "")
      << "whole corpus, parallel";
  const auto whole_special = tok.encode(joined, {}, /*allow_all_special=*/true);
  EXPECT_EQ(first_mismatch(tok, whole_special, reference.at("whole_special").get<std::vector<TokenId>>()), "")
      << "whole corpus, specials allowed";
  std::printf("[ differential ] %zu bytes, %zu segments, %zu + %zu + %zu ids compared\n", joined.size(),
              segments.size(), total_ids, whole.size(), whole_special.size());
}

// Every run of code points with one o200k class (pretokenizer_classes.h), by its first, middle and last code
// point, in contexts that make the class matter (after letters of either case, before a contraction, in runs,
// after a space, next to digits and newlines).
TEST(TokenizerDifferentialTest, AgreesWithNpmTiktokenOnEveryCodePointClass) {
  std::vector<char32_t> samples;
  const auto scalar = [](char32_t cp) { return cp < 0xD800 || cp > 0xDFFF; };
  for (char32_t first = 0; first < 0x110000;) {
    char32_t last = first;
    while (last + 1 < 0x110000 && classes::of(last + 1) == classes::of(first)) ++last;
    for (const char32_t cp : {first, static_cast<char32_t>(first + (last - first) / 2), last}) {
      if (scalar(cp) && (samples.empty() || samples.back() != cp)) samples.push_back(cp);
    }
    first = last + 1;
  }
  std::vector<std::string> segments;
  for (size_t i = 0; i < samples.size(); i += 64) {
    std::string segment;
    for (size_t j = i; j < samples.size() && j < i + 64; ++j) {
      std::string c;
      append_utf8(c, samples[j]);
      segment += "a" + c + "A" + c + c + "'s " + c + "1" + c + " x" + c + "\n" + c + "\xCC\x81 ";
    }
    segments.push_back(std::move(segment));
  }
  nlohmann::json reference;
  run_reference(segments, "classes", reference);
  if (HasFatalFailure()) return;
  const Tokenizer& tok = testing::test_tokenizer();
  size_t mismatched = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string diff =
        first_mismatch(tok, tok.encode_ordinary(segments[i]), reference["segments"][i].get<std::vector<TokenId>>());
    if (!diff.empty() && ++mismatched <= 5) ADD_FAILURE() << "segment " << i << "\n" << diff;
  }
  EXPECT_EQ(mismatched, 0u) << "of " << segments.size() << " segments";
  EXPECT_GT(samples.size(), 3000u);
  std::printf("[ differential ] %zu code points sampled from every class run, %zu segments\n", samples.size(),
              segments.size());
}

}  // namespace
}  // namespace gossamer::text
