// `gossamer bench sweep`: every tensor/expert/data-parallel layout that fits the GPUs present × decode at
// batch 1–128 and contexts 8,192 / 32,768, and prefill at batch 1 over 8k–128k input tokens: the
// reference deployment's tables (latency, tokens/s, $ per 1M tokens at $3.00/GPU-hour × GPUs), the
// cheapest layout per point, a CSV (apps/bench_sweep_table.h), and the cost-vs-speed and prefill charts
// (--plot, apps/bench_sweep_plot.h). On --device cpu the layouts run on simulated ranks (--gpus says how
// many), which checks the sweep itself, not the speed of a GPU.
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "bench_setup.h"
#include "bench_sweep_plot.h"
#include "bench_sweep_table.h"
#include "command.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "model/dummy_checkpoint.h"
#include "model/loader.h"
#include "rank_launch.h"
#include "weights_flag.h"

namespace gossamer::app {

namespace {

// The (TP, EP) groups to load, and the DP counts each is reported at: TP ∈ {1, 2, 4, 8} dividing the
// model, EP on and off for TP > 1, DP ∈ {1, 2, 4, 8} with TP × DP ≤ gpus.
std::vector<model::ParallelLayout> layouts_that_fit(const model::GptOssConfig& config, int gpus) {
  std::vector<model::ParallelLayout> out;
  for (int32_t tp : {1, 2, 4, 8}) {
    for (bool ep : {false, true}) {
      if (ep && tp == 1) continue;
      for (int32_t dp : {1, 2, 4, 8}) {
        const model::ParallelLayout layout{tp, ep, dp};
        try {
          model::validate_layout(layout, config, gpus);
          out.push_back(layout);
        } catch (const Error&) {  // does not fit the model or the GPUs: not part of the sweep
        }
      }
    }
  }
  return out;
}

double prefill_seconds(model::Model& model, int64_t length, uint64_t seed, int repeats) {
  const std::vector<int32_t> table = prepare_prefill(model, length);
  const auto tokens = bench_random_tokens(seed, length, model.config().vocab_size);
  std::vector<float> logits;
  std::vector<double> times;
  for (int r = 0; r < std::max(1, repeats); ++r) times.push_back(time_prefill(model, tokens, table, logits));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Seconds per decode step of `batch` sequences with `context` cached positions each (the sliding layers
// keep only their window: the engine's ring). Returns < 0 when the KV cache would exceed the budget.
double decode_step_seconds(model::Model& model, int64_t context, int32_t batch, int steps, uint64_t seed,
                           double budget_gib) {
  const auto setup = prepare_decode(model, context, batch, steps + 4, true, budget_gib, seed);
  return setup ? decode_seconds_per_step(model, *setup, 2, steps) : -1.0;
}

struct SweepSettings {
  std::string model_dir, load_format = "auto", preset = "20b", device = "cuda";
  uint64_t seed = 0;
  int steps = 10, repeats = 1;
  double kv_budget_gib = 100.0;
  std::vector<int> batch_sizes = {1, 2, 4, 8, 16, 32, 64, 128};
  std::vector<int64_t> contexts = {8192, 32768}, prefill_lens = {8192, 32768, 65536, 128000};
};

// Loads one (TP, EP) group and measures its prefill rows and its decode rows at every DP in `dps`
// (DP > 1 derived from the replica's step at batch ⌈B/DP⌉). A group that cannot load gives skipped rows.
std::vector<SweepRow> measure_group(const SweepSettings& s, const model::GptOssConfig& config,
                                    model::ModelOptions options, const std::vector<int32_t>& dps) {
  std::vector<SweepRow> rows;
  std::unique_ptr<model::Model> model;
  std::string failure;
  try {
    model = s.load_format == "dummy" ? model::load_dummy_model(s.preset, s.seed, s.device, options)
                                     : model::load_model(s.model_dir, s.device, options);
  } catch (const Error& error) {
    failure = error.what();
  }
  std::fprintf(stderr, "sweep: %s %s\n", options.layout.describe().c_str(),
               failure.empty() ? "loaded" : ("skipped: " + failure).c_str());
  for (int64_t length : s.prefill_lens) {
    SweepRow row;
    row.kind = SweepRow::Kind::kPrefill;
    row.layout = options.layout;
    row.tokens = length;
    row.skipped = failure;
    if (failure.empty() && length > config.max_position_embeddings) row.skipped = "longer than the context";
    if (row.skipped.empty())
      row.seconds = prefill_seconds(*model, length, s.seed + static_cast<uint64_t>(length), s.repeats);
    rows.push_back(row);
  }
  std::map<std::pair<int64_t, int32_t>, double> measured;  // (context, replica batch) → step seconds
  for (int32_t dp : dps) {
    for (int64_t context : s.contexts) {
      for (int batch : s.batch_sizes) {
        SweepRow row;
        row.layout = model::ParallelLayout{options.layout.tensor_parallel, options.layout.expert_parallel, dp};
        row.tokens = context;
        row.batch = batch;
        row.skipped = failure;
        if (!row.skipped.empty()) {
          rows.push_back(row);
          continue;
        }
        const int32_t replica_batch = (batch + dp - 1) / dp;
        auto found = measured.find({context, replica_batch});
        if (found == measured.end()) {
          const double budget_gib = s.kv_budget_gib * options.layout.tensor_parallel;  // the group's GPUs
          const double seconds = decode_step_seconds(*model, context, replica_batch, s.steps,
                                                     s.seed + static_cast<uint64_t>(batch), budget_gib);
          found = measured.emplace(std::pair{context, replica_batch}, seconds).first;
        }
        if (found->second < 0) {
          row.skipped = "KV cache over --kv-budget-gib";
        } else {
          row.seconds = found->second;
          row.source = dp == 1 ? "measured" : "replica×" + std::to_string(dp);
        }
        rows.push_back(row);
      }
    }
  }
  return rows;
}

nlohmann::json rows_to_json(const std::vector<SweepRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const SweepRow& row : rows) {
    out.push_back({{"prefill", row.kind == SweepRow::Kind::kPrefill},
                   {"tp", row.layout.tensor_parallel},
                   {"ep", row.layout.expert_parallel},
                   {"dp", row.layout.data_parallel},
                   {"tokens", row.tokens},
                   {"batch", row.batch},
                   {"seconds", row.seconds},
                   {"source", row.source},
                   {"skipped", row.skipped}});
  }
  return out;
}

std::vector<SweepRow> rows_from_json(const nlohmann::json& json) {
  std::vector<SweepRow> rows;
  for (const nlohmann::json& item : json) {
    SweepRow row;
    row.kind = item.at("prefill").get<bool>() ? SweepRow::Kind::kPrefill : SweepRow::Kind::kDecode;
    row.layout = {item.at("tp").get<int32_t>(), item.at("ep").get<bool>(), item.at("dp").get<int32_t>()};
    row.tokens = item.at("tokens").get<int64_t>();
    row.batch = item.at("batch").get<int32_t>();
    row.seconds = item.at("seconds").get<double>();
    row.source = item.at("source").get<std::string>();
    row.skipped = item.at("skipped").get<std::string>();
    rows.push_back(std::move(row));
  }
  return rows;
}

// A cuda group of TP > 1 runs as its own SPMD job (one process per GPU, apps/rank_launch.h): this
// process starts `bench sweep` again restricted to the group and reads its rows back.
std::vector<SweepRow> measure_group_in_processes(int argc, char** argv, const model::ParallelLayout& group) {
  char pattern[] = "/tmp/gossamer-sweep-XXXXXX";
  const std::string dir = ::mkdtemp(pattern);
  const std::string out = dir + "/rows.json";
  std::vector<std::string> args = {"/proc/self/exe", "bench"};
  args.insert(args.end(), argv, argv + argc);
  args.insert(args.end(), {"--only-tp", std::to_string(group.tensor_parallel), "--group-json", out});
  if (group.expert_parallel) args.push_back("--only-ep");
  const pid_t pid = start_self(std::move(args), "the " + group.describe() + " sweep job");
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::vector<SweepRow> rows;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) rows = rows_from_json(nlohmann::json::parse(read_text_file(out)));
  std::filesystem::remove_all(dir);
  GOSSAMER_CHECK(!rows.empty() || !(WIFEXITED(status) && WEXITSTATUS(status) == 0), "the ", group.describe(),
                 " sweep job wrote no rows");
  if (rows.empty())
    std::fprintf(stderr, "sweep: the %s job failed (its messages are above)\n", group.describe().c_str());
  return rows;
}

int run_bench_sweep(int argc, char** argv) {
  CLI::App cli{
      "Every parallel layout that fits the GPUs present: prefill latency and decode cost (reference tables, CSV, "
      "charts)"};
  SweepSettings s;
  std::string csv_out, series_out, plot_out, group_json;
  model::ModelOptions options;
  int gpus = 0, only_tp = 0;
  bool only_ep = false;
  cli.add_option("--model", s.model_dir, "checkpoint directory");
  cli.add_option("--load-format", s.load_format, "auto | dummy (random weights of --preset shapes, no disk)");
  cli.add_option("--preset", s.preset, "20b | 120b | tiny (with --load-format dummy)");
  cli.add_option("--device", s.device, "cuda | cpu (simulated ranks)");
  add_weights_flag(cli, options.weights);
  cli.add_option("--gpus", gpus, "GPUs (cpu: simulated ranks) the layouts may use; 0 = the GPUs visible (cpu: 1)");
  cli.add_option("--batch-sizes", s.batch_sizes, "decode batch sizes")->delimiter(',');
  cli.add_option("--contexts", s.contexts, "decode: cached context per sequence")->delimiter(',');
  cli.add_option("--prefill-lens", s.prefill_lens, "prefill input lengths (batch 1)")->delimiter(',');
  cli.add_option("--steps", s.steps, "timed decode steps per point")->check(CLI::PositiveNumber);
  cli.add_option("--repeats", s.repeats, "timed prefills per length (the median is reported)")
      ->check(CLI::PositiveNumber);
  cli.add_option("--kv-budget-gib", s.kv_budget_gib, "largest KV cache per GPU; bigger decode points are skipped");
  cli.add_option("--csv", csv_out, "also write every row as CSV");
  cli.add_option("--series-json", series_out,
                 "also write the decode cost-vs-speed series (per context, one line per layout: tok/s per sequence, "
                 "$ per 1M output tokens, batch) as JSON: the data of the --plot decode charts");
  cli.add_option("--plot", plot_out,
                 "also write the charts, one file per chart (PNG, or SVG for a .svg path): NAME_prefill.EXT (latency "
                 "against input tokens, one line per layout, points labelled with $ per 1M input tokens) and "
                 "NAME_decode_ctxC.EXT per context C ($ per 1M output tokens against tokens/s per sequence, one line "
                 "per layout, points labelled with the batch size)")
      ->type_name("NAME.EXT");
  cli.add_option("--seed", s.seed, "seed of the dummy weights and of the tokens");
  // Hidden: one cuda group's SPMD job (measure_group_in_processes) and its ranks.
  cli.add_option("--only-tp", only_tp, "")->group("");
  cli.add_flag("--only-ep", only_ep, "")->group("");
  cli.add_option("--group-json", group_json, "")->group("");
  add_rank_flags(cli, options);
  CLI11_PARSE(cli, argc, argv);
  GOSSAMER_CHECK(s.load_format == "dummy" || !s.model_dir.empty(), "give --model DIR or --load-format dummy");
  check_output_directory("--csv", csv_out);  // fail now, not after the measurements
  check_output_directory("--series-json", series_out);
  check_output_directory("--plot", plot_out);
  const int present = s.device == "cuda" ? model::visible_gpu_count() : -1;
  if (gpus == 0) gpus = s.device == "cuda" ? present : 1;
  GOSSAMER_CHECK(gpus >= 1, "no GPU visible: use --device cpu --gpus N to sweep simulated ranks");
  GOSSAMER_CHECK(present < 0 || gpus <= present, "--gpus ", gpus, " but ", present, " GPUs are present");
  const model::GptOssConfig config =
      s.load_format == "dummy" ? model::preset_config(s.preset) : model::GptOssConfig::from_file(s.model_dir);
  const std::string name = s.load_format == "dummy" ? "dummy-" + s.preset : s.model_dir;

  // One model per (TP, EP) group; its DP variants are derived from the same measurements.
  std::map<std::pair<int32_t, bool>, std::vector<int32_t>> groups;
  for (const model::ParallelLayout& layout : layouts_that_fit(config, gpus)) {
    if (only_tp > 0 && (layout.tensor_parallel != only_tp || layout.expert_parallel != only_ep)) continue;
    groups[{layout.tensor_parallel, layout.expert_parallel}].push_back(layout.data_parallel);
  }
  if (only_tp > 0) {  // one cuda group's SPMD job: every rank measures, rank 0 writes the rows
    GOSSAMER_CHECK(groups.size() == 1, "--only-tp ", only_tp, ": no such layout fits");
    options.layout = model::ParallelLayout{only_tp, only_ep, 1};
    RankLauncher ranks(s.device, argc, argv, options, {"bench"});
    const std::vector<SweepRow> rows = measure_group(s, config, options, groups.begin()->second);
    ranks.wait();
    if (options.rank == 0) std::ofstream(group_json) << rows_to_json(rows).dump() << "\n";
    return 0;
  }
  std::fprintf(stderr, "sweep: %s on %s, %d GPU(s): %zu tensor/expert-parallel groups\n", name.c_str(),
               s.device.c_str(), gpus, groups.size());
  std::vector<SweepRow> rows;
  for (const auto& [group, dps] : groups) {
    options.layout = model::ParallelLayout{group.first, group.second, 1};
    const std::vector<SweepRow> measured = s.device == "cuda" && options.layout.sharded()
                                               ? measure_group_in_processes(argc, argv, options.layout)
                                               : measure_group(s, config, options, dps);
    rows.insert(rows.end(), measured.begin(), measured.end());
  }
  std::sort(rows.begin(), rows.end(), [](const SweepRow& a, const SweepRow& b) {
    return std::tuple(a.kind, a.tokens, a.batch, a.gpus(), a.layout.tensor_parallel, a.layout.expert_parallel) <
           std::tuple(b.kind, b.tokens, b.batch, b.gpus(), b.layout.tensor_parallel, b.layout.expert_parallel);
  });
  print_prefill_table(stdout, name + " on " + s.device, rows);
  print_decode_table(stdout, name + " on " + s.device, rows);
  print_best_decode_table(stdout, rows);
  if (!csv_out.empty()) {
    write_sweep_csv(csv_out, rows);
    std::printf("\ncsv: %s\n", csv_out.c_str());
  }
  if (!series_out.empty()) {
    nlohmann::json charts = nlohmann::json::array();
    for (int64_t context : s.contexts) {
      nlohmann::json lines = nlohmann::json::array();
      for (const CostSeries& series : decode_cost_series(rows, context)) {
        lines.push_back({{"layout", series.label},
                         {"tokens_per_s_per_seq", series.tokens_per_s_per_seq},
                         {"dollars_per_million_output_tokens", series.dollars_per_million},
                         {"batch", series.batch}});
      }
      charts.push_back({{"model", name}, {"device", s.device}, {"context", context}, {"series", lines}});
    }
    std::ofstream(series_out) << charts.dump(2) << "\n";
    std::printf("series: %s\n", series_out.c_str());
  }
  if (!plot_out.empty()) {
    for (const std::string& path : write_sweep_plots(plot_out, rows, s.contexts, name + " on " + s.device))
      std::printf("plot: %s\n", path.c_str());
  }
  return 0;
}

}  // namespace

GOSSAMER_REGISTER_BENCH("sweep", "every TP/EP/DP layout that fits: prefill latency and decode cost tables, CSV, charts",
                        run_bench_sweep);

}  // namespace gossamer::app
