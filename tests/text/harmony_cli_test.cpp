// `gossamer harmony render|parse` through the built binary: JSON out, errors on stderr with a non-zero exit.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "harmony_test_util.h"

namespace gossamer::text::harmony {
namespace {

using namespace test_support;
using Json = nlohmann::ordered_json;

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class HarmonyCli : public ::testing::Test {
 protected:
  void SetUp() override {
    GOSSAMER_REQUIRE_REAL_TOKENIZER(real_tokenizer());
    dir_ = std::filesystem::temp_directory_path() /
           ("gossamer_harmony_cli_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }

  std::string write(const std::string& name, const std::string& text) {
    const auto path = dir_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }

  RunResult run(const std::string& args) {
    const std::string out = (dir_ / "stdout").string(), err = (dir_ / "stderr").string();
    const std::string command = std::string(GOSSAMER_BINARY) + " harmony " + args + " > " + out + " 2> " + err;
    const int status = std::system(command.c_str());
    return RunResult{WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(out), read_file(err)};
  }

  std::filesystem::path dir_;
};

TEST_F(HarmonyCli, RenderMatchesVectorAndParsesBack) {
  const std::string conversation = write("conversation.json", R"({"messages": [
      {"role": "system", "content": [{"type": "system_content", "conversation_start_date": "2025-06-28"}]}]})");
  RunResult result = run("render --input " + conversation);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const Json rendered = Json::parse(result.out);
  EXPECT_EQ(rendered.at("text").get<std::string>(), read_vector("test_no_tools.txt"));
  const Json expected = Json::parse(read_file(vector_path("expected_token_ids.json")));
  EXPECT_EQ(rendered.at("tokens"), expected.at("vectors").at("test_no_tools.txt"));

  const std::string chat = write("chat.json", R"({"messages": [
      {"role": "user", "content": "What is the weather in SF?"},
      {"role": "assistant", "channel": "analysis", "content": "Need the tool."},
      {"role": "assistant", "recipient": "functions.lookup_weather", "channel": "commentary",
       "content_type": "<|constrain|>json", "content": "{\"location\": \"San Francisco\"}"},
      {"role": "tool", "name": "functions.lookup_weather", "recipient": "assistant", "channel": "commentary",
       "content": [{"type": "text", "text": "{\"temperature\": 20}"}]},
      {"role": "assistant", "channel": "final", "content": "It is 20 degrees."}]})");
  result = run("render --mode conversation --keep-analysis --input " + chat);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string tokens = write("tokens.json", result.out);  // parse reads the {"tokens": [...]} object
  result = run("parse --input " + tokens);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const Json parsed = Json::parse(result.out);
  Json original = Json::parse(read_file(chat));
  for (Json& message : original["messages"]) {
    if (message["content"].is_string())
      message["content"] = Json::array({{{"type", "text"}, {"text", message["content"]}}});
  }
  EXPECT_EQ(parsed.at("messages"), original.at("messages"));

  // Training mode ends a final answer with <|return|>; completion mode for another role.
  result = run("render --mode training --input " + chat);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(Json::parse(result.out).at("tokens").back(), 200002);
  result = run("render --next-role user --input " + chat);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(Json::parse(result.out).at("text").get<std::string>().ends_with("<|start|>user"));
}

TEST_F(HarmonyCli, ParseWithRoleHintAndLenient) {
  const std::string ids = write("ids.json", "[200005, 35644, 200008, 1844, 31064, 13, 200007]");
  RunResult result = run("parse --role assistant --input " + ids);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const Json messages = Json::parse(result.out).at("messages");
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].at("role"), "assistant");
  EXPECT_EQ(messages[0].at("channel"), "analysis");

  // "<|channel|>commentary Hello<|end|>": missing <|message|>.
  const auto tokenizer = real_tokenizer();
  const Json broken = tokenizer->encode("<|channel|>commentary Hello<|end|>", {}, true);
  const std::string broken_path = write("broken.json", broken.dump());
  result = run("parse --role assistant --input " + broken_path);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("Unexpected EOS while waiting for message header"), std::string::npos) << result.err;
  EXPECT_TRUE(result.out.empty());
  result = run("parse --role assistant --lenient --input " + broken_path);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(Json::parse(result.out).at("messages")[0].at("content")[0].at("text"), "Hello");
}

TEST_F(HarmonyCli, BadInputFailsCleanly) {
  RunResult result = run("render --input " + (dir_ / "missing.json").string());
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("cannot open"), std::string::npos) << result.err;
  result = run("render --input " + write("bad.json", "{\"messages\": [{\"role\": \"robot\", \"content\": \"x\"}]}"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("messages[0].role"), std::string::npos) << result.err;
  result = run("render --input " + write("syntax.json", "{not json"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("invalid JSON"), std::string::npos) << result.err;
  result = run("parse --input " + write("neg.json", "[-1]"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("non-negative"), std::string::npos) << result.err;
  result = run("parse --input " + write("text.json", "[1428]"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("expecting start token"), std::string::npos) << result.err;
  result = run("render --mode bogus --input x");
  EXPECT_NE(result.exit_code, 0);
}

}  // namespace
}  // namespace gossamer::text::harmony
