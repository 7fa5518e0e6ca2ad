// `gossamer bench serve`: load generator with `vllm bench serve`'s options and figures (src/bench/bench_serve.h).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "bench/bench_serve.h"
#include "bench/concurrency_sweep.h"
#include "bench/server_counters.h"
#include "command.h"
#include "core/error.h"
#include "text/tokenizer.h"

namespace gossamer::app {

namespace {

// --concurrency-sweep: one load-generator run per concurrency, then the table (stdout), chart and JSON.
int run_sweep(const server::BenchServeOptions& options, const server::ConcurrencySweepOptions& sweep,
              const text::Tokenizer& tokenizer, const std::string& plot, const std::string& json_path,
              const std::vector<bench::ChartSeries>& earlier) {
  std::string model_id;
  const auto rows = server::run_concurrency_sweep(
      options, sweep, tokenizer, [&](const server::SweepRow& row, const server::BenchServeResult& result) {
        model_id = result.json["model_id"].get<std::string>();
        std::fprintf(stderr, "bench serve: concurrency %d: %d/%d completed, %.1f output tok/s\n", row.concurrency,
                     row.completed, row.num_prompts, row.output_tokens_per_s);
      });
  char title[256];
  std::snprintf(title, sizeof(title), "%s, %d in / %d out tokens", model_id.c_str(), options.random_input_len,
                options.random_output_len);
  std::printf("gossamer bench serve --concurrency-sweep: %s\n\n%s", title,
              server::format_sweep_table(rows, sweep).c_str());
  const std::string server_table = server::format_server_table(rows);
  if (!server_table.empty())
    std::printf("\nThe server's engine over each point (/metrics deltas):\n\n%s", server_table.c_str());
  if (!json_path.empty()) {
    nlohmann::json out = server::sweep_json(rows, sweep);
    out["model_id"] = model_id;
    out["random_input_len"] = options.random_input_len;
    out["random_output_len"] = options.random_output_len;
    std::ofstream(json_path) << out.dump(2) << "\n";
    std::printf("\njson: %s\n", json_path.c_str());
  }
  if (!plot.empty()) {
    bench::write_chart(server::sweep_chart(rows, sweep, std::string("bench serve sweep: ") + title, earlier), plot);
    std::printf("\nplot: %s\n", plot.c_str());
  }
  const bool all_failed =
      std::all_of(rows.begin(), rows.end(), [](const server::SweepRow& r) { return r.completed == 0; });
  return all_failed ? 1 : 0;
}

int run_bench_serve(int argc, char** argv) {
  CLI::App cli{"Load-test an OpenAI-compatible server (vllm bench serve's random dataset, options and figures)"};
  cli.option_defaults()->always_capture_default();
  server::BenchServeOptions options;
  std::string base_url, request_rate = "inf", result_file, percentiles = "99";
  bool save_result = false;
  cli.add_option("--base-url", base_url, "server URL, e.g. http://127.0.0.1:8000 (overrides --host/--port)");
  cli.add_option("--host", options.host, "server host");
  cli.add_option("--port", options.port, "server port");
  cli.add_option("--backend", options.backend, "openai-chat | openai")->check(CLI::IsMember({"openai-chat", "openai"}));
  cli.add_option("--endpoint", options.endpoint, "API path (default from --backend)");
  cli.add_option("--model", options.model, "model id (default: the first from /v1/models)");
  cli.add_option("--dataset-name", options.dataset,
                 "random | multiturn (--num-prompts conversations of --multiturn-turns turns)")
      ->check(CLI::IsMember({"random", "multiturn"}));
  cli.add_option("--multiturn-turns", options.multiturn_turns,
                 "multiturn: turns per conversation (user turns of --random-input-len tokens)");
  CLI::Option* num_prompts_option = cli.add_option("--num-prompts", options.num_prompts, "requests to send");
  cli.add_option("--random-input-len", options.random_input_len, "prompt tokens per request");
  cli.add_option("--random-output-len", options.random_output_len, "max output tokens per request");
  cli.add_option("--random-range-ratio", options.random_range_ratio, "lengths vary uniformly by this ratio");
  cli.add_option("--request-rate", request_rate, "requests per second, or inf (all at once)");
  cli.add_option("--burstiness", options.burstiness, "gamma shape of arrival gaps (1 = Poisson)");
  cli.add_option("--max-concurrency", options.max_concurrency, "most requests in flight (0 = unlimited)");
  cli.add_flag("--ignore-eos", options.ignore_eos, "ask the server to ignore stop tokens");
  cli.add_option("--response-format", options.response_format, "chat: constrain every answer (json_object)")
      ->check(CLI::IsMember({"json_object"}));
  cli.add_option("--seed", options.seed, "dataset and arrival seed");
  cli.add_option("--goodput", options.goodput, "SLOs like ttft:500 tpot:50 e2el:2000 (ms)");
  cli.add_option("--metric-percentiles", percentiles, "comma-separated percentiles to report");
  cli.add_flag("--save-result", save_result, "write the JSON result to --result-filename");
  cli.add_option("--result-filename", result_file, "JSON result file (default bench-serve-result.json)");
  server::ConcurrencySweepOptions sweep;
  std::string sweep_plot, sweep_json;
  cli.add_option("--concurrency-sweep", sweep.concurrencies,
                 "run once per max concurrency (e.g. 1,4,16,64,256,1024) and print the throughput-latency table")
      ->delimiter(',');
  cli.add_option("--prompts-per-concurrency", sweep.prompts_per_concurrency,
                 "sweep: each point sends this x its concurrency requests, at least --num-prompts when that is given "
                 "(0 = --num-prompts)");
  cli.add_option("--dollars-per-gpu-hour", sweep.dollars_per_gpu_hour,
                 "sweep: price of one GPU-hour for the cost column");
  cli.add_option("--num-gpus", sweep.num_gpus, "sweep: GPUs the server uses (the cost counts them all)");
  cli.add_option("--sweep-plot", sweep_plot, "sweep: write the cost-vs-speed chart (PNG, or SVG for a .svg path)");
  cli.add_option("--sweep-json", sweep_json, "sweep: write the table as JSON");
  std::vector<std::string> compare_files;
  cli.add_option("--sweep-label", sweep.label,
                 "sweep: this run's name on the chart and in the JSON (e.g. the server flags)");
  cli.add_option("--sweep-compare", compare_files, "sweep: earlier --sweep-json files drawn on the same chart")
      ->delimiter(',');
  CLI11_PARSE(cli, argc, argv);
  const bool sweeping = !sweep.concurrencies.empty();
  GOSSAMER_CHECK(sweeping || (sweep_plot.empty() && sweep_json.empty() && sweep.prompts_per_concurrency == 0 &&
                              sweep.label.empty() && compare_files.empty()),
                 "--sweep-plot, --sweep-json, --sweep-label, --sweep-compare and --prompts-per-concurrency need "
                 "--concurrency-sweep");
  GOSSAMER_CHECK(compare_files.empty() || !sweep_plot.empty(), "--sweep-compare draws on the chart: give --sweep-plot");
  // NOTE: --num-prompts' default (100) is no floor under --prompts-per-concurrency: a 1,000-token-output sweep
  // from concurrency 1 would otherwise send 100 requests one at a time (H200, 2026-12-01: a 1,4,...,1024
  // sweep at 1000/1000 outran a 120 s limit at its first points).
  if (sweeping && sweep.prompts_per_concurrency > 0 && num_prompts_option->count() == 0) options.num_prompts = 0;
  std::vector<bench::ChartSeries> earlier;
  for (const std::string& file : compare_files) {  // read now, not after the measurements
    const auto saved = nlohmann::json::parse(read_input(file), nullptr, false);
    GOSSAMER_CHECK(!saved.is_discarded(), "--sweep-compare ", file, ": not JSON");
    try {
      earlier.push_back(server::sweep_series_from_json(saved));
    } catch (const Error& error) {
      GOSSAMER_THROW("--sweep-compare ", file, ": ", error.what());
    }
  }
  GOSSAMER_CHECK(!sweeping || options.max_concurrency == 0, "give --concurrency-sweep or --max-concurrency, not both");
  check_output_directory("--sweep-plot", sweep_plot);  // fail now, not after the measurements
  check_output_directory("--sweep-json", sweep_json);

  if (!base_url.empty()) {
    std::string rest = base_url;
    const auto scheme = rest.find("://");
    if (scheme != std::string::npos) {
      GOSSAMER_CHECK(rest.substr(0, scheme) == "http", "only http:// is supported");
      rest = rest.substr(scheme + 3);
    }
    rest = rest.substr(0, rest.find('/'));
    const auto colon = rest.rfind(':');
    options.host = rest.substr(0, colon);
    options.port = colon == std::string::npos ? 80 : std::stoi(rest.substr(colon + 1));
  }
  options.request_rate = request_rate == "inf" ? std::numeric_limits<double>::infinity() : std::stod(request_rate);
  options.percentiles.clear();
  for (size_t start = 0; start < percentiles.size();) {
    const size_t comma = percentiles.find(',', start);
    options.percentiles.push_back(std::stod(percentiles.substr(start, comma - start)));
    start = comma == std::string::npos ? percentiles.size() : comma + 1;
  }
  if (const char* key = std::getenv("OPENAI_API_KEY")) options.api_key = key;

  const auto tokenizer = text::Tokenizer::load_default();
  if (sweeping) return run_sweep(options, sweep, *tokenizer, sweep_plot, sweep_json, earlier);
  std::fprintf(stderr, "bench serve: %d requests to http://%s:%d (%s), input %d, output %d, concurrency %s, rate %s\n",
               options.num_prompts, options.host.c_str(), options.port, options.backend.c_str(),
               options.random_input_len, options.random_output_len,
               options.max_concurrency > 0 ? std::to_string(options.max_concurrency).c_str() : "unlimited",
               request_rate.c_str());
  const auto before = server::scrape_server_counters(options.host, options.port, options.api_key);
  const auto result = server::run_bench_serve(options, *tokenizer);
  std::fputs(result.report.c_str(), stdout);
  // The server's engine during the run (/metrics deltas; only from a server that exports them).
  const auto after =
      before ? server::scrape_server_counters(options.host, options.port, options.api_key) : std::nullopt;
  if (before && after) {
    const server::ServerActivity activity =
        server::server_activity(*before, *after, result.json.value("duration", 0.0));
    std::printf(
        "Server engine (/metrics): %.0f steps, %.2f ms per step, %.1f tokens per step; token masks: %.0f masked "
        "steps, %.3f ms per masked step\n",
        activity.steps, activity.ms_per_step, activity.tokens_per_step, activity.masked_steps,
        activity.mask_ms_per_masked_step);
    std::printf(
        "Server engine loop, ms per step: wait (device) %.2f, schedule %.2f, collect %.2f, launch %.2f, "
        "postprocess %.2f, idle %.2f; launched ahead %.1f%% of steps\n",
        activity.wait_ms_per_step, activity.schedule_ms_per_step, activity.collect_ms_per_step,
        activity.launch_ms_per_step, activity.postprocess_ms_per_step, activity.idle_ms_per_step,
        100.0 * activity.launched_ahead_share);
  }
  if (save_result || !result_file.empty()) {
    const std::string path = result_file.empty() ? "bench-serve-result.json" : result_file;
    std::ofstream(path) << result.json.dump(2) << "\n";
    std::fprintf(stderr, "bench serve: result written to %s\n", path.c_str());
  }
  return result.json["completed"].get<int>() > 0 ? 0 : 1;
}

}  // namespace

GOSSAMER_REGISTER_BENCH("serve", "load generator for OpenAI-compatible servers (vllm bench serve's figures)",
                        run_bench_serve);

}  // namespace gossamer::app
