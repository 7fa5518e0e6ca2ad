// The reference deployment's charts of `gossamer bench sweep`, made from its rows (bench_sweep_table.h) and
// drawn by the bench chart library (bench/chart.h: PNG, or SVG for a path ending in ".svg"):
// - decode, one chart per context: $ per 1M output tokens (log y) against tokens/s per sequence, one line
//   per layout (decode_cost_series), each point labelled with its batch size;
// - prefill at batch 1: latency in seconds (log y) against input tokens, one line per layout, each point
//   labelled with its $ per 1M input tokens (the reference prefill table's latency and cost columns).
// Skipped rows are not drawn; a layout with no row left has no line.
//
// Files: --plot DIR/NAME.EXT writes DIR/NAME_prefill.EXT and DIR/NAME_decode_ctx<C>.EXT per context C.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/chart.h"
#include "bench_sweep_table.h"

namespace gossamer::app {

// `plot` with "_<chart>" inserted before its extension: ("out/sweep.svg", "prefill") → "out/sweep_prefill.svg".
std::string sweep_plot_path(const std::string& plot, const std::string& chart);

bench::ChartSpec prefill_latency_chart(const std::vector<SweepRow>& rows, const std::string& model);
bench::ChartSpec decode_cost_chart(const std::vector<SweepRow>& rows, int64_t context, const std::string& model);

// Writes the prefill chart, then one decode chart per context, and returns their paths in that order.
// Throws gossamer::Error (naming the path) when a file cannot be written.
std::vector<std::string> write_sweep_plots(const std::string& plot, const std::vector<SweepRow>& rows,
                                           const std::vector<int64_t>& contexts, const std::string& model);

}  // namespace gossamer::app
