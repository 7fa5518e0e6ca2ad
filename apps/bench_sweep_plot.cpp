#include "bench_sweep_plot.h"

#include <cstdio>
#include <filesystem>
#include <map>

namespace gossamer::app {

namespace {
std::string price_per_gpu_hour() {
  char text[64];
  std::snprintf(text, sizeof(text), "$%.2f/GPU-hour x GPUs", kBenchDollarsPerGpuHour);
  return text;
}
}  // namespace

std::string sweep_plot_path(const std::string& plot, const std::string& chart) {
  const std::filesystem::path path(plot);
  return (path.parent_path() / (path.stem().string() + "_" + chart + path.extension().string())).string();
}

bench::ChartSpec prefill_latency_chart(const std::vector<SweepRow>& rows, const std::string& model) {
  bench::ChartSpec chart;
  chart.title = "gossamer bench sweep: " + model + ", prefill (point labels: $ per 1M input tokens at " +
                price_per_gpu_hour() + ")";
  chart.x_label = "input tokens";
  chart.y_label = "latency at batch 1 (s)";
  chart.log_y = true;
  chart.width = 1100;
  std::map<std::string, bench::ChartSeries> by_layout;  // rows come sorted by input length
  for (const SweepRow& row : rows) {
    if (row.kind != SweepRow::Kind::kPrefill || !row.skipped.empty()) continue;
    bench::ChartSeries& series = by_layout[row.layout.describe_with_dp()];
    series.name = row.layout.describe_with_dp();
    series.x.push_back(static_cast<double>(row.tokens));
    series.y.push_back(row.seconds);
    char cost[32];
    std::snprintf(cost, sizeof(cost), "$%.3g", row.dollars_per_million());
    series.labels.push_back(cost);
  }
  for (auto& [label, series] : by_layout) chart.series.push_back(std::move(series));
  return chart;
}

bench::ChartSpec decode_cost_chart(const std::vector<SweepRow>& rows, int64_t context, const std::string& model) {
  bench::ChartSpec chart;
  chart.title =
      "gossamer bench sweep: " + model + ", decode at context " + std::to_string(context) + " (point labels: batch)";
  chart.x_label = "tokens/s per sequence";
  chart.y_label = "$ per 1M output tokens (" + price_per_gpu_hour() + ")";
  chart.log_y = true;
  chart.width = 1100;
  for (const CostSeries& line : decode_cost_series(rows, context)) {
    bench::ChartSeries series{line.label, line.tokens_per_s_per_seq, line.dollars_per_million, {}};
    for (int32_t batch : line.batch) series.labels.push_back(std::to_string(batch));
    chart.series.push_back(std::move(series));
  }
  return chart;
}

std::vector<std::string> write_sweep_plots(const std::string& plot, const std::vector<SweepRow>& rows,
                                           const std::vector<int64_t>& contexts, const std::string& model) {
  std::vector<std::string> paths = {sweep_plot_path(plot, "prefill")};
  bench::write_chart(prefill_latency_chart(rows, model), paths.back());
  for (int64_t context : contexts) {
    paths.push_back(sweep_plot_path(plot, "decode_ctx" + std::to_string(context)));
    bench::write_chart(decode_cost_chart(rows, context, model), paths.back());
  }
  return paths;
}

}  // namespace gossamer::app
