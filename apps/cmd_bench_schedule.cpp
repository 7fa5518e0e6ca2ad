// `gossamer bench schedule`: predicts `bench serve` throughput, TTFT and TPOT of a scheduling policy from a
// cost model of the step, without a model or a GPU (issue #14 §6; engine/schedule_sim.h). The real
// Scheduler and BlockAllocator run the closed-loop load of `bench serve --concurrency-sweep` point by point
// (each point from an empty cache); a step costs a + b · decode_rows + c · prompt_tokens ms for each --cost.
// --policy old is the scheduler before #14 §6 (--no-decode-first: one 2048-token budget in running order),
// new the decode-first one with the scheduler flags given here (the same as `gossamer serve`'s).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "command.h"
#include "core/error.h"
#include "engine/schedule_sim.h"

namespace gossamer::app {
namespace {

struct NamedCost {
  std::string name;
  engine::StepCost cost;
};

NamedCost parse_cost(const std::string& text) {
  const size_t eq = text.find('=');
  GOSSAMER_CHECK(eq != std::string::npos, "--cost wants NAME=A,B,C (ms per step, per decode row, per prompt token)");
  NamedCost out{text.substr(0, eq), {}};
  std::vector<double> values;
  std::stringstream parts(text.substr(eq + 1));
  for (std::string part; std::getline(parts, part, ',');) values.push_back(std::stod(part));
  GOSSAMER_CHECK(values.size() == 3, "--cost ", text, ": three numbers A,B,C");
  out.cost = {values[0], values[1], values[2]};
  return out;
}

int run_bench_schedule(int argc, char** argv) {
  CLI::App cli{"gossamer bench schedule: predicted bench serve figures of a scheduling policy (no model, no GPU)"};
  std::vector<int32_t> concurrencies = {64, 256, 1024};
  int32_t prompts_per_concurrency = 2;
  engine::SimLoad load;
  load.input_len = 1022;  // + 64 shared = 1,086 tokens, the mean prompt of the H200 runs of --random-input-len 1000
  int64_t kv_tokens = 4'000'000;
  std::vector<std::string> costs = {"bench=9.13,0.01745,0.0077", "serving=0.5,0.0427,0.0427"};
  std::vector<std::string> policies = {"old", "new"};
  engine::EngineConfig config;
  config.max_num_seqs = 1024;
  cli.add_option("--concurrency", concurrencies, "the points (clients at once)")->delimiter(',');
  cli.add_option("--prompts-per-concurrency", prompts_per_concurrency, "requests per point = this × concurrency");
  cli.add_option("--input-len", load.input_len, "prompt tokens of each request after the shared prefix");
  cli.add_option("--shared-prefix", load.shared_prefix, "prompt tokens every request shares (the chat template)");
  cli.add_option("--output-len", load.output_len, "output tokens of each request (--ignore-eos)");
  cli.add_option("--kv-tokens", kv_tokens,
                 "KV cache positions of the full-attention pool (the serve log's 'max tokens in the cache')");
  cli.add_option("--cost", costs,
                 "NAME=A,B,C: step ms = A + B·decode_rows + C·prompt_tokens (repeatable; defaults: the H200 "
                 "bench step/prefill figures, and a fit of the H200 serving sweep)")
      ->take_all();
  cli.add_option("--policy", policies, "old (before #14 §6) and/or new (decode-first)")->delimiter(',');
  cli.add_option("--max-num-seqs", config.max_num_seqs, "as gossamer serve");
  cli.add_option("--max-num-batched-tokens", config.max_num_batched_tokens, "as gossamer serve (0 = auto)");
  cli.add_option("--max-prefill-tokens", config.max_prefill_tokens, "as gossamer serve (0 = auto)");
  cli.add_option("--long-prefill-token-threshold", config.long_prefill_token_threshold, "as gossamer serve");
  cli.add_option("--max-num-partial-prefills", config.max_num_partial_prefills, "as gossamer serve");
  cli.add_option("--max-step-ms", config.max_step_ms, "as gossamer serve (the modelled step times are measured)");
  cli.add_option("--block-size", config.block_size, "as gossamer serve");
  cli.add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", config.enable_prefix_caching,
               "as gossamer serve (default on)");
  CLI11_PARSE(cli, argc, argv);
  GOSSAMER_CHECK(kv_tokens >= config.block_size, "--kv-tokens must hold a block");
  config.num_kv_blocks = static_cast<int32_t>(std::min<int64_t>(kv_tokens / config.block_size, int64_t{1} << 30));

  std::printf("bench schedule: %d + %d prompt tokens, %d output, %lld KV positions, max_num_seqs %d\n",
              load.shared_prefix, load.input_len, load.output_len, static_cast<long long>(kv_tokens),
              config.max_num_seqs);
  for (const std::string& text : costs) {
    const NamedCost cost = parse_cost(text);
    for (const std::string& policy : policies) {
      GOSSAMER_CHECK(policy == "old" || policy == "new", "--policy: old or new, got '", policy, "'");
      engine::EngineConfig point_config = config;
      if (policy == "old") {
        point_config.decode_first = false;
        point_config.max_prefill_tokens = 0;
      }
      engine::EngineConfig shown = point_config;
      shown.resolve_budgets();
      std::printf(
          "\ncost %s (a %.4g ms, b %.4g ms/row, c %.4g ms/prompt token), policy %s: "
          "max_num_batched_tokens %d, max_prefill_tokens %d, long_prefill_token_threshold %d, "
          "max_num_partial_prefills %d\n\n%s\n",
          cost.name.c_str(), cost.cost.fixed_ms, cost.cost.per_decode_ms, cost.cost.per_prompt_ms, policy.c_str(),
          shown.max_num_batched_tokens, shown.max_prefill_tokens, shown.long_prefill_token_threshold,
          policy == "old" ? 0 : shown.max_num_partial_prefills, engine::sim_table_header().c_str());
      for (const int32_t concurrency : concurrencies) {
        engine::SimLoad point = load;
        point.concurrency = concurrency;
        point.num_prompts = prompts_per_concurrency * concurrency;
        const engine::SimResult result = engine::simulate(point_config, point, cost.cost);
        std::printf("%s\n", engine::format_sim_row(point, result).c_str());
      }
    }
  }
  return 0;
}

}  // namespace

GOSSAMER_REGISTER_BENCH("schedule",
                        "predicted bench serve figures of the scheduler under a step cost model (no model, no GPU)",
                        run_bench_schedule);

}  // namespace gossamer::app
