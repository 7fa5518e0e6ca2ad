// Tokenizer building blocks: SHA-256, the compact rank format, the pre-tokenizer's pieces, and BPE against a
// naive reference.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "text/bpe.h"
#include "text/pretokenizer.h"
#include "text/pretokenizer_unicode.h"
#include "text/sha256.h"
#include "text/tokenizer_ranks.h"
#include "text/tokenizer_test_util.h"
#include "text/utf8.h"

namespace gossamer::text {
namespace {

std::string sha256_hex(std::string_view data) {
  Sha256 sha;
  sha.update(data);
  return sha.hex_digest();
}

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Streaming in uneven chunks gives the same digest.
  const std::string text(1000, 'x');
  Sha256 chunked;
  for (size_t i = 0; i < text.size(); i += 7) chunked.update(std::string_view(text).substr(i, 7));
  EXPECT_EQ(chunked.hex_digest(), sha256_hex(text));
}

TEST(CompactRanksTest, DecodesTheFormat) {
  const RankData data = decode_compact_ranks("! 0 IQ== Ig== aGVsbG8=\n! 3 IHdvcmxk", "test");
  ASSERT_EQ(data.offsets.size(), 5u);
  EXPECT_EQ(data.arena, "!\"hello world");
  EXPECT_EQ(data.offsets, (std::vector<uint32_t>{0, 1, 2, 7, 13}));
  EXPECT_EQ(data.sha256, sha256_hex("IQ== 0\nIg== 1\naGVsbG8= 2\nIHdvcmxk 3\n"));
}

TEST(CompactRanksTest, RejectsMalformedData) {
  EXPECT_THROW(decode_compact_ranks("IQ== 0", "t"), Error);                   // plain .tiktoken form
  EXPECT_THROW(decode_compact_ranks("! 0 IQ== Ig==\n! 5 Iw==", "t"), Error);  // gap in ranks
  EXPECT_THROW(decode_compact_ranks("! 1 IQ==", "t"), Error);                 // does not start at 0
  EXPECT_THROW(decode_compact_ranks("! 0 I*==", "t"), Error);                 // bad base64
  EXPECT_THROW(decode_compact_ranks("! 0 IQ=", "t"), Error);                  // bad length
  EXPECT_THROW(decode_compact_ranks("! x IQ==", "t"), Error);                 // bad offset
}

TEST(CompactRanksTest, TheShippedFileMatchesThePinnedHash) {
  const RankData data = load_o200k_base_json(testing::tiktoken_json_path());
  EXPECT_EQ(data.sha256, kO200kBaseSha256);
  EXPECT_EQ(data.offsets.size(), 199999u);
  EXPECT_EQ(data.pat_str, Pretokenizer::kO200kPatStr);
}

TEST(CompactRanksTest, ATamperedFileFailsWithAClearMessage) {
  auto json = nlohmann::json::parse(testing::read_file(testing::tiktoken_json_path()));
  std::string ranks = json["bpe_ranks"];
  ranks.replace(ranks.find("IQ=="), 4, "Ig==");  // rank 0 becomes '"': not OpenAI's vocabulary
  json["bpe_ranks"] = ranks;
  const std::string path = ::testing::TempDir() + "tampered_o200k_base.json";
  std::ofstream(path) << json.dump();
  try {
    (void)load_o200k_base_json(path);
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("SHA-256"), std::string::npos) << message;
    EXPECT_NE(message.find(std::string(kO200kBaseSha256)), std::string::npos) << message;
    EXPECT_NE(message.find("scripts/setup.sh"), std::string::npos) << message;
  }
  EXPECT_THROW((void)Tokenizer::load_o200k_harmony("/nonexistent.json"), Error);
}

std::vector<std::string> pieces(const Pretokenizer& pre, std::string_view text,
                                Pretokenizer::Variant variant = Pretokenizer::Variant::kFull) {
  std::vector<std::string> out;
  size_t pos = 0, begin = 0, end = 0;
  while (pre.next_piece(text, pos, begin, end, variant)) {
    EXPECT_EQ(begin, pos) << "gap before a piece";
    out.emplace_back(text.substr(begin, end - begin));
    pos = end;
  }
  EXPECT_EQ(pos, text.size());
  return out;
}

