// The encode path of tokenizer_encode.h: the piece cache of long inputs and parallel encoding give exactly
// the ids of the reference path (PCRE2 pieces, then byte_pair_encode per piece, itself checked against the
// naive BPE in tokenizer_bpe_test.cpp), whatever the thread count and wherever the safe splits fall.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "text/bpe.h"
#include "text/pretokenizer.h"
#include "text/tokenizer_encode.h"
#include "text/tokenizer_ranks.h"
#include "text/tokenizer_test_util.h"
#include "text/utf8.h"

namespace gossamer::text {
namespace {

const RankTable& ranks() {
  static const RankTable table = [] {
    RankData data = load_o200k_base_json(testing::tiktoken_json_path());
    return RankTable(std::move(data.arena), std::move(data.offsets));
  }();
  return table;
}

std::vector<int32_t> reference_encode(std::string_view text) {
  static const Pretokenizer pre;
  std::vector<int32_t> out;
  size_t pos = 0, begin = 0, end = 0;
  while (pre.next_piece(text, pos, begin, end)) {
    byte_pair_encode(ranks(), text.substr(begin, end - begin), out);
    pos = end;
  }
  return out;
}

// ~`bytes` of text: repeated multi-token words (cache hits), rare scripts, long runs, few or many safe splits.
std::string long_text(uint32_t seed, size_t bytes, int flavour) {
  static const std::vector<std::string> words = {" internationalization",
                                                 " Donaudampfschifffahrt",
                                                 " превосходительство",
                                                 " 東京特許許可局長",
                                                 "ภาษาไทยง่ายนิดเดียว",
                                                 " naïveté",
                                                 "  ",
                                                 "\n",
                                                 "\r\n",
                                                 " 12345678",
                                                 "HTTPServerError",
                                                 " can't",
                                                 "'LL",
                                                 "🙂👍🏽",
                                                 "\t",
                                                 "e\xCC\x81",
                                                 "\xC2\xA0",
                                                 "!!!",
                                                 "//",
                                                 " a",
                                                 "中文字符测试",
                                                 " שלום",
                                                 " مرحبا",
                                                 "\xE3\x80\x80"};
  std::mt19937 rng(seed);
  std::string out;
  while (out.size() < bytes) {
    if (flavour == 1) {  // one long line without newlines or spaces: splits only after letters
      out += words[3].substr(1) + words[13] + "12" + words[5].substr(1);
    } else if (flavour == 2) {  // whitespace only: no safe split at all
      out += rng() % 2 ? " " : "\t";
    } else {
      out += words[rng() % words.size()];
    }
  }
  return out;
}

TEST(TokenizerEncodeTest, LongInputsWithTheCacheMatchTheReference) {
  for (int flavour = 0; flavour < 3; ++flavour) {
    const std::string text = long_text(static_cast<uint32_t>(flavour), 3 * kCacheMinBytes, flavour);
    std::vector<int32_t> got;
    encode_ordinary_span(ranks(), text, 0, text.size(), got);
    ASSERT_EQ(got, reference_encode(text)) << "flavour " << flavour;
  }
}

TEST(TokenizerEncodeTest, ParallelEncodingIsIdenticalToSerial) {
  for (int flavour = 0; flavour < 3; ++flavour) {
    const std::string text = long_text(7 + static_cast<uint32_t>(flavour), 3 * kParallelMinBytes, flavour);
    const std::vector<int32_t> serial = encode_ordinary_parallel(ranks(), text, 1);
    ASSERT_EQ(serial, reference_encode(text)) << "flavour " << flavour;
    for (const unsigned threads : {2u, 3u, 8u, 64u}) {
      ASSERT_EQ(encode_ordinary_parallel(ranks(), text, threads), serial)
          << "flavour " << flavour << ", " << threads << " threads";
    }
  }
}

TEST(TokenizerEncodeTest, ParallelEncodingThroughTheTokenizer) {
  const Tokenizer& tokenizer = testing::test_tokenizer();
  const std::string text = long_text(11, 2 * kParallelMinBytes, 0);
  EXPECT_EQ(tokenizer.encode_ordinary_parallel(text, 4), tokenizer.encode_ordinary(text));
  EXPECT_EQ(tokenizer.encode_ordinary_parallel("short text", 4), tokenizer.encode_ordinary("short text"));
  EXPECT_THROW(tokenizer.encode_ordinary_parallel(text + "\xFF", 4), Error);
}

}  // namespace
}  // namespace gossamer::text
