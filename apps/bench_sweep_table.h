// The rows of `gossamer bench sweep` and how they print: the reference deployment's prefill and decode
// tables, a CSV, and the decode cost-vs-speed series per layout (the data of the decode charts,
// bench_sweep_plot.h).
//
// Cost model (the reference deployment's): kBenchDollarsPerGpuHour × the GPUs a layout uses (TP × DP).
// Decode rows of DP > 1 are derived from one replica's measured step at batch ⌈B / DP⌉ (replicas are
// independent; `source` says "replica×DP"); every other row is measured as is ("measured").
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_setup.h"  // kBenchDollarsPerGpuHour
#include "model/sharding.h"

namespace gossamer::app {

struct SweepRow {
  enum class Kind { kPrefill, kDecode } kind = Kind::kDecode;
  model::ParallelLayout layout;
  int64_t tokens = 0;    // prefill: input tokens; decode: cached context per sequence
  int32_t batch = 1;     // sequences (all replicas together)
  double seconds = 0.0;  // prefill latency, or one decode step
  std::string source = "measured";
  std::string skipped;  // non-empty: not run, and why

  int32_t gpus() const { return layout.num_devices(); }
  double tokens_per_s_per_seq() const { return kind == Kind::kDecode ? 1.0 / seconds : tokens / seconds; }
  double tokens_per_s_total() const { return kind == Kind::kDecode ? batch / seconds : tokens / seconds; }
  // $ per million input (prefill) or output (decode) tokens.
  double dollars_per_million() const { return kBenchDollarsPerGpuHour * gpus() / 3600.0 / tokens_per_s_total() * 1e6; }
};

// One line of a cost-vs-speed chart: a layout at one context, a point per batch size.
struct CostSeries {
  std::string label;  // "TP4 EP4 DP1"
  std::vector<double> tokens_per_s_per_seq, dollars_per_million;
  std::vector<int32_t> batch;
};
std::vector<CostSeries> decode_cost_series(const std::vector<SweepRow>& rows, int64_t context);

void print_prefill_table(std::FILE* out, const std::string& model, const std::vector<SweepRow>& rows);
void print_decode_table(std::FILE* out, const std::string& model, const std::vector<SweepRow>& rows);
// The cheapest layout per (context, batch) among the measured and derived decode rows.
void print_best_decode_table(std::FILE* out, const std::vector<SweepRow>& rows);
// kind,layout,tp,ep,dp,gpus,tokens,batch,seconds,tokens_per_s_per_seq,tokens_per_s_total,dollars_per_million,source,skipped
void write_sweep_csv(const std::string& path, const std::vector<SweepRow>& rows);

}  // namespace gossamer::app
