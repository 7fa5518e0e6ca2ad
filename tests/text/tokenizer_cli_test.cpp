// `gossamer tokenize` / `gossamer detokenize` through the real binary.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace gossamer::text {
namespace {

struct Result {
  int status = 0;
  std::string output;
};

Result run(const std::string& arguments, const std::string& stdin_bytes) {
  const auto input = std::filesystem::temp_directory_path() / ("gossamer_tok_cli." + std::to_string(::getpid()));
  std::ofstream(input, std::ios::binary) << stdin_bytes;
  const std::string command = std::string(GOSSAMER_BINARY) + " " + arguments + " < " + input.string() + " 2>&1";
  Result result;
  FILE* pipe = ::popen(command.c_str(), "r");
  std::array<char, 4096> buffer{};
  size_t read = 0;
  while ((read = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), read);
  result.status = ::pclose(pipe);
  std::filesystem::remove(input);
  return result;
}

TEST(TokenizerCliTest, TokenizeAndDetokenizeRoundTrip) {
  const Result ids = run("tokenize", "hello world");
  ASSERT_EQ(ids.status, 0) << ids.output;
  EXPECT_EQ(ids.output.substr(0, ids.output.find(']') + 1), "[24912,2375]");
  const Result text = run("detokenize", "[24912,2375]");
  ASSERT_EQ(text.status, 0) << text.output;
  EXPECT_EQ(text.output, "hello world");
}

TEST(TokenizerCliTest, SpecialsOnlyWhenAllowed) {
  const Result plain = run("tokenize", "<|start|>");
  const Result special = run("tokenize --allow-special", "<|start|>");
  ASSERT_EQ(special.status, 0) << special.output;
  EXPECT_EQ(special.output.substr(0, special.output.find(']') + 1), "[200006]");
  EXPECT_NE(plain.output.substr(0, plain.output.find(']') + 1), "[200006]");
}

TEST(TokenizerCliTest, BadInputIsAClearError) {
  const Result invalid_utf8 = run("tokenize", std::string("ab\xff", 3));
  EXPECT_NE(invalid_utf8.status, 0);
  EXPECT_NE(invalid_utf8.output.find("UTF-8"), std::string::npos) << invalid_utf8.output;
  const Result unknown_id = run("detokenize", "[1, 999999]");
  EXPECT_NE(unknown_id.status, 0);
  EXPECT_NE(unknown_id.output.find("999999"), std::string::npos) << unknown_id.output;
  const Result not_json = run("detokenize", "[1, 2");
  EXPECT_NE(not_json.status, 0);
}

}  // namespace
}  // namespace gossamer::text
