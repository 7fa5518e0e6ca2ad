// `gossamer bench serve --concurrency-sweep 1,4,16,64,256,1024`: the load generator (bench_serve.h) run
// once per max concurrency, in the given order, and the reference deployment's throughput–latency table
// and decode cost-vs-speed chart made from the points.
//
// Figures per point (from run_bench_serve's vLLM keys):
//   output tok/s            total generated tokens / benchmark duration
//   tok/s per user          1000 / mean TPOT (ms): the decode speed one user sees (0 when no TPOT)
//   TTFT, TPOT              mean and p99 (ms)
//   $ per 1M output tokens  dollars_per_gpu_hour × num_gpus / 3600 / output tok/s × 10⁶
//
// With a gossamer (or vLLM) server, each point also reads the engine counters on /metrics before and after
// (bench/server_counters.h): engine steps, tokens / generated / prompt tokens per step, preemptions, and
// ms per step (benchmark duration / steps), printed as a second table.
//
// Contract: run_concurrency_sweep() blocks until every point is done and calls `on_point` after each (for
// progress); a point whose requests all fail still gives its row (output tok/s 0, cost infinite, which
// the chart leaves out). Throws gossamer::Error on an empty or non-positive concurrency list, a bad price
// or GPU count, or what run_bench_serve throws (bad options, no server).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_serve.h"
#include "bench/chart.h"
#include "bench/server_counters.h"

namespace gossamer::server {

struct ConcurrencySweepOptions {
  std::vector<int> concurrencies;      // max concurrency of each point, in run order
  int prompts_per_concurrency = 0;     // > 0: a point sends max(num_prompts, this × concurrency) requests
  double dollars_per_gpu_hour = 3.00;  // the reference deployment's price
  int num_gpus = 1;                    // GPUs the server uses (the cost counts them all)
  std::string label;                   // this run's line on the chart and in the JSON ("" = "this run")
};

struct SweepRow {
  int concurrency = 0;
  int num_prompts = 0, completed = 0, failed = 0;
  double output_tokens_per_s = 0.0, tokens_per_s_per_user = 0.0;
  double mean_ttft_ms = 0.0, p99_ttft_ms = 0.0, mean_tpot_ms = 0.0, p99_tpot_ms = 0.0;
  double dollars_per_million_output = 0.0;
  std::optional<ServerActivity> server;  // the server's /metrics deltas over the point (when it has them)
};

// One row from run_bench_serve's JSON (which must hold the p99 keys: percentiles include 99).
SweepRow sweep_row(int concurrency, const nlohmann::ordered_json& result, const ConcurrencySweepOptions& options);

std::vector<SweepRow> run_concurrency_sweep(
    const BenchServeOptions& base, const ConcurrencySweepOptions& options, const text::Tokenizer& tokenizer,
    const std::function<void(const SweepRow&, const BenchServeResult&)>& on_point = {});

// The markdown table, one line per point.
std::string format_sweep_table(const std::vector<SweepRow>& rows, const ConcurrencySweepOptions& options);
// The server-side table (one line per point with /metrics deltas), or "" when no point has them.
std::string format_server_table(const std::vector<SweepRow>& rows);
// The rows as JSON: {"label", "dollars_per_gpu_hour", "num_gpus", "points": [...]}.
nlohmann::json sweep_json(const std::vector<SweepRow>& rows, const ConcurrencySweepOptions& options);
// $ per 1M output tokens (log y) against tok/s per user, one point per concurrency (labelled with it): this
// run's line, then `earlier` ones (sweep_series_from_json: runs of other server settings, to compare).
bench::ChartSpec sweep_chart(const std::vector<SweepRow>& rows, const ConcurrencySweepOptions& options,
                             const std::string& title, const std::vector<bench::ChartSeries>& earlier = {});
// The chart line of a sweep_json() document (an earlier run's --sweep-json file); throws gossamer::Error
// naming what is missing when `saved` is not one. A point without a cost (no throughput) is not drawn.
bench::ChartSeries sweep_series_from_json(const nlohmann::json& saved);

}  // namespace gossamer::server
