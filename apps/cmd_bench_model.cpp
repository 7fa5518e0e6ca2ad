// `gossamer bench prefill` and `gossamer bench decode`: the reference deployment's tables, measured.
//
// prefill: batch 1 at each input length; latency, tokens/s, $ per million input tokens at $3.00/GPU-hour.
// decode: B sequences each with a synthetic context of C cached positions (zeroed KV: attention reads
// the real number of bytes), one new token per sequence per step; tokens/s per sequence and in total,
// $ per million output tokens. Sliding-window layers keep only their window (the engine's ring) unless --no-ring.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "bench/chart.h"
#include "command.h"
#include "core/error.h"
#include "core/random.h"
#include "model/loader.h"

namespace gossamer::app {

namespace {

constexpr double kDollarsPerGpuHour = 3.00;
constexpr int32_t kBenchBlockSize = 16;

struct ModelChoice {
  std::string model_dir, load_format = "auto", preset = "20b", device = "cuda";
  uint64_t seed = 0;
  double gpu_memory_limit_gib = 0;
  model::ModelOptions options;
  void add_options(CLI::App& cli) {
    cli.add_option("--gpu-memory-limit-gib", gpu_memory_limit_gib,
                   "cuda: behave as a GPU of this many GiB (e.g. 80 on an H200); 0 = the whole GPU")
        ->check(CLI::NonNegativeNumber);
    cli.add_option("--weights", options.weights,
                   "cuda weight format: fp8 | bf16 | mxfp4 (MXFP4 experts kept as shipped)")
        ->check(CLI::IsMember({"fp8", "bf16", "mxfp4"}));
    cli.add_flag(
        "--enforce-eager", [this](int64_t) { options.cuda_graphs = false; }, "no CUDA graphs for decode steps");
    cli.add_option("--dense-gemm", options.dense_gemm,
                   "cuda: gossamer (default) | cublaslt (FP8 qkv/o above the decode GEMV's rows on cuBLASLt, where it "
                   "is faster)")
        ->check(CLI::IsMember({"cublaslt", "gossamer"}));
    cli.add_option("--model", model_dir, "checkpoint directory");
    cli.add_option("--load-format", load_format, "auto | dummy (random weights of --preset shapes, no disk)");
    cli.add_option("--preset", preset, "20b | 120b | tiny (with --load-format dummy)");
    cli.add_option("--device", device, "cuda | cpu");
    cli.add_option("--seed", seed, "seed of the dummy weights and of the prompt tokens");
  }
  std::unique_ptr<model::Model> load() const {
    const auto start = std::chrono::steady_clock::now();
    GOSSAMER_CHECK(load_format == "dummy" || !model_dir.empty(), "give --model DIR or --load-format dummy");
    GOSSAMER_CHECK(gpu_memory_limit_gib == 0 || device == "cuda", "--gpu-memory-limit-gib needs --device cuda");
    model::limit_gpu_memory(static_cast<int64_t>(gpu_memory_limit_gib * double(int64_t{1} << 30)));
    auto model = load_format == "dummy" ? model::load_dummy_model(preset, seed, device, options)
                                        : model::load_model(model_dir, device, options);
    std::fprintf(stderr, "loaded %s on %s (weights %s, %.1f GiB) in %.1f s\n",
                 load_format == "dummy" ? ("dummy " + preset).c_str() : model_dir.c_str(),
                 model->backend_name().c_str(), device == "cuda" ? options.weights.c_str() : "f32",
                 static_cast<double>(model->weight_bytes()) / double(1u << 30),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return model;
  }
  std::string name() const { return load_format == "dummy" ? "dummy-" + preset : model_dir; }
};

std::vector<int32_t> random_tokens(uint64_t seed, int64_t count, int32_t vocab) {
  SplitMix64 rng(seed);
  std::vector<int32_t> tokens(static_cast<size_t>(count));
  for (int32_t& token : tokens)
    token = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(std::min(vocab, 199998)));
  return tokens;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void write_json(const std::string& path, const nlohmann::json& value) {
  if (path.empty()) return;
  std::ofstream out(path);
  out << value.dump(2) << "\n";
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
  CLI11_PARSE(cli, argc, argv);
  auto model = choice.load();
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  GOSSAMER_CHECK(longest <= model->config().max_position_embeddings, "input length ", longest, " exceeds the context");
  const int32_t blocks = static_cast<int32_t>((longest + kBenchBlockSize - 1) / kBenchBlockSize);
  model->allocate_kv_cache(blocks, kBenchBlockSize);
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  std::iota(table.begin(), table.end(), 0);
  std::vector<float> logits;
  auto run_once = [&](const std::vector<int32_t>& tokens) {
    model::ForwardBatch batch;
    batch.sequences.push_back(model::SequenceInput{tokens, 0, table, model::LogitsWanted::kLast});
    const auto start = std::chrono::steady_clock::now();
    model->forward(batch, logits);  // returns after the logits reached the host
    return seconds_since(start);
  };
  run_once(random_tokens(choice.seed + 99, std::min<int64_t>(longest, 2048), model->config().vocab_size));  // warm-up
  nlohmann::json results = nlohmann::json::array();
  std::printf("| model | input tokens | latency (s) | tokens/s | $ / 1M input tokens |\n|---|---|---|---|---|\n");
  for (int64_t length : lengths) {
    const auto tokens = random_tokens(choice.seed + static_cast<uint64_t>(length), length, model->config().vocab_size);
    std::vector<double> times;
    for (int r = 0; r < std::max(1, repeats); ++r) times.push_back(run_once(tokens));
    std::sort(times.begin(), times.end());
    const double latency = times[times.size() / 2];
    const double cost = kDollarsPerGpuHour / 3600.0 * latency / static_cast<double>(length) * 1e6;
    std::printf("| %s (%s) | %lld | %.3f | %.0f | %.4f |\n", choice.name().c_str(), model->backend_name().c_str(),
                static_cast<long long>(length), latency, static_cast<double>(length) / latency, cost);
    std::fflush(stdout);
    results.push_back({{"input_tokens", length},
                       {"latency_s", latency},
                       {"tokens_per_s", length / latency},
                       {"dollars_per_million_input_tokens", cost},
                       {"runs_s", times}});
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
  cli.add_option("--json-out", json_out, "also write the results as JSON");
  cli.add_option("--plot", plot_out,
                 "also write a chart (PNG, or SVG for a .svg path): $ per 1M output tokens (log scale) against "
                 "tokens/s per sequence, "
                 "one line per context, points labelled with the batch size");
  CLI11_PARSE(cli, argc, argv);
  if (!plot_out.empty()) {  // fail now, not after the measurements
    const std::filesystem::path parent = std::filesystem::path(plot_out).parent_path();
    std::error_code error;
    GOSSAMER_CHECK(parent.empty() || std::filesystem::is_directory(parent, error), "--plot ", plot_out,
                   ": no directory ", parent.string());
  }
  auto model = choice.load();
  nlohmann::json results = nlohmann::json::array();
  std::printf(
      "| model | context | batch | step (ms) | tok/s per seq | tok/s total | $ / 1M output tokens |\n"
      "|---|---|---|---|---|---|---|\n");
  for (int64_t context : contexts) {
    for (int batch_size : batch_sizes) {
      const int64_t per_seq_blocks = (context + steps + 4 + kBenchBlockSize - 1) / kBenchBlockSize;
      // The ring (as the engine does it): sliding layers hold only the last window + margin + the steps.
      const int32_t layers = std::max(1, model->config().num_layers);
      const int32_t sliding_layers = ring ? model->num_sliding_layers() : 0;
      const int64_t ring_positions = model->config().sliding_window + model::kSlidingKeepMargin + steps + 4;
      const int64_t ring_per_seq =
          sliding_layers > 0 ? std::min(per_seq_blocks, ring_positions / kBenchBlockSize + 2) : 0;
      const double block_bytes = static_cast<double>(model->kv_bytes_per_block());
      const double kv_gib =
          (static_cast<double>(per_seq_blocks * batch_size) * block_bytes * (layers - sliding_layers) / layers +
           static_cast<double>(ring_per_seq * batch_size) * block_bytes * sliding_layers / layers) /
          (1u << 30);
      if (kv_gib > kv_budget_gib) {
        std::printf("| %s | %lld | %d | skipped: KV cache %.0f GiB > budget %.0f GiB | | | |\n", choice.name().c_str(),
                    static_cast<long long>(context), batch_size, kv_gib, kv_budget_gib);
        continue;
      }
      model->allocate_kv_cache(static_cast<int32_t>(per_seq_blocks * batch_size), kBenchBlockSize,
                               static_cast<int32_t>(ring_per_seq * batch_size));
      std::vector<std::vector<int32_t>> tables(static_cast<size_t>(batch_size)), sliding_tables(tables.size());
      for (int b = 0; b < batch_size; ++b) {
        tables[static_cast<size_t>(b)].resize(static_cast<size_t>(per_seq_blocks));
        std::iota(tables[static_cast<size_t>(b)].begin(), tables[static_cast<size_t>(b)].end(),
                  static_cast<int32_t>(b * per_seq_blocks));
        if (ring_per_seq == 0) continue;
        // The last ring_per_seq blocks get the sequence's own ring blocks; older entries are stale (never read).
        std::vector<int32_t>& sliding = sliding_tables[static_cast<size_t>(b)];
        sliding.resize(static_cast<size_t>(per_seq_blocks));
        const int64_t first_ring = per_seq_blocks - ring_per_seq;
        for (int64_t i = 0; i < per_seq_blocks; ++i) {
          sliding[static_cast<size_t>(i)] =
              static_cast<int32_t>(b * ring_per_seq + std::max<int64_t>(0, i - first_ring));
        }
      }
      const auto tokens =
          random_tokens(choice.seed + static_cast<uint64_t>(batch_size), batch_size, model->config().vocab_size);
      std::vector<float> logits;
      auto step = [&](int index) {
        model::ForwardBatch batch;
        for (int b = 0; b < batch_size; ++b) {
          batch.sequences.push_back(model::SequenceInput{
              std::span(tokens).subspan(static_cast<size_t>(b), 1), static_cast<int32_t>(context + index),
              tables[static_cast<size_t>(b)], model::LogitsWanted::kLast, sliding_tables[static_cast<size_t>(b)]});
        }
        model->forward(batch, logits);
      };
      for (int i = 0; i < 3; ++i) step(i);  // warm-up
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < steps; ++i) step(3 + i);
      const double per_step = seconds_since(start) / steps;
      const double total = batch_size / per_step;
      const double cost = kDollarsPerGpuHour / 3600.0 / total * 1e6;
      std::printf("| %s (%s) | %lld | %d | %.2f | %.1f | %.0f | %.3f |\n", choice.name().c_str(),
                  model->backend_name().c_str(), static_cast<long long>(context), batch_size, per_step * 1e3,
                  1.0 / per_step, total, cost);
      std::fflush(stdout);
      results.push_back({{"context", context},
                         {"batch", batch_size},
                         {"step_ms", per_step * 1e3},
                         {"tokens_per_s_per_seq", 1.0 / per_step},
                         {"tokens_per_s_total", total},
                         {"dollars_per_million_output_tokens", cost}});
    }
  }
  write_json(json_out,
             {{"bench", "decode"}, {"model", choice.name()}, {"device", model->backend_name()}, {"results", results}});
  if (!plot_out.empty()) {
    bench::ChartSpec plot;
    plot.title =
        "gossamer bench decode: " + choice.name() + " (" + model->backend_name() + "), point labels = batch size";
    plot.x_label = "tokens/s per sequence";
    char price[32];
    std::snprintf(price, sizeof(price), "%.2f", kDollarsPerGpuHour);
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
