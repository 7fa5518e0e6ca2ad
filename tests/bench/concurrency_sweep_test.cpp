// The concurrency sweep of `gossamer bench serve` (bench/concurrency_sweep.h): the figures of a row from a
// load-generator result, the table, JSON and chart, bad options, and the whole command against the
// embedded server (`gossamer serve` with its default tiny model) at concurrency 1 and 2, with the
// server's /metrics deltas.
#include "bench/concurrency_sweep.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "run_binary.h"
#include "server/server_process.h"

namespace gossamer::server {
namespace {

namespace fs = std::filesystem;

nlohmann::ordered_json fake_result(double output_throughput, double mean_tpot_ms) {
  return {{"num_prompts", 8},
          {"completed", 8},
          {"failed", 0},
          {"output_throughput", output_throughput},
          {"mean_ttft_ms", 120.0},
          {"p99_ttft_ms", 300.0},
          {"mean_tpot_ms", mean_tpot_ms},
          {"p99_tpot_ms", 2 * mean_tpot_ms}};
}

TEST(ConcurrencySweep, RowFiguresFollowTheCostModel) {
  ConcurrencySweepOptions options;
  options.dollars_per_gpu_hour = 3.0;
  options.num_gpus = 2;
  const SweepRow row = sweep_row(64, fake_result(1000.0, 25.0), options);
  EXPECT_EQ(row.concurrency, 64);
  EXPECT_EQ(row.completed, 8);
  EXPECT_DOUBLE_EQ(row.tokens_per_s_per_user, 40.0);                                   // 1000 / 25 ms
  EXPECT_NEAR(row.dollars_per_million_output, 3.0 * 2 / 3600.0 / 1000.0 * 1e6, 1e-9);  // $1.6667
  EXPECT_DOUBLE_EQ(row.p99_tpot_ms, 50.0);
  const SweepRow idle = sweep_row(1, fake_result(0.0, 0.0), options);
  EXPECT_TRUE(std::isinf(idle.dollars_per_million_output));
  EXPECT_EQ(idle.tokens_per_s_per_user, 0.0);
  EXPECT_THROW(sweep_row(1, {{"num_prompts", 1}}, options), Error);  // a result without the figures
}

TEST(ConcurrencySweep, TableJsonAndChart) {
  ConcurrencySweepOptions options;
  const std::vector<SweepRow> rows = {sweep_row(1, fake_result(100.0, 10.0), options),
                                      sweep_row(4, fake_result(350.0, 11.0), options),
                                      sweep_row(16, fake_result(0.0, 0.0), options)};
  const std::string table = format_sweep_table(rows, options);
  std::istringstream lines(table);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    ++count;
    EXPECT_EQ(std::count(line.begin(), line.end(), '|'), 11) << line;  // 10 columns
  }
  EXPECT_EQ(count, 2 + 3);
  EXPECT_NE(table.find("| 4 | 8 | 0 | 350.0 | 90.9 |"), std::string::npos) << table;
  const nlohmann::json json = sweep_json(rows, options);
  ASSERT_EQ(json["points"].size(), 3u);
  EXPECT_EQ(json["points"][1]["max_concurrency"], 4);
  EXPECT_TRUE(json["points"][2]["dollars_per_million_output_tokens"].is_null());
  EXPECT_EQ(json["label"], "this run");
  // An earlier run's JSON comes back as a chart line of its own, after this run's.
  nlohmann::json earlier_json = json;
  earlier_json["label"] = "max-num-batched-tokens 8192";
  const bench::ChartSeries earlier = sweep_series_from_json(earlier_json);
  EXPECT_EQ(earlier.name, "max-num-batched-tokens 8192");
  ASSERT_EQ(earlier.x.size(), 3u);
  EXPECT_DOUBLE_EQ(earlier.x[1], rows[1].tokens_per_s_per_user);
  EXPECT_DOUBLE_EQ(earlier.y[1], rows[1].dollars_per_million_output);
  EXPECT_TRUE(std::isnan(earlier.y[2])) << "no cost (no throughput): not drawn";
  EXPECT_THROW(sweep_series_from_json(nlohmann::json{{"rows", 1}}), Error);
  EXPECT_THROW(sweep_series_from_json(nlohmann::json{{"points", {{{"max_concurrency", 1}}}}}), Error);
  const bench::ChartSpec compared = sweep_chart(rows, options, "t", {earlier});
  ASSERT_EQ(compared.series.size(), 2u);
  EXPECT_EQ(compared.series[1].name, earlier.name);
  const bench::ChartSpec chart = sweep_chart(rows, options, "t");
  ASSERT_EQ(chart.series.size(), 1u);
  EXPECT_EQ(chart.series[0].labels, (std::vector<std::string>{"1", "4", "16"}));
  EXPECT_TRUE(chart.log_y);
  const std::string png = (fs::temp_directory_path() / ("sweep_chart_" + std::to_string(::getpid()) + ".png")).string();
  bench::write_chart(chart, png);
  EXPECT_GT(fs::file_size(png), 1000u);
  fs::remove(png);
}

TEST(ConcurrencySweep, RefusesBadOptionsBeforeSendingAnything) {
  const auto tokenizer = text::Tokenizer::load_default();
  BenchServeOptions base;
  base.port = 1;  // nothing listens: a request would fail, the checks come first
  ConcurrencySweepOptions options;
  EXPECT_THROW(run_concurrency_sweep(base, options, *tokenizer), Error);
  options.concurrencies = {1, 0};
  EXPECT_THROW(run_concurrency_sweep(base, options, *tokenizer), Error);
  options.concurrencies = {1};
  options.num_gpus = 0;
  EXPECT_THROW(run_concurrency_sweep(base, options, *tokenizer), Error);
}

TEST(ConcurrencySweep, CommandAgainstTheEmbeddedServer) {
  testing::ServerProcess server({"--max-model-len", "2048"});
  const fs::path dir = fs::temp_directory_path() / ("gossamer_sweep_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string json = (dir / "sweep.json").string(), plot = (dir / "sweep.svg").string();
  const auto result = gossamer::testing::run_gossamer(
      "bench serve --port " + std::to_string(server.port()) +
      " --concurrency-sweep 1,2 --num-prompts 2 --prompts-per-concurrency 2 --random-input-len 16 --random-output-len 4"
      " --ignore-eos --dollars-per-gpu-hour 2.5 --num-gpus 1 --sweep-json " +
      json + " --sweep-plot " + plot);
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("| max concurrency | prompts | failed | output tok/s |"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("(1 GPU × $2.50/h)"), std::string::npos) << result.output;
  std::ifstream in(json);
  const nlohmann::json parsed = nlohmann::json::parse(in);
  ASSERT_EQ(parsed["points"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const nlohmann::json& point = parsed["points"][i];
    EXPECT_EQ(point["max_concurrency"], i + 1);
    EXPECT_EQ(point["num_prompts"], 2 * (i + 1));  // max(--num-prompts 2, 2 × concurrency)
    EXPECT_EQ(point["completed"], 2 * (i + 1));
    EXPECT_EQ(point["failed"], 0);
    EXPECT_GT(point["output_throughput"].get<double>(), 0.0);
    EXPECT_GT(point["tokens_per_s_per_user"].get<double>(), 0.0);
    EXPECT_GT(point["dollars_per_million_output_tokens"].get<double>(), 0.0);
    // The server's engine counters over the point: its steps ran every generated token.
    ASSERT_TRUE(point.contains("server")) << point.dump();
    EXPECT_GT(point["server"]["engine_steps"].get<double>(), 0.0);
    EXPECT_GT(point["server"]["generated_per_step"].get<double>(), 0.0);
    EXPECT_LE(point["server"]["generated_per_step"].get<double>(), i + 1.0) << "at most one token per running request";
    EXPECT_NEAR(point["server"]["engine_steps"].get<double>() * point["server"]["generated_per_step"].get<double>(),
                4.0 * point["completed"].get<double>(), 1e-6)
        << "the server generated exactly the requests' tokens during the point";
    EXPECT_EQ(point["server"]["preemptions"], 0.0);
  }
  EXPECT_NE(result.output.find("| max concurrency | engine steps | tokens per step |"), std::string::npos)
      << result.output;
  std::ifstream svg(plot);
  std::stringstream text;
  text << svg.rdbuf();
  EXPECT_NE(text.str().find("<svg"), std::string::npos);
  // Without --num-prompts, --prompts-per-concurrency alone sets each point's count (no floor of the default 100).
  const std::string scaled = (dir / "scaled.json").string();
  const auto per_concurrency = gossamer::testing::run_gossamer(
      "bench serve --port " + std::to_string(server.port()) +
      " --concurrency-sweep 1,3 --prompts-per-concurrency 1 --random-input-len 16 --random-output-len 4"
      " --ignore-eos --sweep-json " +
      scaled);
  ASSERT_EQ(per_concurrency.status, 0) << per_concurrency.output;
  std::ifstream scaled_in(scaled);
  const nlohmann::json scaled_points = nlohmann::json::parse(scaled_in)["points"];
  ASSERT_EQ(scaled_points.size(), 2u);
  EXPECT_EQ(scaled_points[0]["num_prompts"], 1);
  EXPECT_EQ(scaled_points[1]["num_prompts"], 3);
  // --max-concurrency and --concurrency-sweep together are refused, as is a plot into a missing folder.
  auto refused = gossamer::testing::run_gossamer("bench serve --port " + std::to_string(server.port()) +
                                                 " --concurrency-sweep 1 --max-concurrency 4");
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.output.find("not both"), std::string::npos) << refused.output;
  refused = gossamer::testing::run_gossamer("bench serve --port " + std::to_string(server.port()) +
                                            " --concurrency-sweep 1 --sweep-plot /nonexistent/dir/x.png");
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.output.find("no directory"), std::string::npos) << refused.output;
  // A second run drawn with the first on one chart; a file that is not a sweep is refused up front.
  const std::string compared = (dir / "compared.png").string();
  const auto second = gossamer::testing::run_gossamer(
      "bench serve --port " + std::to_string(server.port()) +
      " --concurrency-sweep 2 --num-prompts 2 --random-input-len 16 --random-output-len 4 --ignore-eos"
      " --sweep-label second --sweep-compare " +
      json + " --sweep-plot " + compared);
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_GT(fs::file_size(compared), 1000u);
  refused =
      gossamer::testing::run_gossamer("bench serve --port " + std::to_string(server.port()) +
                                      " --concurrency-sweep 1 --sweep-plot " + compared + " --sweep-compare " + plot);
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.output.find("--sweep-compare"), std::string::npos) << refused.output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gossamer::server
