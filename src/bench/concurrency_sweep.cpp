#include "bench/concurrency_sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"

namespace gossamer::server {

namespace {

double number(const nlohmann::ordered_json& result, const char* key) {
  GOSSAMER_CHECK(result.contains(key) && result[key].is_number(), "bench result has no number '", key, "'");
  return result[key].get<double>();
}

void check_options(const ConcurrencySweepOptions& options) {
  GOSSAMER_CHECK(!options.concurrencies.empty(), "--concurrency-sweep needs at least one concurrency");
  for (const int c : options.concurrencies) GOSSAMER_CHECK(c >= 1, "--concurrency-sweep values must be >= 1, got ", c);
  GOSSAMER_CHECK(options.dollars_per_gpu_hour > 0.0 && std::isfinite(options.dollars_per_gpu_hour),
                 "--dollars-per-gpu-hour must be > 0");
  GOSSAMER_CHECK(options.num_gpus >= 1, "--num-gpus must be >= 1");
  GOSSAMER_CHECK(options.prompts_per_concurrency >= 0, "--prompts-per-concurrency must be >= 0");
}

}  // namespace

SweepRow sweep_row(int concurrency, const nlohmann::ordered_json& result, const ConcurrencySweepOptions& options) {
  SweepRow row;
  row.concurrency = concurrency;
  row.num_prompts = static_cast<int>(number(result, "num_prompts"));
  row.completed = static_cast<int>(number(result, "completed"));
  row.failed = static_cast<int>(number(result, "failed"));
  row.output_tokens_per_s = number(result, "output_throughput");
  row.mean_ttft_ms = number(result, "mean_ttft_ms");
  row.p99_ttft_ms = number(result, "p99_ttft_ms");
  row.mean_tpot_ms = number(result, "mean_tpot_ms");
  row.p99_tpot_ms = number(result, "p99_tpot_ms");
  row.tokens_per_s_per_user = row.mean_tpot_ms > 0.0 ? 1000.0 / row.mean_tpot_ms : 0.0;
  row.dollars_per_million_output = row.output_tokens_per_s > 0.0 ? options.dollars_per_gpu_hour * options.num_gpus /
                                                                       3600.0 / row.output_tokens_per_s * 1e6
                                                                 : std::numeric_limits<double>::infinity();
  return row;
}

std::vector<SweepRow> run_concurrency_sweep(
    const BenchServeOptions& base, const ConcurrencySweepOptions& options, const text::Tokenizer& tokenizer,
    const std::function<void(const SweepRow&, const BenchServeResult&)>& on_point) {
  check_options(options);
  std::vector<SweepRow> rows;
  for (const int concurrency : options.concurrencies) {
    BenchServeOptions point = base;
    point.max_concurrency = concurrency;
    if (options.prompts_per_concurrency > 0)
      point.num_prompts = std::max(base.num_prompts, options.prompts_per_concurrency * concurrency);
    if (std::find(point.percentiles.begin(), point.percentiles.end(), 99.0) == point.percentiles.end())
      point.percentiles.push_back(99.0);
    const auto before = scrape_server_counters(point.host, point.port, point.api_key);
    const BenchServeResult result = run_bench_serve(point, tokenizer);
    const auto after = before ? scrape_server_counters(point.host, point.port, point.api_key) : std::nullopt;
    rows.push_back(sweep_row(concurrency, result.json, options));
    if (before && after) rows.back().server = server_activity(*before, *after, number(result.json, "duration"));
    if (on_point) on_point(rows.back(), result);
  }
  return rows;
}

std::string format_sweep_table(const std::vector<SweepRow>& rows, const ConcurrencySweepOptions& options) {
  char text[512];
  std::snprintf(
      text, sizeof(text),
      "| max concurrency | prompts | failed | output tok/s | tok/s per user | mean TTFT (ms) | p99 TTFT (ms) | "
      "mean TPOT (ms) | p99 TPOT (ms) | $ / 1M output tokens (%d GPU × $%.2f/h) |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n",
      options.num_gpus, options.dollars_per_gpu_hour);
  std::string out = text;
  for (const SweepRow& r : rows) {
    std::snprintf(text, sizeof(text), "| %d | %d | %d | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %.4f |\n",
                  r.concurrency, r.num_prompts, r.failed, r.output_tokens_per_s, r.tokens_per_s_per_user,
                  r.mean_ttft_ms, r.p99_ttft_ms, r.mean_tpot_ms, r.p99_tpot_ms, r.dollars_per_million_output);
    out += text;
  }
  return out;
}

std::string format_server_table(const std::vector<SweepRow>& rows) {
  std::string out =
      "| max concurrency | engine steps | tokens per step | generated per step | prompt per step | preemptions | ms "
      "per step | of which device wait / schedule / launch / other host | masked steps | token masks, ms per masked "
      "step |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n";
  bool any = false;
  for (const SweepRow& r : rows) {
    if (!r.server) continue;
    any = true;
    char text[320];
    const server::ServerActivity& a = *r.server;
    std::snprintf(text, sizeof(text),
                  "| %d | %.0f | %.1f | %.1f | %.1f | %.0f | %.2f | %.2f / %.2f / %.2f / %.2f | %.0f | %.3f |\n",
                  r.concurrency, a.steps, a.tokens_per_step, a.generated_per_step, a.prompt_per_step, a.preemptions,
                  a.ms_per_step, a.wait_ms_per_step, a.schedule_ms_per_step, a.launch_ms_per_step,
                  a.collect_ms_per_step + a.postprocess_ms_per_step, a.masked_steps, a.mask_ms_per_masked_step);
    out += text;
  }
  return any ? out : std::string();
}

nlohmann::json sweep_json(const std::vector<SweepRow>& rows, const ConcurrencySweepOptions& options) {
  nlohmann::json points = nlohmann::json::array();
  for (const SweepRow& r : rows) {
    points.push_back({{"max_concurrency", r.concurrency},
                      {"num_prompts", r.num_prompts},
                      {"completed", r.completed},
                      {"failed", r.failed},
                      {"output_throughput", r.output_tokens_per_s},
                      {"tokens_per_s_per_user", r.tokens_per_s_per_user},
                      {"mean_ttft_ms", r.mean_ttft_ms},
                      {"p99_ttft_ms", r.p99_ttft_ms},
                      {"mean_tpot_ms", r.mean_tpot_ms},
                      {"p99_tpot_ms", r.p99_tpot_ms},
                      {"dollars_per_million_output_tokens", std::isfinite(r.dollars_per_million_output)
                                                                ? nlohmann::json(r.dollars_per_million_output)
                                                                : nlohmann::json()}});
    if (r.server) {
      points.back()["server"] = {{"engine_steps", r.server->steps},
                                 {"tokens_per_step", r.server->tokens_per_step},
                                 {"generated_per_step", r.server->generated_per_step},
                                 {"prompt_per_step", r.server->prompt_per_step},
                                 {"preemptions", r.server->preemptions},
                                 {"ms_per_step", r.server->ms_per_step},
                                 {"masked_steps", r.server->masked_steps},
                                 {"token_mask_ms_per_masked_step", r.server->mask_ms_per_masked_step},
                                 {"loop_ms_per_step",
                                  {{"wait", r.server->wait_ms_per_step},
                                   {"schedule", r.server->schedule_ms_per_step},
                                   {"collect", r.server->collect_ms_per_step},
                                   {"launch", r.server->launch_ms_per_step},
                                   {"postprocess", r.server->postprocess_ms_per_step},
                                   {"idle", r.server->idle_ms_per_step}}}};
    }
  }
  return {{"label", options.label.empty() ? "this run" : options.label},
          {"dollars_per_gpu_hour", options.dollars_per_gpu_hour},
          {"num_gpus", options.num_gpus},
          {"points", points}};
}

bench::ChartSpec sweep_chart(const std::vector<SweepRow>& rows, const ConcurrencySweepOptions& options,
                             const std::string& title, const std::vector<bench::ChartSeries>& earlier) {
  bench::ChartSpec chart;
  chart.title = title;
  chart.width = 1100;
  chart.x_label = "tokens/s per user (1000 / mean TPOT)";
  char price[96];
  std::snprintf(price, sizeof(price), "$ per 1M output tokens (%d GPU at $%.2f/GPU-hour)", options.num_gpus,
                options.dollars_per_gpu_hour);
  chart.y_label = price;
  chart.log_y = true;
  bench::ChartSeries series{
      (options.label.empty() ? "this run" : options.label) + " (labels: max concurrency)", {}, {}, {}};
  for (const SweepRow& r : rows) {  // NOTE: a point with no throughput has an infinite cost: write_chart skips it
    series.x.push_back(r.tokens_per_s_per_user);
    series.y.push_back(r.dollars_per_million_output);
    series.labels.push_back(std::to_string(r.concurrency));
  }
  chart.series.push_back(std::move(series));
  chart.series.insert(chart.series.end(), earlier.begin(), earlier.end());
  return chart;
}

bench::ChartSeries sweep_series_from_json(const nlohmann::json& saved) {
  GOSSAMER_CHECK(saved.is_object() && saved.contains("points") && saved["points"].is_array(),
                 "not a --sweep-json file: no \"points\" list");
  bench::ChartSeries series;
  series.name = saved.value("label", std::string("earlier run"));
  for (const nlohmann::json& point : saved["points"]) {
    GOSSAMER_CHECK(point.is_object() && point.contains("max_concurrency") && point.contains("tokens_per_s_per_user") &&
                       point.contains("dollars_per_million_output_tokens"),
                   "not a --sweep-json file: a point lacks max_concurrency, tokens_per_s_per_user or "
                   "dollars_per_million_output_tokens");
    const nlohmann::json& cost = point["dollars_per_million_output_tokens"];
    series.x.push_back(point["tokens_per_s_per_user"].get<double>());
    series.y.push_back(cost.is_number() ? cost.get<double>() : std::numeric_limits<double>::quiet_NaN());
    series.labels.push_back(std::to_string(point["max_concurrency"].get<int>()));
  }
  return series;
}

}  // namespace gossamer::server
