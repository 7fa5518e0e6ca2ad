// `gossamer bench serve`: load generator with `vllm bench serve`'s options and figures (src/bench/bench_serve.h).
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "command.h"
#include "core/error.h"
#include "bench/bench_serve.h"
#include "text/tokenizer.h"

namespace gossamer::app {

namespace {

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
  cli.add_option("--dataset-name", options.dataset, "random | multiturn (--num-prompts conversations of --multiturn-turns turns)")
      ->check(CLI::IsMember({"random", "multiturn"}));
  cli.add_option("--multiturn-turns", options.multiturn_turns, "multiturn: turns per conversation (user turns of --random-input-len tokens)");
  cli.add_option("--num-prompts", options.num_prompts, "requests to send");
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
  CLI11_PARSE(cli, argc, argv);

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
  std::fprintf(stderr, "bench serve: %d requests to http://%s:%d (%s), input %d, output %d, concurrency %s, rate %s\n",
               options.num_prompts, options.host.c_str(), options.port, options.backend.c_str(), options.random_input_len,
               options.random_output_len,
               options.max_concurrency > 0 ? std::to_string(options.max_concurrency).c_str() : "unlimited",
               request_rate.c_str());
  const auto result = server::run_bench_serve(options, *tokenizer);
  std::fputs(result.report.c_str(), stdout);
  if (save_result || !result_file.empty()) {
    const std::string path = result_file.empty() ? "bench-serve-result.json" : result_file;
    std::ofstream(path) << result.json.dump(2) << "\n";
    std::fprintf(stderr, "bench serve: result written to %s\n", path.c_str());
  }
  return result.json["completed"].get<int>() > 0 ? 0 : 1;
}

}  // namespace

GOSSAMER_REGISTER_BENCH("serve", "load generator for OpenAI-compatible servers (vllm bench serve's figures)", run_bench_serve);

}  // namespace gossamer::app
