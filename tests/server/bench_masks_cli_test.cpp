// `gossamer bench masks` through the real binary: every request's tokens are drawn from its own Harmony
// constraint's masks, the step count follows from the requests and their length, every row lands in one
// kind of mask, and the JSON holds the same figures as the table.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "core/mapped_file.h"
#include "run_binary.h"

namespace gossamer::server {
namespace {

namespace fs = std::filesystem;

TEST(BenchMasksCli, StepsRowsAndJson) {
  const fs::path dir = fs::temp_directory_path() / ("gossamer_masks_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string json = (dir / "masks.json").string();
  // 6 requests of 40 tokens, 3 at a time: two waves of 40 steps.
  const auto result = testing::run_gossamer(
      "bench masks --num-prompts 6 --max-concurrency 3 --output-len 40 --formats json_object,tool:3,schema:7 "
      "--tokens adversarial --model-threads 1,16 --schemas " GOSSAMER_SOURCE_DIR
      "/tests/data/tool_schemas.json "
      "--json-out " +
      json);
  ASSERT_EQ(result.status, 0) << result.output;
  for (const char* label :
       {"| fill, wall here (", "| fill, CPU summed over the rows |", "| critical path at 1 threads (no wake-up) |",
        "| critical path at 16 threads", "| narrow (JSON structure) |", "| free (no mask) |"}) {
    EXPECT_NE(result.output.find(label), std::string::npos) << label << "\n" << result.output;
  }
  const auto parsed = nlohmann::json::parse(read_text_file(json));
  EXPECT_EQ(parsed["steps"], 80);
  size_t rows = 0;
  for (const auto& [kind, stats] : parsed["rows"].items()) rows += stats["count"].get<size_t>();
  EXPECT_EQ(rows, 6u * 40u);
  EXPECT_EQ(parsed["wall"]["count"], 80);
  // One thread runs every row of a step in turn: its critical path is the CPU sum.
  EXPECT_DOUBLE_EQ(parsed["critical_path"]["1"]["mean_us"].get<double>(), parsed["cpu"]["mean_us"].get<double>());
  EXPECT_LE(parsed["critical_path"]["16"]["max_us"].get<double>(), parsed["cpu"]["max_us"].get<double>());
  fs::remove_all(dir);
}

TEST(BenchMasksCli, UnknownFormatIsAClearError) {
  const auto result = testing::run_gossamer("bench masks --num-prompts 1 --formats yaml");
  EXPECT_NE(result.status, 0);
  EXPECT_NE(result.output.find("unknown format yaml"), std::string::npos) << result.output;
}

}  // namespace
}  // namespace gossamer::server
