// `gossamer bench step` through the real binary on the cpu backend (the dummy tiny model): the table has
// a row per phase and figure and a column per batch size, the JSON holds the same numbers, the phases fit
// inside the timed step, and an over-budget batch size is reported as skipped.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "run_binary.h"

namespace gossamer::model {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> table_lines(const std::string& output) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| ", 0) == 0 || line.rfind("|---", 0) == 0) lines.push_back(line);
  }
  return lines;
}

TEST(BenchStepCli, BreakdownTableOnTheCpuBackend) {
  const fs::path dir = fs::temp_directory_path() / ("gossamer_step_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string json = (dir / "step.json").string();
  const auto result = testing::run_gossamer(
      "bench step --load-format dummy --preset tiny --device cpu --batch-sizes 1,3 "
      "--context 40 --steps 2 --engine-prompt-len 8 --json-out " +
      json);
  ASSERT_EQ(result.status, 0) << result.output;
  const auto lines = table_lines(result.output);
  // header, separator, 13 phases, 4 device/step rows, 8 engine rows, tok/s
  ASSERT_EQ(lines.size(), 2u + 13u + 4u + 8u + 1u) << result.output;
  EXPECT_EQ(lines[0], "| figure | B=1 | B=3 |");
  for (const std::string& line : lines) EXPECT_EQ(std::count(line.begin(), line.end(), '|'), 4) << line;
  for (const char* label : {"| phase: attention |", "| phase: experts |", "| phase: unembedding |", "| host gap",
                            "| step, product path (wall) |", "| engine: between steps (schedule, callbacks) |",
                            "| engine: step period, overlapped (the product) |"}) {
    EXPECT_NE(result.output.find(label), std::string::npos) << label << "\n" << result.output;
  }
  // The cpu backend samples on the host: no device sampling, no copy to host.
  EXPECT_NE(result.output.find("| phase: sampling | - | - |"), std::string::npos) << result.output;

  const auto parsed = nlohmann::json::parse(read_text_file(json));
  ASSERT_EQ(parsed["results"].size(), 2u);
  for (const auto& point : parsed["results"]) {
    ASSERT_FALSE(point.contains("skipped")) << point.dump();
    double sum = 0.0;
    for (const auto& [name, phase] : point["phases"].items()) sum += phase["us"].get<double>();
    EXPECT_EQ(point["phases"]["attention"]["count"], 4) << "tiny has 4 layers: one attention phase each";
    EXPECT_GT(point["phases"]["experts"]["us"].get<double>(), 0.0);
    EXPECT_NEAR(sum, point["device_span_us"].get<double>(), 1.0 + 1e-3 * sum);
    EXPECT_LE(point["device_span_us"].get<double>(), point["eager_step_us"].get<double>());
    EXPECT_GT(point["product_step_us"].get<double>(), 0.0);
    const auto& engine = point["engine"];
    EXPECT_EQ(engine["timed_steps"], 2);
    for (const char* key :
         {"before_forward_us", "forward_us", "after_forward_us", "between_steps_us", "step_us", "period_us"}) {
      EXPECT_GT(engine[key].get<double>(), 0.0) << key;
    }
    EXPECT_GT(point["engine_overlapped"]["period_us"].get<double>(), 0.0);
    EXPECT_LE(engine["forward_us"].get<double>(), engine["step_us"].get<double>());
  }

  const auto skipped = testing::run_gossamer(
      "bench step --load-format dummy --preset tiny --device cpu --batch-sizes 2 "
      "--context 40 --steps 1 --no-engine --kv-budget-gib 0");
  ASSERT_EQ(skipped.status, 0) << skipped.output;
  EXPECT_NE(skipped.output.find("| phase: embedding | skipped |"), std::string::npos) << skipped.output;
  EXPECT_NE(skipped.output.find("B=2 skipped: KV cache"), std::string::npos) << skipped.output;
  fs::remove_all(dir);
}

// `bench prefill --phases`: after the latency table, one phase-timed run per length; the table has a column
// per length, and the JSON's phases sum to about the device span.
TEST(BenchStepCli, PrefillPhasesOnTheCpuBackend) {
  const fs::path dir = fs::temp_directory_path() / ("gossamer_prefill_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string json = (dir / "prefill.json").string();
  const auto result = testing::run_gossamer(
      "bench prefill --load-format dummy --preset tiny --device cpu --input-lens 32,64 --repeats 1 --phases "
      "--json-out " +
      json);
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("| phase | 32 tokens | 64 tokens |"), std::string::npos) << result.output;
  for (const char* label : {"| attention |", "| experts |", "| unembedding |", "| device span |"}) {
    EXPECT_NE(result.output.find(label), std::string::npos) << label << "\n" << result.output;
  }
  EXPECT_EQ(result.output.find("| sampling |"), std::string::npos) << "a logits prefill samples nothing";
  const auto parsed = nlohmann::json::parse(read_text_file(json));
  ASSERT_EQ(parsed["results"].size(), 2u);
  for (const auto& point : parsed["results"]) {
    EXPECT_EQ(point["phases"]["experts"]["count"], 4) << "tiny has 4 layers";
    EXPECT_GT(point["phases"]["attention"]["us"].get<double>(), 0.0);
  }
  fs::remove_all(dir);
}

TEST(BenchStepCli, ResponseFormatNeedsTheFullVocabulary) {
  // The structured-output constraint forces Harmony's special tokens: the tiny model's vocabulary has none.
  const auto result = testing::run_gossamer(
      "bench step --load-format dummy --preset tiny --device cpu --batch-sizes 1 --context 8 --steps 1 "
      "--response-format json_object");
  EXPECT_NE(result.status, 0);
  EXPECT_NE(result.output.find("--response-format needs the o200k_harmony vocabulary"), std::string::npos)
      << result.output;
}

}  // namespace
}  // namespace gossamer::model