// Examples of o200k's pre-tokenizer pattern, one per character class it names.
TEST(PretokenizerTest, SplitsLikeTheSpec) {
  const Pretokenizer pre;
  EXPECT_TRUE(pre.jit_enabled());
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces(pre, "HTMLParser CamelCase"), (V{"HTMLParser", " Camel", "Case"}));
  EXPECT_EQ(pieces(pre, "  hello"), (V{" ", " hello"}));
  EXPECT_EQ(pieces(pre, "a  \n\n  b"), (V{"a", "  \n\n", " ", " b"}));
  EXPECT_EQ(pieces(pre, " 123 4567"), (V{" ", "123", " ", "456", "7"}));
  EXPECT_EQ(pieces(pre, "I'M DON'T we'LL"), (V{"I'M", " DON'T", " we'LL"}));
  EXPECT_EQ(pieces(pre, "foo/bar//baz\n/"), (V{"foo", "/bar", "//", "baz", "\n", "/"}));
  EXPECT_EQ(pieces(pre, "trailing   "), (V{"trailing", "   "}));
  // \s is Unicode White_Space: U+0085, U+00A0, U+2028, U+3000 are spaces; U+001C..U+001F are not.
  EXPECT_EQ(pieces(pre,
                   "a\xC2\x85\xC2\x85"
                   "b"),
            (V{"a", "\xC2\x85",
               "\xC2\x85"
               "b"}));
  EXPECT_EQ(pieces(pre, "a\xC2\xA0\xE2\x80\xA8\xE3\x80\x80"), (V{"a", "\xC2\xA0\xE2\x80\xA8\xE3\x80\x80"}));
  EXPECT_EQ(pieces(pre, "a\x1C\x1D"), (V{"a", "\x1C\x1D"}));
  // Unicode 16 letters that PCRE2 10.42 (Unicode 14) does not know: Todhri U+105C0 is a letter.
  EXPECT_EQ(pieces(pre, "x\xF0\x90\x97\x80's"), (V{"x\xF0\x90\x97\x80's"}));
  // Very long runs stay linear and within the JIT stack.
  EXPECT_EQ(pieces(pre, std::string(200000, ' ') + "x").size(), 2u);
  EXPECT_EQ(pieces(pre, std::string(200000, 'a')).size(), 1u);
  EXPECT_EQ(pieces(pre, std::string(100000, '!')).size(), 1u);
}

TEST(PretokenizerTest, PicksThePlainPatternOnlyWhenItIsExact) {
  using Variant = Pretokenizer::Variant;
  EXPECT_EQ(Pretokenizer::variant_for(""), Variant::kPlain);
  EXPECT_EQ(Pretokenizer::variant_for("hello wörld 中文 🙂 ʕ"), Variant::kPlain);
  EXPECT_EQ(Pretokenizer::variant_for("x\xF0\x90\x97\x80"), Variant::kFull);  // U+105C0 (Unicode 16)
  EXPECT_EQ(Pretokenizer::variant_for(std::string(1000, 'a') + "\xE0\xA2\x97"), Variant::kFull);  // U+0897
  // Every code point: kFull exactly for those listed in pretokenizer_unicode.h.
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    bool listed = false;
    for (const auto& range : unicode_delta::kAllRanges) listed |= range.first <= cp && cp <= range.last;
    std::string text = "ab";
    append_utf8(text, cp);
    ASSERT_EQ(Pretokenizer::variant_for(text), listed ? Variant::kFull : Variant::kPlain)
        << std::hex << static_cast<uint32_t>(cp);
  }
  // Both variants split text without listed code points identically.
  const Pretokenizer pre;
  const std::string text =
      "Ǆemo HTMLParser it's 12345 \r\n\t ÆsirVölundr 中文字符 🙂👍🏽 e\xCC\x81 ٣٤ Ⅻ\xC2\xA0x  ";
  EXPECT_EQ(pieces(pre, text, Variant::kPlain), pieces(pre, text, Variant::kFull));
}

// The educational BPE (tiktoken/_educational.py): merge the lowest-ranked adjacent pair, leftmost on ties.
std::vector<int32_t> naive_bpe(const RankTable& table, std::string_view piece) {
  std::vector<std::string> parts;
  for (char c : piece) parts.emplace_back(1, c);
  while (true) {
    Rank best = kNoRank;
    size_t best_index = 0;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      const Rank rank = table.find(parts[i] + parts[i + 1]);
      if (rank < best) {
        best = rank;
        best_index = i;
      }
    }
    if (best == kNoRank) break;
    parts[best_index] += parts[best_index + 1];
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(best_index) + 1);
  }
  std::vector<int32_t> out;
  for (const auto& part : parts) out.push_back(static_cast<int32_t>(table.find(part)));
  return out;
}

// The whole-piece shortcut aside, byte_pair_encode must equal the naive merge.
std::vector<int32_t> expected_bpe(const RankTable& table, const std::string& piece) {
  const Rank whole = table.find(piece);
  return whole != kNoRank ? std::vector<int32_t>{static_cast<int32_t>(whole)} : naive_bpe(table, piece);
}

