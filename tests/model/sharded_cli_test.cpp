// The parallelism flags through the real binary: `logits` and `generate` with -tp / --enable-expert-parallel
// on the cpu backend's simulated ranks give the unsharded results, the load summary states the layout,
// and bad layouts are refused with a clear message.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/npy.h"
#include "golden_test.h"
#include "run_binary.h"

namespace gossamer::model {
namespace {

namespace fs = std::filesystem;

class ShardedCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gossamer_sharded_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "tokens.json")
        << "[[1, 5, 9, 200, 7, 7, 3, 1499, 12, 40, 41, 42, 0, 8, 99, 100, 101, 102, 103, 9]]";
  }
  void TearDown() override { fs::remove_all(dir_); }
  gossamer::testing::BinaryResult logits(const std::string& out, const std::string& flags) {
    return gossamer::testing::run_gossamer("logits --model " + model_ + " --input " + (dir_ / "tokens.json").string() +
                                           " --output " + (dir_ / out).string() + " " + flags);
  }
  fs::path dir_;
  std::string model_ = testing::golden_dir() + "/checkpoints/hf_sharded";
};

TEST_F(ShardedCliTest, LogitsWithTensorAndExpertParallelEqualUnsharded) {
  ASSERT_EQ(logits("ref.npy", "").status, 0);
  const NpyArray ref = read_npy_f32((dir_ / "ref.npy").string());
  for (const std::string flags : {"-tp 2", "--tensor-parallel-size 8", "-tp=2 --enable-expert-parallel"}) {
    const auto result = logits("ours.npy", "--device cpu " + flags);
    ASSERT_EQ(result.status, 0) << result.output;
    const std::string layout = flags == "-tp 2" ? "TP2 EP1 DP1" : flags[2] == 't' ? "TP8 EP1 DP1" : "TP2 EP2 DP1";
    EXPECT_NE(result.output.find(layout + " on cpu"), std::string::npos) << result.output;
    const NpyArray ours = read_npy_f32((dir_ / "ours.npy").string());
    ASSERT_EQ(ours.shape, ref.shape);
    double diff = 0.0, norm = 0.0;
    for (size_t i = 0; i < ref.data.size(); ++i) {
      diff += (double{ours.data[i]} - ref.data[i]) * (double{ours.data[i]} - ref.data[i]);
      norm += double{ref.data[i]} * ref.data[i];
    }
    EXPECT_LE(std::sqrt(diff / norm), 1e-5) << flags;
  }
}

TEST_F(ShardedCliTest, GenerateWithTensorParallelMatchesUnsharded) {
  const std::string base = "generate --model " + model_ + " --prompt-tokens 3,1,4,1,5 --max-tokens 12";
  const auto ref = gossamer::testing::run_gossamer(base);
  ASSERT_EQ(ref.status, 0) << ref.output;
  auto generated = [](const std::string& output) {
    return nlohmann::json::parse(
        output.substr(output.find('{'), output.find('\n', output.find('{')) - output.find('{')))["generated_tokens"];
  };
  for (const std::string flags : {" -tp 8", " -tp 2 --enable-expert-parallel"}) {
    const auto ours = gossamer::testing::run_gossamer(base + flags);
    ASSERT_EQ(ours.status, 0) << ours.output;
    EXPECT_EQ(generated(ours.output), generated(ref.output)) << flags;
  }
}

TEST_F(ShardedCliTest, BadLayoutsAreRefusedClearly) {
  const auto heads = logits("x.npy", "-tp 3");
  EXPECT_NE(heads.status, 0);
  EXPECT_NE(heads.output.find("--tensor-parallel-size 3 does not divide the model's 16 attention heads"),
            std::string::npos)
      << heads.output;
  const auto experts = logits("x.npy", "-tp 4 --enable-expert-parallel");
  EXPECT_NE(experts.output.find("does not divide the model's 6 experts"), std::string::npos) << experts.output;
  const auto gpus = logits("x.npy", "--device cuda -tp 2 -dp 8");
  EXPECT_NE(gpus.status, 0);
  EXPECT_NE(gpus.output.find("needs 16 GPUs"), std::string::npos) << gpus.output;
  const auto replicas = logits("x.npy", "-dp 2");
  EXPECT_NE(replicas.output.find("--data-parallel-size 2: this command runs one replica"), std::string::npos)
      << replicas.output;
}

