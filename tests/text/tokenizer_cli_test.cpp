// `gossamer tokenize` / `gossamer detokenize` through the real binary.
#include <gtest/gtest.h>

#include <string>

#include "run_binary.h"

namespace gossamer::text {
namespace {

testing::BinaryResult run(const std::string& arguments, const std::string& stdin_bytes) {
  return testing::run_gossamer(arguments, &stdin_bytes);
}

TEST(TokenizerCliTest, TokenizeAndDetokenizeRoundTrip) {
  const testing::BinaryResult ids = run("tokenize", "hello world");
  ASSERT_EQ(ids.status, 0) << ids.output;
  EXPECT_EQ(ids.output.substr(0, ids.output.find(']') + 1), "[24912,2375]");
  const testing::BinaryResult text = run("detokenize", "[24912,2375]");
  ASSERT_EQ(text.status, 0) << text.output;
  EXPECT_EQ(text.output, "hello world");
}

TEST(TokenizerCliTest, SpecialsOnlyWhenAllowed) {
  const testing::BinaryResult plain = run("tokenize", "<|start|>");
  const testing::BinaryResult special = run("tokenize --allow-special", "<|start|>");
  ASSERT_EQ(special.status, 0) << special.output;
  EXPECT_EQ(special.output.substr(0, special.output.find(']') + 1), "[200006]");
  EXPECT_NE(plain.output.substr(0, plain.output.find(']') + 1), "[200006]");
}

TEST(TokenizerCliTest, BadInputIsAClearError) {
  const testing::BinaryResult invalid_utf8 = run("tokenize", std::string("ab\xff", 3));
  EXPECT_NE(invalid_utf8.status, 0);
  EXPECT_NE(invalid_utf8.output.find("UTF-8"), std::string::npos) << invalid_utf8.output;
  const testing::BinaryResult unknown_id = run("detokenize", "[1, 999999]");
  EXPECT_NE(unknown_id.status, 0);
  EXPECT_NE(unknown_id.output.find("999999"), std::string::npos) << unknown_id.output;
  const testing::BinaryResult not_json = run("detokenize", "[1, 2");
  EXPECT_NE(not_json.status, 0);
}

}  // namespace
}  // namespace gossamer::text