TEST(BpeTest, MatchesTheNaiveReferenceOnShortAndLongPieces) {
  RankData data = load_o200k_base_json(testing::tiktoken_json_path());
  const RankTable table(std::move(data.arena), std::move(data.offsets));
  EXPECT_EQ(table.find("hello"), 24912u);
  EXPECT_EQ(table.find("no such token in o200k"), kNoRank);
  std::mt19937_64 rng(7);
  const std::vector<std::string> alphabet = {"a", "b",  "e",    "r",    "t",    "in",  "er",   " ", "é", "ü",
                                             "ß", "中", "🙂", "\xF0", "\x9F", "ing", "tion", "_", "0", "x"};
  for (int trial = 0; trial < 400; ++trial) {
    // lengths around the small/large boundary (128 bytes) and well beyond it
    const size_t target = trial < 300 ? 2 + rng() % 200 : 100 + rng() % 900;
    std::string piece;
    while (piece.size() < target) piece += alphabet[rng() % alphabet.size()];
    std::vector<int32_t> got;
    byte_pair_encode(table, piece, got);
    ASSERT_EQ(got, expected_bpe(table, piece)) << "piece of " << piece.size() << " bytes, trial " << trial;
  }
  std::vector<int32_t> got;
  byte_pair_encode(table, std::string(3000, 'a'), got);
  EXPECT_EQ(got, naive_bpe(table, std::string(3000, 'a')));
}

// Pieces of random 2- and 3-byte characters (which may start as their char_token), ASCII and stray bytes,
// against the naive merge of bytes.
TEST(BpeTest, CharacterStartsMatchTheNaiveReference) {
  RankData data = load_o200k_base_json(testing::tiktoken_json_path());
  const RankTable table(std::move(data.arena), std::move(data.offsets));
  size_t inside_words = 0;  // characters that may start as one token between two non-ASCII bytes
  for (char32_t cp = 0x80; cp < 0x10000; ++cp) inside_words += table.char_token(cp, 0xB0, 0xD0) != kNoRank;
  EXPECT_GT(inside_words, 1000u);                        // the shortcut is in use
  EXPECT_NE(table.char_token(0x4E2D, -1, -1), kNoRank);  // alone, any character whose bytes merge to one token
  std::mt19937_64 rng(11);
  const std::vector<std::pair<char32_t, char32_t>> ranges = {{0x80, 0x7FF},    {0x400, 0x4FF},   {0x900, 0x97F},
                                                             {0xE00, 0xE7F},   {0x3040, 0x30FF}, {0x4E00, 0x9FFF},
                                                             {0xAC00, 0xD7A3}, {0xFF00, 0xFFEF}, {0x800, 0xFFFF}};
  for (int trial = 0; trial < 3000; ++trial) {
    std::string piece;
    const size_t target = trial < 2500 ? 2 + rng() % 60 : 128 + rng() % 300;  // both merge variants
    while (piece.size() < target) {
      const uint64_t kind = rng() % 10;
      if (kind == 0) {
        piece += static_cast<char>(0x80 + rng() % 0x80);  // a stray byte
      } else if (kind == 1) {
        piece += static_cast<char>('a' + rng() % 26);
      } else {
        const auto& [lo, hi] = ranges[rng() % ranges.size()];
        const char32_t cp = lo + static_cast<char32_t>(rng() % (hi - lo + 1));
        if (cp < 0xD800 || cp > 0xDFFF) append_utf8(piece, cp);
      }
    }
    std::vector<int32_t> got;
    byte_pair_encode(table, piece, got);
    ASSERT_EQ(got, expected_bpe(table, piece)) << "piece of " << piece.size() << " bytes, trial " << trial;
  }
}

TEST(Utf8Test, ValidationAndLossyDecoding) {
  EXPECT_EQ(utf8_valid_prefix("hello, wörld 🙂"), std::string_view("hello, wörld 🙂").size());
  EXPECT_EQ(utf8_valid_prefix("abcdefghij\xFFxyz"), 10u);
  EXPECT_EQ(utf8_lossy("a\xFF"
                       "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(utf8_lossy("a\xF0\x9F"), "a\xEF\xBF\xBD");                            // truncated: one U+FFFD
  EXPECT_EQ(utf8_lossy("\xE0\x80\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong: per byte
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98x"), "\xEF\xBF\xBDx");
  EXPECT_THROW(check_utf8("\xC0\xAF"), Error);
}

}  // namespace
}  // namespace gossamer::text
