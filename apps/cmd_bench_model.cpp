// `gossamer bench prefill` and `gossamer bench decode`: the reference deployment's tables, measured.
//
// prefill: batch 1 at each input length; latency, tokens/s, $ per million input tokens at $3.00/GPU-hour.
// decode: B sequences each with a synthetic context of C cached positions (zeroed KV: attention reads
// the real number of bytes), one new token per sequence per step; tokens/s per sequence and in total,
// $ per million output tokens. Sliding-window layers keep only their window (the engine's ring) unless --no-ring.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/chart.h"
#include "bench_setup.h"
#include "command.h"
#include "core/error.h"
#include "model/routing_trace.h"

namespace gossamer::app {

namespace {

void write_json(const std::string& path, const nlohmann::json& value) {
  if (path.empty()) return;
  std::ofstream out(path);
  out << value.dump(2) << "\n";
}

// `bench prefill --phases`: one column per input length, ms per phase (summed over the layers) and its share
// of the device span.
void print_prefill_phases(std::FILE* out, const std::vector<int64_t>& lengths,
                          const std::vector<model::PhaseSeconds>& timed) {
  std::fprintf(out,
               "\nPrefill phases (one eager, phase-timed run per length), ms and %% of the device span\n\n| phase |");
  for (int64_t length : lengths) std::fprintf(out, " %lld tokens |", static_cast<long long>(length));
  std::fprintf(out, "\n|---|");
  for (size_t i = 0; i < lengths.size(); ++i) std::fprintf(out, "---|");
  std::fprintf(out, "\n");
  for (int p = 0; p < model::kNumStepPhases; ++p) {
    const auto phase = static_cast<size_t>(p);
    if (std::all_of(timed.begin(), timed.end(), [&](const model::PhaseSeconds& t) { return t.counts[phase] == 0; }))
      continue;
    std::fprintf(out, "| %s |", model::step_phase_name(static_cast<model::StepPhase>(p)));
    for (const model::PhaseSeconds& t : timed) {
      if (t.counts[phase] == 0) {
        std::fprintf(out, " - |");
      } else {
        std::fprintf(out, " %.2f (%.1f%%) |", t.seconds[phase] * 1e3, 100.0 * t.seconds[phase] / t.span);
      }
    }
    std::fprintf(out, "\n");
  }
  std::fprintf(out, "| device span |");
  for (const model::PhaseSeconds& t : timed) std::fprintf(out, " %.2f |", t.span * 1e3);
  std::fprintf(out, "\n");
}

int run_bench_prefill(int argc, char** argv) {
  CLI::App cli{"Prefill latency at batch 1 (the reference deployment's table)"};
  ModelChoice choice;
  choice.add_options(cli);
  std::vector<int64_t> lengths = {8192, 32768, 65536, 128000};
  int repeats = 2;
  std::string json_out;
  cli.add_option("--input-lens", lengths, "input lengths")->delimiter(',');
  cli.add_option("--repeats", repeats, "timed runs per length (the median is reported)");
  cli.add_option("--json-out", json_out, "also write the results as JSON");
  bool phases = false;
  cli.add_flag("--phases", phases,
               "then one phase-timed prefill per length (eager, events between the launch groups: "
               "model/step_phases.h): ms per phase summed over the layers");
  CLI11_PARSE(cli, argc, argv);
  auto model = choice.load();
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  GOSSAMER_CHECK(longest <= model->config().max_position_embeddings, "input length ", longest, " exceeds the context");
  const std::vector<int32_t> table = prepare_prefill(*model, longest);
  std::vector<float> logits;
  auto run_once = [&](const std::vector<int32_t>& tokens) { return time_prefill(*model, tokens, table, logits); };
  run_once(
      bench_random_tokens(choice.seed + 99, std::min<int64_t>(longest, 2048), model->config().vocab_size));  // warm-up
  nlohmann::json results = nlohmann::json::array();
  std::printf("| model | input tokens | latency (s) | tokens/s | $ / 1M input tokens |\n|---|---|---|---|---|\n");
  for (int64_t length : lengths) {
    const auto tokens =
        bench_random_tokens(choice.seed + static_cast<uint64_t>(length), length, model->config().vocab_size);
    std::vector<double> times;
    for (int r = 0; r < std::max(1, repeats); ++r) times.push_back(run_once(tokens));
    std::sort(times.begin(), times.end());
    const double latency = times[times.size() / 2];
    const double cost = kBenchDollarsPerGpuHour / 3600.0 * latency / static_cast<double>(length) * 1e6;
    std::printf("| %s (%s) | %lld | %.3f | %.0f | %.4f |\n", choice.name().c_str(), model->backend_name().c_str(),
                static_cast<long long>(length), latency, static_cast<double>(length) / latency, cost);
    std::fflush(stdout);
    results.push_back({{"input_tokens", length},
                       {"latency_s", latency},
                       {"tokens_per_s", length / latency},
                       {"dollars_per_million_input_tokens", cost},
                       {"runs_s", times}});
  }
  if (phases) {
    GOSSAMER_CHECK(model->set_phase_timing(true), "bench prefill --phases: the ", model->backend_name(),
                   " backend times no phases");
    std::vector<model::PhaseSeconds> timed;
    for (size_t i = 0; i < lengths.size(); ++i) {
      const int64_t length = lengths[i];
      run_once(bench_random_tokens(choice.seed + static_cast<uint64_t>(length), length, model->config().vocab_size));
      timed.push_back(model->last_phase_seconds());
      GOSSAMER_CHECK(timed.back().valid, "bench prefill --phases: no phase was timed");
      results[i]["phases"] = phase_seconds_json(timed.back());
    }
    model->set_phase_timing(false);
    print_prefill_phases(stdout, lengths, timed);
  }
  write_json(json_out,
             {{"bench", "prefill"}, {"model", choice.name()}, {"device", model->backend_name()}, {"results", results}});
  return 0;
}

int run_bench_decode(int argc, char** argv) {
  CLI::App cli{"Decode throughput at batch sizes and contexts (the reference deployment's table)"};
  ModelChoice choice;
  choice.add_options(cli);
  std::vector<int> batch_sizes = {1, 2, 4, 8, 16, 32, 64, 128};
  std::vector<int64_t> contexts = {8192, 32768};
  int steps = 20;
  std::string json_out, plot_out;
  double kv_budget_gib = 100.0;
  cli.add_option("--batch-sizes", batch_sizes, "batch sizes")->delimiter(',');
  cli.add_option("--contexts", contexts, "cached context per sequence")->delimiter(',');
  cli.add_option("--steps", steps, "timed decode steps per point");
  cli.add_option("--kv-budget-gib", kv_budget_gib, "largest KV cache to allocate; bigger points are skipped");
  bool ring = true;
  cli.add_flag("!--no-ring", ring, "full-length KV on the sliding-window layers too (as before the ring)");
  bool routing_stats = false;
  cli.add_flag("--routing-stats", routing_stats,
               "after each point, one more step (eager) with the routing traced: how many experts a layer's tokens "
               "touch against uniform routing, and the busiest expert's rows (model/routing_trace.h)");
  int speculative_tokens = 0;
  cli.add_option("--speculative-tokens", speculative_tokens,
                 "also time, at each point, the verification step of speculative decoding (serve "
                 "--speculative-config): every sequence runs 1 + this many tokens with a logits row each; prints its "
                 "cost against the plain step and the accepted drafts a step that break even")
      ->check(CLI::Range(0, 16));
  cli.add_option("--json-out", json_out, "also write the results as JSON");
  cli.add_option("--plot", plot_out,
                 "also write a chart (PNG, or SVG for a .svg path): $ per 1M output tokens (log scale) against "
                 "tokens/s per sequence, "
                 "one line per context, points labelled with the batch size");
  CLI11_PARSE(cli, argc, argv);
  check_output_directory("--plot", plot_out);  // fail now, not after the measurements
  auto model = choice.load();
  nlohmann::json results = nlohmann::json::array();
  std::vector<std::string> routing_lines;  // printed after the table (with the speculative verification lines)
  std::printf(
      "| model | context | batch | step (ms) | tok/s per seq | tok/s total | $ / 1M output tokens |\n"
      "|---|---|---|---|---|---|---|\n");
  for (int64_t context : contexts) {
    for (int batch_size : batch_sizes) {
      double kv_gib = 0.0;
      const auto setup =
          prepare_decode(*model, context, batch_size, steps + 4, ring, kv_budget_gib,
                         choice.seed + static_cast<uint64_t>(batch_size), &kv_gib, 1 + speculative_tokens);
      if (!setup) {
        std::printf("| %s | %lld | %d | skipped: KV cache %.0f GiB > budget %.0f GiB | | | |\n", choice.name().c_str(),
                    static_cast<long long>(context), batch_size, kv_gib, kv_budget_gib);
        continue;
      }
      const double per_step = decode_seconds_per_step(*model, *setup, 3, steps);
      const double total = batch_size / per_step;
      const double cost = kBenchDollarsPerGpuHour / 3600.0 / total * 1e6;
      std::printf("| %s (%s) | %lld | %d | %.2f | %.1f | %.0f | %.3f |\n", choice.name().c_str(),
                  model->backend_name().c_str(), static_cast<long long>(context), batch_size, per_step * 1e3,
                  1.0 / per_step, total, cost);
      std::fflush(stdout);
      nlohmann::json point = {{"context", context},          {"batch", batch_size},
                              {"step_ms", per_step * 1e3},   {"tokens_per_s_per_seq", 1.0 / per_step},
                              {"tokens_per_s_total", total}, {"dollars_per_million_output_tokens", cost}};
      if (speculative_tokens > 0) {
        // A verification step of k drafts costs `verify`; it pays when more than verify / plain − 1 of its
        // drafts are accepted on average (each accepted draft is a plain step saved).
        const int32_t queries = 1 + speculative_tokens;
        const double verify = decode_seconds_per_step(*model, *setup, 3, steps, queries);
        char line[320];
        std::snprintf(line, sizeof(line),
                      "speculative verification, context %lld, batch %d: %d tokens a sequence %.2f ms against %.2f "
                      "(%.2fx); breaks even at %.2f accepted drafts a step; all accepted: %.1f tok/s per sequence",
                      static_cast<long long>(context), batch_size, queries, verify * 1e3, per_step * 1e3,
                      verify / per_step, verify / per_step - 1.0, queries / verify);
        routing_lines.emplace_back(line);
        point["speculative"] = {{"tokens_per_sequence", queries},
                                {"step_ms", verify * 1e3},
                                {"break_even_accepted", verify / per_step - 1.0}};
      }
      if (routing_stats) {
        char line[320];
        if (model->set_routing_trace(true)) {
          decode_seconds_per_step(*model, *setup, 0, 1);
          const model::RoutingCounts counts = model->last_routing();
          model->set_routing_trace(false);
          const model::RoutingSpread spread = model::routing_spread(counts);
          std::snprintf(line, sizeof(line),
                        "routing, context %lld, batch %d: experts touched per layer %.1f of %d (uniform routing: "
                        "%.1f), busiest expert %.1f rows (mean %.1f)",
                        static_cast<long long>(context), batch_size, spread.experts_touched, counts.experts,
                        spread.uniform_touched, spread.busiest_rows, spread.mean_rows);
          point["routing"] = {{"experts_touched", spread.experts_touched},
                              {"uniform_touched", spread.uniform_touched},
                              {"busiest_rows", spread.busiest_rows},
                              {"mean_rows", spread.mean_rows}};
        } else {
          std::snprintf(line, sizeof(line), "routing, context %lld, batch %d: not traced by the %s backend",
                        static_cast<long long>(context), batch_size, model->backend_name().c_str());
        }
        routing_lines.emplace_back(line);
      }
      results.push_back(std::move(point));
    }
  }
  if (!routing_lines.empty()) std::printf("\n");
  for (const std::string& line : routing_lines) std::printf("%s\n", line.c_str());
  write_json(json_out,
             {{"bench", "decode"}, {"model", choice.name()}, {"device", model->backend_name()}, {"results", results}});
  if (!plot_out.empty()) {
    bench::ChartSpec plot;
    plot.title =
        "gossamer bench decode: " + choice.name() + " (" + model->backend_name() + "), point labels = batch size";
    plot.x_label = "tokens/s per sequence";
    char price[32];
    std::snprintf(price, sizeof(price), "%.2f", kBenchDollarsPerGpuHour);
    plot.y_label = std::string("$ per 1M output tokens (at $") + price + "/GPU-hour)";
    plot.log_y = true;
    for (int64_t context : contexts) {
      bench::ChartSeries series{"context " + std::to_string(context), {}, {}, {}};
      for (const nlohmann::json& point : results) {
        if (point["context"].get<int64_t>() != context) continue;
        series.x.push_back(point["tokens_per_s_per_seq"].get<double>());
        series.y.push_back(point["dollars_per_million_output_tokens"].get<double>());
        series.labels.push_back(std::to_string(point["batch"].get<int>()));
      }
      if (!series.x.empty()) plot.series.push_back(std::move(series));  // every point skipped: no line
    }
    bench::write_chart(plot, plot_out);
    std::printf("\nplot: %s\n", plot_out.c_str());
  }
  return 0;
}

}  // namespace

GOSSAMER_REGISTER_BENCH("prefill", "prefill latency at batch 1 for several input lengths", run_bench_prefill);
GOSSAMER_REGISTER_BENCH("decode", "decode tokens/s at batch sizes and contexts", run_bench_decode);

}  // namespace gossamer::app
