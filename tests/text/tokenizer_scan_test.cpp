// The hand-written pre-tokenizer (pretokenizer_scan.h) against the PCRE2 reference (pretokenizer.h, the
// Unicode 16 variant that matched tiktoken on every corpus): every code point in many contexts, random code
// point strings, the spec's examples, and the safe splits used by parallel encoding.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "text/pretokenizer.h"
#include "text/pretokenizer_classes.h"
#include "text/pretokenizer_scan.h"
#include "text/utf8.h"

namespace gossamer::text {
namespace {

using Pieces = std::vector<std::pair<size_t, size_t>>;

Pieces scan(std::string_view text, size_t from = 0) {
  Pieces out;
  PieceScanner scanner(text, from);
  size_t begin = 0, end = 0;
  while (scanner.next(begin, end)) out.emplace_back(begin, end);
  return out;
}

Pieces reference(const Pretokenizer& pre, std::string_view text) {
  Pieces out;
  size_t pos = 0, begin = 0, end = 0;
  while (pre.next_piece(text, pos, begin, end, Pretokenizer::Variant::kFull)) {
    out.emplace_back(begin, end);
    pos = end;
  }
  return out;
}

// The first differing piece, for a readable failure.
std::string first_difference(std::string_view text, const Pieces& got, const Pieces& want) {
  for (size_t i = 0; i < std::max(got.size(), want.size()); ++i) {
    // NOTE: appends, not a chain of operator+ (GCC 12 reports a -Wrestrict false positive on those).
    const auto show = [&](const Pieces& p) {
      std::string out = "<none>";
      if (i >= p.size()) return out;
      out = "[";
      out += std::to_string(p[i].first);
      out += ",";
      out += std::to_string(p[i].second);
      out += ") '";
      out += text.substr(p[i].first, p[i].second - p[i].first);
      out += "'";
      return out;
    };
    if (i >= got.size() || i >= want.size() || got[i] != want[i]) {
      return "piece " + std::to_string(i) + ": scanner " + show(got) + ", PCRE2 " + show(want);
    }
  }
  return "";
}

void expect_same_pieces(const Pretokenizer& pre, std::string_view text, const std::string& what) {
  const Pieces got = scan(text), want = reference(pre, text);
  ASSERT_EQ(got, want) << what << ": " << first_difference(text, got, want);
}

bool is_scalar(char32_t cp) {
  return cp < 0xD800 || (cp > 0xDFFF && cp <= 0x10FFFF);
}

TEST(PieceScannerTest, SplitsLikeTheSpec) {
  const auto pieces = [](std::string_view text) {
    std::vector<std::string> out;
    for (const auto& [b, e] : scan(text)) out.emplace_back(text.substr(b, e - b));
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces("HTMLParser CamelCase"), (V{"HTMLParser", " Camel", "Case"}));
  EXPECT_EQ(pieces("  hello"), (V{" ", " hello"}));
  EXPECT_EQ(pieces("a  \n\n  b"), (V{"a", "  \n\n", " ", " b"}));
  EXPECT_EQ(pieces(" 123 4567"), (V{" ", "123", " ", "456", "7"}));
  EXPECT_EQ(pieces("I'M DON'T we'LL"), (V{"I'M", " DON'T", " we'LL"}));
  EXPECT_EQ(pieces("foo/bar//baz\n/"), (V{"foo", "/bar", "//", "baz", "\n", "/"}));
  EXPECT_EQ(pieces("trailing   "), (V{"trailing", "   "}));
  EXPECT_EQ(pieces(""), V{});
  EXPECT_EQ(pieces("it\xC5\xBF x'"), (V{"it\xC5\xBF", " x", "'"}));  // U+017F is a letter itself
  EXPECT_EQ(pieces("it'\xC5\xBF"), (V{"it'\xC5\xBF"}));              // and 's case-insensitively
  EXPECT_EQ(pieces("\xCC\x81"
                   "ABC"),
            (V{"\xCC\x81", "ABC"}));  // a lone mark before capitals
}

TEST(PieceScannerTest, AsciiIsBlockZeroOfTheClassTable) {
  EXPECT_EQ(classes::kStage1[0], 0);
  EXPECT_EQ(classes::of('a'), classes::kLower | classes::kLetter);
  EXPECT_EQ(classes::of('Z'), classes::kUpper | classes::kLetter);
  EXPECT_EQ(classes::of('7'), classes::kNumber);
  EXPECT_EQ(classes::of('\t'), classes::kSpace);
  EXPECT_EQ(classes::of(0x1C), 0);  // not White_Space
  EXPECT_EQ(classes::of(0x85), classes::kSpace);
  EXPECT_EQ(classes::of(0x0301), classes::kUpper | classes::kLower);                      // a mark
  EXPECT_EQ(classes::of(0x4E2D), classes::kUpper | classes::kLower | classes::kLetter);   // Lo
  EXPECT_EQ(classes::of(0x105C0), classes::kUpper | classes::kLower | classes::kLetter);  // Unicode 16 Lo
  EXPECT_EQ(classes::of(0x10FFFF), 0);
}

// Every code point, in contexts that tell each class bit apart: next to lower and upper letters, marks,
// digits, spaces, newlines, apostrophes, slashes and runs of itself.
TEST(PieceScannerTest, EveryCodePointInContextMatchesPcre2) {
  const Pretokenizer pre;
  static const char* const kContexts[] = {
      "a", "A", " ", "1", "'s", "!", "\n", "/", "\xCC\x81", "\xE4\xB8\xAD", "\t", "\xC2\xA0", "'", "x y", "\r\n"};
  std::string text;
  char32_t block_start = 0;
  for (char32_t cp = 0; cp <= 0x110000; ++cp) {
    if (cp == 0x110000 || (cp % 4096 == 0 && cp > 0)) {
      expect_same_pieces(pre, text, "code points from U+" + std::to_string(block_start));
      if (HasFatalFailure() || cp == 0x110000) return;
      text.clear();
      block_start = cp;
    }
    if (!is_scalar(cp)) continue;
    std::string c;
    append_utf8(c, cp);
    const char* const before = kContexts[cp % std::size(kContexts)];
    const char* const after = kContexts[(cp / 7 + 3) % std::size(kContexts)];
    for (const std::string_view part : {std::string_view(before), std::string_view(after), std::string_view(" "),
                                        std::string_view("'re"), std::string_view("1"), std::string_view("\n")}) {
      text += c;
      text += part;
      text += c;
    }
    for (int run = 0; run < 4; ++run) text += c;  // numbers split after 3
  }
}

std::string random_text(std::mt19937_64& rng, size_t chars) {
  // Mostly code points near the interesting ones, some anywhere.
  static const std::vector<char32_t> picks = {' ',    ' ',    '\n',   '\r',    '\t',   '\'',   '/',    's',   'S',
                                              't',    'e',    'l',    'L',     'A',    'Z',    'a',    'z',   '0',
                                              '9',    '!',    '.',    0x85,    0xA0,   0x17F,  0x1C5,  0x2B0, 0x301,
                                              0x4E2D, 0x3000, 0x2028, 0x1F642, 0x0660, 0x2167, 0x00B2, 0x1C};
  std::string out;
  for (size_t i = 0; i < chars; ++i) {
    char32_t cp;
    switch (rng() % 4) {
      case 0: cp = static_cast<char32_t>(rng() % 0x110000); break;
      case 1: cp = static_cast<char32_t>(rng() % 0x3000); break;
      default: cp = picks[rng() % picks.size()]; break;
    }
    if (!is_scalar(cp)) cp = 'x';
    append_utf8(out, cp);
  }
  return out;
}

TEST(PieceScannerTest, RandomCodePointStringsMatchPcre2) {
  const Pretokenizer pre;
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 30000; ++trial) {
    const std::string text = random_text(rng, 1 + rng() % 120);
    expect_same_pieces(pre, text, "trial " + std::to_string(trial));
    if (HasFatalFailure()) return;
  }
}

// Every split next_safe_split finds is a piece boundary of the whole scan, and scanning from it continues
// that scan exactly.
TEST(PieceScannerTest, SafeSplitsArePieceBoundaries) {
  std::mt19937_64 rng(23);
  size_t splits = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const std::string text = random_text(rng, 50 + rng() % 400);
    const Pieces whole = scan(text);
    std::vector<size_t> ends = {0};
    for (const auto& piece : whole) ends.push_back(piece.second);
    for (size_t from = 0; from < text.size();) {
      const size_t split = next_safe_split(text, from);
      ASSERT_GT(split, from);
      if (split >= text.size()) break;
      ++splits;
      const auto at = std::find(ends.begin(), ends.end(), split);
      ASSERT_NE(at, ends.end()) << "split " << split << " is inside a piece, trial " << trial;
      const Pieces rest = scan(text, split);
      ASSERT_TRUE(std::equal(rest.begin(), rest.end(), whole.begin() + (at - ends.begin()))) << "trial " << trial;
      from = split;
    }
  }
  EXPECT_GT(splits, 1000u);  // the test exercised the splitter
}

}  // namespace
}  // namespace gossamer::text