// bench sweep on simulated ranks: every layout that fits 2 ranks, the reference tables, DP rows derived
// from one replica, and one CSV row per point.
TEST_F(ShardedCliTest, BenchSweepCoversEveryLayoutThatFits) {
  const std::string csv = (dir_ / "sweep.csv").string();
  const auto result = gossamer::testing::run_gossamer(
      "bench sweep --load-format dummy --preset tiny --device cpu --gpus 2 --batch-sizes 1,2 --contexts 150 "
      "--prefill-lens 64 --steps 2 --csv " +
      csv + " --series-json " + (dir_ / "series.json").string());
  ASSERT_EQ(result.status, 0) << result.output;
  for (const std::string row : {"| TP1 EP1 DP1 | 1 | 64 |", "| TP2 EP1 DP1 | 2 | 64 |", "| TP2 EP2 DP1 | 2 | 64 |",
                                "| TP1 EP1 DP2 | 2 | 150 | 2 |", "| TP2 EP2 DP1 | 2 | 150 | 1 |"}) {
    EXPECT_NE(result.output.find(row), std::string::npos) << row << "\n" << result.output;
  }
  EXPECT_NE(result.output.find("replica×2"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("Cheapest decode layout per context and batch"), std::string::npos);
  std::ifstream in(csv);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) ++lines;
  EXPECT_EQ(lines, 1 + 3 + (4 + 2 + 2)) << "header + 3 prefill rows + 8 decode rows";
  const auto charts = nlohmann::json::parse(std::ifstream(dir_ / "series.json"));
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(charts[0]["context"], 150);
  EXPECT_EQ(charts[0]["series"].size(), 4u) << "TP1 DP1, TP1 DP2, TP2 EP1, TP2 EP2";
  EXPECT_EQ(charts[0]["series"][0]["batch"], nlohmann::json::array({1, 2}));
  // One group's job (how a cuda group of TP > 1 runs as its own processes): its rows as JSON.
  const std::string group = (dir_ / "group.json").string();
  const auto job = gossamer::testing::run_gossamer(
      "bench sweep --load-format dummy --preset tiny --device cpu --gpus 2 --batch-sizes 1,2 --contexts 150 "
      "--prefill-lens 64 --steps 2 --only-tp 2 --only-ep --group-json " +
      group);
  ASSERT_EQ(job.status, 0) << job.output;
  const auto job_rows = nlohmann::json::parse(std::ifstream(group));
  ASSERT_EQ(job_rows.size(), 3u) << "1 prefill + 2 decode rows of TP2 EP2";
  for (const auto& row : job_rows) {
    EXPECT_EQ(row["tp"], 2);
    EXPECT_EQ(row["ep"], true);
    EXPECT_GT(row["seconds"].get<double>(), 0.0);
  }
  const auto refused =
      gossamer::testing::run_gossamer("bench sweep --load-format dummy --preset tiny --device cuda --gpus 64");
  EXPECT_NE(refused.status, 0);
  EXPECT_TRUE(refused.output.find("--gpus 64 but") != std::string::npos ||
              refused.output.find("no GPU visible") != std::string::npos)
      << refused.output;
}

// bench sweep --plot: the prefill chart and one decode chart per context, as SVG, one line per layout (each
// line has its own colour: bench/chart.h's chart_series_color 0, 1, …); a plot into a missing folder is
// refused before any layout is measured.
TEST_F(ShardedCliTest, BenchSweepPlotsOneLinePerLayout) {
  const std::string sweep =
      "bench sweep --load-format dummy --preset tiny --device cpu --gpus 2 --batch-sizes 1,2 --contexts 150 "
      "--prefill-lens 32,64 --steps 2 --plot ";
  const auto result = gossamer::testing::run_gossamer(sweep + (dir_ / "sweep.svg").string());
  ASSERT_EQ(result.status, 0) << result.output;
  // chart_series_color(i) as cairo writes it in SVG.
  const std::vector<std::string> colours = {"rgb(12%,47%,71%)", "rgb(84%,15%,16%)", "rgb(17%,63%,17%)",
                                            "rgb(100%,50%,5%)", "rgb(58%,40%,74%)"};
  const auto lines_in = [&](const std::string& file) {
    std::ifstream in(dir_ / file);
    const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(svg.find("<svg"), std::string::npos) << file;
    size_t lines = 0;
    while (lines < colours.size() && svg.find(colours[lines]) != std::string::npos) ++lines;
    return lines;
  };
  EXPECT_EQ(lines_in("sweep_prefill.svg"), 3u) << "TP1, TP2 EP1, TP2 EP2 (prefill runs at DP1)";
  EXPECT_EQ(lines_in("sweep_decode_ctx150.svg"), 4u) << "TP1 DP1, TP1 DP2, TP2 EP1, TP2 EP2";
  for (const std::string path : {"sweep_prefill.svg", "sweep_decode_ctx150.svg"})
    EXPECT_NE(result.output.find("plot: " + (dir_ / path).string()), std::string::npos) << result.output;

  const auto refused = gossamer::testing::run_gossamer(sweep + "/nonexistent/dir/sweep.svg");
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.output.find("--plot /nonexistent/dir/sweep.svg: no directory"), std::string::npos)
      << refused.output;
  EXPECT_EQ(refused.output.find("loaded"), std::string::npos) << "refused after measuring:\n" << refused.output;
}

}  // namespace
}  // namespace gossamer::model
