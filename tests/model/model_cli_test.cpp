// The model sub-commands through the real binary: make-dummy determinism, generate, and clear errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "run_binary.h"

namespace gossamer::model {
namespace {

namespace fs = std::filesystem;

using Result = testing::BinaryResult;
Result run(const std::string& arguments) {
  return testing::run_gossamer(arguments);
}

class ModelCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gossamer_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ModelCliTest, MakeDummyIsDeterministicPerSeed) {
  ASSERT_EQ(run("make-dummy --preset tiny --seed 3 --out " + (dir_ / "a").string()).status, 0);
  ASSERT_EQ(run("make-dummy --preset tiny --seed 3 --out " + (dir_ / "b").string()).status, 0);
  ASSERT_EQ(run("make-dummy --preset tiny --seed 4 --out " + (dir_ / "c").string()).status, 0);
  const std::string a = read_text_file((dir_ / "a" / "model.safetensors").string());
  EXPECT_EQ(a, read_text_file((dir_ / "b" / "model.safetensors").string()));
  EXPECT_NE(a, read_text_file((dir_ / "c" / "model.safetensors").string()));
  EXPECT_LT(a.size(), 16u << 20) << "the tiny preset must stay small enough for CI";
}

// bench decode runs with the sliding-window ring (default) and without, writes its JSON, and refuses a
// plot into a missing folder before measuring anything.
TEST_F(ModelCliTest, BenchDecodeWithAndWithoutTheRing) {
  fs::create_directories(dir_);
  for (const std::string flag : {"", " --no-ring"}) {
    const std::string json = (dir_ / ("decode" + std::to_string(flag.size()) + ".json")).string();
    const Result result =
        run("bench decode --load-format dummy --preset tiny --device cpu --batch-sizes 1,2 --contexts 300 "
            "--steps 2 --json-out " +
            json + flag);
    ASSERT_EQ(result.status, 0) << result.output;
    EXPECT_NE(result.output.find("| dummy-tiny (cpu) | 300 | 2 |"), std::string::npos) << result.output;
    const auto parsed = nlohmann::json::parse(read_text_file(json));
    EXPECT_EQ(parsed["results"].size(), 2u);
  }
  const Result refused =
      run("bench decode --load-format dummy --preset tiny --device cpu --plot /nonexistent/dir/x.png");
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.output.find("no directory"), std::string::npos) << refused.output;
}

// --routing-stats traces one more step per point: the table's line, then the spread of the routing (every token's
// top-4 counted once per layer) in the output and the JSON.
TEST_F(ModelCliTest, BenchDecodeReportsTheRoutingSpread) {
  fs::create_directories(dir_);
  const std::string json = (dir_ / "routing.json").string();
  const Result result =
      run("bench decode --load-format dummy --preset tiny --device cpu --batch-sizes 1,3 --contexts 64 --steps 1 "
          "--routing-stats --json-out " +
          json);
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("routing, context 64, batch 3: experts touched per layer"), std::string::npos)
      << result.output;
  const auto parsed = nlohmann::json::parse(read_text_file(json));
  ASSERT_EQ(parsed["results"].size(), 2u);
  for (const auto& point : parsed["results"]) {
    const auto& routing = point["routing"];
    const int batch = point["batch"].get<int>();
    const double touched = routing["experts_touched"].get<double>();
    EXPECT_GE(touched, 4.0) << "every token routes to 4 distinct experts";
    EXPECT_LE(touched, 4.0 * batch);
    EXPECT_GE(routing["busiest_rows"].get<double>(), 1.0);
    EXPECT_LE(routing["busiest_rows"].get<double>(), batch);
  }
  EXPECT_DOUBLE_EQ(parsed["results"][0]["routing"]["experts_touched"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(parsed["results"][0]["routing"]["busiest_rows"].get<double>(), 1.0);
}

// --speculative-tokens times the verification step of speculative decoding beside each point's plain step:
// its line, and the JSON's step time and break-even (verify / plain − 1).
TEST_F(ModelCliTest, BenchDecodeTimesTheSpeculativeVerificationStep) {
  fs::create_directories(dir_);
  const std::string json = (dir_ / "speculative.json").string();
  const Result result =
      run("bench decode --load-format dummy --preset tiny --device cpu --batch-sizes 1,2 --contexts 64 --steps 2 "
          "--speculative-tokens 3 --json-out " +
          json);
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("speculative verification, context 64, batch 2: 4 tokens a sequence"), std::string::npos)
      << result.output;
  const auto parsed = nlohmann::json::parse(read_text_file(json));
  ASSERT_EQ(parsed["results"].size(), 2u);
  for (const auto& point : parsed["results"]) {
    const auto& speculative = point["speculative"];
    EXPECT_EQ(speculative["tokens_per_sequence"].get<int>(), 4);
    EXPECT_GT(speculative["step_ms"].get<double>(), 0.0);
    EXPECT_NEAR(speculative["break_even_accepted"].get<double>(),
                speculative["step_ms"].get<double>() / point["step_ms"].get<double>() - 1.0, 1e-9);
  }
  EXPECT_NE(run("bench decode --load-format dummy --preset tiny --device cpu --speculative-tokens 17").status, 0);
}

