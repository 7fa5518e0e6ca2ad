// ScheduleSim: the real Scheduler and BlockAllocator driven by a closed-loop load with a step cost model,
// no model and no GPU, so a scheduling policy can be predicted before it is measured (issue #14 §6).
//
// The load is `gossamer bench serve --max-concurrency C --num-prompts N --random-input-len I
// --random-output-len O --ignore-eos`: C clients, each sends its next request the moment its previous one
// finishes, until N were sent. Every prompt is `shared_prefix` tokens common to all (the chat template)
// then `input_len` tokens of its own, so the prefix cache hits what the server's would. A step costs
//   seconds = a + b · decode_rows + c · prompt_tokens
// (StepCost; SchedulerOutput::num_prompt_tokens are the prompt/recompute tokens, the other rows decode).
// The loop is the sequential one (schedule → run → postprocess); the token arrives at the step's end.
//
// Contract: deterministic (no clocks, no threads); simulate() throws gossamer::Error on a bad config.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine_config.h"

namespace gossamer::engine {

struct StepCost {
  double fixed_ms = 0.0;       // a: per step
  double per_decode_ms = 0.0;  // b: per decode row
  double per_prompt_ms = 0.0;  // c: per prompt (prefill or recompute) token
  double step_ms(int32_t decode_rows, int32_t prompt_tokens) const {
    return fixed_ms + per_decode_ms * decode_rows + per_prompt_ms * prompt_tokens;
  }
};

struct SimLoad {
  int32_t concurrency = 64;
  int32_t num_prompts = 128;
  int32_t input_len = 1000;
  int32_t output_len = 200;
  int32_t shared_prefix = 64;  // tokens every prompt starts with (gossamer's chat template is ~60)
};

struct SimResult {
  int64_t num_steps = 0;
  double seconds = 0.0;
  double output_tokens_per_s = 0.0;
  double mean_ttft_ms = 0.0, p99_ttft_ms = 0.0;
  double mean_tpot_ms = 0.0, p99_tpot_ms = 0.0;
  double mean_step_ms = 0.0, max_step_ms = 0.0;
  double mean_decode_rows = 0.0;    // per step
  double mean_prompt_tokens = 0.0;  // per step
  int32_t max_running = 0;
  int64_t num_preemptions = 0;
  // Decode-first invariant, checked every step: a running request with one token to compute that did not
  // get it (while the budget had room for all decodes). Always 0 under decode_first.
  int64_t num_skipped_decodes = 0;
};

// `config` is resolved here (budgets; num_kv_blocks must be set). Prefix caching as config says.
SimResult simulate(const EngineConfig& config, const SimLoad& load, const StepCost& cost);

// A one-line row for tables: concurrency, steps, tok/s, TTFT, TPOT, rows and tokens per step.
std::string format_sim_row(const SimLoad& load, const SimResult& result);
std::string sim_table_header();

}  // namespace gossamer::engine
