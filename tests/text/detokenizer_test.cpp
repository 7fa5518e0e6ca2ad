// IncrementalDetokenizer: streaming ids to UTF-8 text without ever emitting half a character.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "text/incremental_detokenizer.h"
#include "text/tokenizer_test_util.h"
#include "text/utf8.h"

namespace gossamer::text {
namespace {

using testing::test_tokenizer;

const std::string kReplacement = "\xEF\xBF\xBD";

// The id of the single-byte token for `byte`.
TokenId byte_token(uint8_t byte) {
  for (TokenId id = 0; id < 256; ++id) {
    if (test_tokenizer().token_bytes(id) == std::string(1, static_cast<char>(byte))) return id;
  }
  throw std::runtime_error("no single-byte token");
}

bool is_valid_utf8(const std::string& text) {
  return utf8_valid_prefix(text) == text.size();
}

TEST(IncrementalDetokenizerTest, HoldsBackASplitCharacterUntilItCompletes) {
  IncrementalDetokenizer detok(test_tokenizer());
  // 9552 = " \xF0\x9F": a space, then the first half of a 4-byte character.
  EXPECT_EQ(detok.push(9552), " ");
  EXPECT_EQ(detok.pending_bytes(), 2u);
  EXPECT_EQ(detok.push(byte_token(0x99)), "");
  EXPECT_EQ(detok.pending_bytes(), 3u);
  EXPECT_EQ(detok.push(byte_token(0x82)), "\xF0\x9F\x99\x82");  // U+1F642
  EXPECT_EQ(detok.pending_bytes(), 0u);
  EXPECT_EQ(detok.flush(), "");
}

TEST(IncrementalDetokenizerTest, EveryByteSplitOfMultiByteCharacters) {
  const std::string text = "aé中🙂e\xCC\x81 Ωß\xF4\x8F\xBF\xBF\xEF\xBF\xBF";
  IncrementalDetokenizer detok(test_tokenizer());
  std::string out;
  for (unsigned char byte : text) {
    const std::string piece = detok.push(byte_token(byte));
    EXPECT_TRUE(is_valid_utf8(piece));
    out += piece;
  }
  EXPECT_EQ(out + detok.flush(), text);
}

TEST(IncrementalDetokenizerTest, RealTokenStreamsInRandomChunks) {
  const Tokenizer& tok = test_tokenizer();
  // NOTE: clang-format 14 is not idempotent on this literal (it measures bytes, not columns).
  // clang-format off
  const std::string text =
      "Streaming 🙂👍🏽🇫🇷 with 中文字符, العربية, हिन्दी, 한국어 and emoji 👨‍👩‍👧 "
      "across token boundaries. "
      "Ẓ̵̡̛a̴l̷g̶o̸ and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟗𝟖.";
  // clang-format on
  const auto ids = tok.encode_ordinary(text);
  std::mt19937 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    IncrementalDetokenizer detok(tok);
    std::string out;
    for (size_t i = 0; i < ids.size();) {
      const size_t n = std::min<size_t>(1 + rng() % 4, ids.size() - i);
      const std::string piece = detok.push(std::span<const TokenId>(ids).subspan(i, n));
      EXPECT_TRUE(is_valid_utf8(piece));
      out += piece;
      i += n;
    }
    EXPECT_EQ(out + detok.flush(), text);
  }
}

TEST(IncrementalDetokenizerTest, FlushReplacesADanglingPartialCharacter) {
  IncrementalDetokenizer detok(test_tokenizer());
  EXPECT_EQ(detok.push(9552), " ");
  EXPECT_EQ(detok.flush(), kReplacement);
  EXPECT_EQ(detok.pending_bytes(), 0u);
  // Ready for a new stream.
  EXPECT_EQ(detok.push(24912), "hello");
  EXPECT_EQ(detok.flush(), "");
}

TEST(IncrementalDetokenizerTest, InvalidBytesBecomeReplacementCharactersAtOnce) {
  IncrementalDetokenizer detok(test_tokenizer());
  EXPECT_EQ(detok.push(byte_token(0xFF)), kReplacement);
  EXPECT_EQ(detok.push(byte_token(0xE2)), "");
  EXPECT_EQ(detok.push(byte_token('a')), kReplacement + "a");  // lead byte then a non-continuation
  EXPECT_EQ(detok.push(byte_token(0x80)), kReplacement);       // stray continuation byte
  EXPECT_EQ(detok.push(200006), "<|start|>");                  // specials decode to their text
  EXPECT_EQ(detok.flush(), "");
}

TEST(IncrementalDetokenizerTest, StreamingEqualsLossyDecodingOfTheWhole) {
  const Tokenizer& tok = test_tokenizer();
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<TokenId> ids;
    const size_t n = 1 + rng() % 40;
    for (size_t i = 0; i < n; ++i) {
      // mostly byte-level and short tokens, which split characters most often
      const uint32_t kind = rng() % 4;
      ids.push_back(kind == 0   ? static_cast<TokenId>(rng() % 256)
                    : kind == 3 ? static_cast<TokenId>(199998 + rng() % 1090)
                                : static_cast<TokenId>(rng() % kNumOrdinaryTokens));
    }
    IncrementalDetokenizer detok(tok);
    std::string out;
    for (TokenId id : ids) {
      const std::string piece = detok.push(id);
      ASSERT_TRUE(is_valid_utf8(piece));
      out += piece;
    }
    out += detok.flush();
    EXPECT_EQ(out, utf8_lossy(tok.decode_bytes(ids))) << "trial " << trial;
  }
}

TEST(IncrementalDetokenizerTest, UnknownIdsThrowAndLeaveTheStateAlone) {
  IncrementalDetokenizer detok(test_tokenizer());
  EXPECT_EQ(detok.push(9552), " ");
  EXPECT_THROW(detok.push(201088), Error);
  const std::vector<TokenId> bad = {byte_token(0x99), -5};
  EXPECT_THROW(detok.push(bad), Error);
  EXPECT_EQ(detok.pending_bytes(), 2u);
  EXPECT_EQ(detok.push(byte_token(0x99)), "");
  EXPECT_EQ(detok.push(byte_token(0x82)), "\xF0\x9F\x99\x82");
}

}  // namespace
}  // namespace gossamer::text