TEST_F(ModelCliTest, GenerateIsGreedyAndRepeatable) {
  ASSERT_EQ(run("make-dummy --preset tiny --out " + (dir_ / "m").string()).status, 0);
  const Result first = run("generate --model " + (dir_ / "m").string() + " --prompt-tokens 5,6,7 --max-tokens 8");
  const Result second = run("generate --model " + (dir_ / "m").string() + " --prompt-tokens 5,6,7 --max-tokens 8");
  ASSERT_EQ(first.status, 0) << first.output;
  const auto parsed = nlohmann::json::parse(first.output.substr(first.output.find('{')));
  EXPECT_EQ(parsed["generated_tokens"].size(), 8u);
  EXPECT_EQ(parsed["generated_tokens"],
            nlohmann::json::parse(second.output.substr(second.output.find('{')))["generated_tokens"]);
}

TEST_F(ModelCliTest, BadInputGivesAClearErrorAndNonZeroExit) {
  ASSERT_EQ(run("make-dummy --preset tiny --out " + (dir_ / "m").string()).status, 0);
  Result result = run("generate --model " + (dir_ / "m").string() + " --prompt-tokens 5,99999 --max-tokens 2");
  EXPECT_NE(result.status, 0);
  EXPECT_NE(result.output.find("outside the vocabulary"), std::string::npos) << result.output;
  result = run("generate --model " + (dir_ / "m").string() + " --prompt-tokens 5,x --max-tokens 2");
  EXPECT_NE(result.status, 0);
  EXPECT_NE(result.output.find("bad token id"), std::string::npos) << result.output;
  std::FILE* bad = std::fopen((dir_ / "bad.json").c_str(), "w");
  std::fputs("[[1, 2], [3]]", bad);
  std::fclose(bad);
  result = run("logits --model " + (dir_ / "m").string() + " --input " + (dir_ / "bad.json").string() + " --output " +
               (dir_ / "o.npy").string());
  EXPECT_NE(result.status, 0);
  EXPECT_NE(result.output.find("same length"), std::string::npos) << result.output;
  result = run("make-dummy --preset huge --out " + (dir_ / "x").string());
  EXPECT_NE(result.status, 0);
  result = run("generate --model " + (dir_ / "m").string() + " --prompt-tokens 1 --max-tokens 1 --weights mxfp4+fp8");
  EXPECT_NE(result.status, 0);
  EXPECT_NE(result.output.find("--weights"), std::string::npos) << result.output;
  result = run("generate --model " + (dir_ / "missing").string() + " --prompt-tokens 1 --max-tokens 1");
  EXPECT_NE(result.status, 0);
  EXPECT_NE(result.output.find("not a directory"), std::string::npos) << result.output;
}

// --kv-cache-dtype fp8 end to end on the cpu backend: bench decode and generate take it (the load line names
// the KV dtype); fp8_e5m2 and the sharded cpu backend refuse it clearly.
TEST_F(ModelCliTest, KvCacheDtypeFp8OnTheCpuBackend) {
  const Result bench =
      run("bench decode --load-format dummy --preset tiny --device cpu --batch-sizes 2 --contexts 200 --steps 2 "
          "--kv-cache-dtype fp8");
  ASSERT_EQ(bench.status, 0) << bench.output;
  EXPECT_NE(bench.output.find("fp8_e4m3"), std::string::npos) << bench.output;
  ASSERT_EQ(run("make-dummy --preset tiny --seed 5 --out " + (dir_ / "m").string()).status, 0);
  const std::string generate = "generate --model " + (dir_ / "m").string() + " --prompt-tokens 1,2,3 --max-tokens 4";
  const Result fp8 = run(generate + " --kv-cache-dtype fp8_e4m3");
  ASSERT_EQ(fp8.status, 0) << fp8.output;
  const Result e5m2 = run(generate + " --kv-cache-dtype fp8_e5m2");
  EXPECT_NE(e5m2.status, 0);
  EXPECT_NE(e5m2.output.find("fp8_e4m3"), std::string::npos) << e5m2.output;
  const Result sharded = run(generate + " --kv-cache-dtype fp8 -tp 2");
  EXPECT_NE(sharded.status, 0);
  EXPECT_NE(sharded.output.find("one rank"), std::string::npos) << sharded.output;
}

}  // namespace
}  // namespace gossamer::model
