// The engine counters a server exports on /metrics (gossamer's `gossamer:` and vLLM's `vllm:` names),
// read before and after a load-generator run: what the scheduler did during it (steps, tokens per step,
// decode rows per step, preemptions, the time token masks took). Support for tuning the scheduler at load
// (issue #14, item 6) and for structured output's cost (issue #16).
//
// Contract: parse_server_counters() sums each counter over its label sets, under `gossamer:` when the
// text has any of them there, else under `vllm:` (never both: gossamer exports vLLM's names too), and
// returns nullopt when the text has none of them (not a gossamer or vLLM server);
// scrape_server_counters() returns nullopt when GET /metrics fails or answers non-200 (never throws for it).
#pragma once

#include <optional>
#include <string>

namespace gossamer::server {

struct ServerCounters {
  double preemptions = 0.0;        // num_preemptions_total
  double prompt_tokens = 0.0;      // prompt_tokens_total (computed prompt tokens)
  double generation_tokens = 0.0;  // generation_tokens_total
  double steps = 0.0;              // iteration_tokens_total_count: engine steps
  double step_tokens = 0.0;        // iteration_tokens_total_sum: tokens run in those steps
  // gossamer only (structured output): steps that filled token masks, and the seconds spent filling them
  // (token_mask_fill_seconds_count and _sum).
  double masked_steps = 0.0;
  double token_mask_seconds = 0.0;
  // gossamer only: the engine thread's seconds by phase (engine_loop_seconds_total{phase=...}; the
  // fields of engine::EngineLoopSeconds).
  double launched_ahead = 0.0;  // gossamer only: engine_steps_launched_ahead_total (async scheduling)
  double loop_idle = 0.0, loop_schedule = 0.0, loop_wait = 0.0, loop_collect = 0.0, loop_launch = 0.0,
         loop_postprocess = 0.0;
};

std::optional<ServerCounters> parse_server_counters(const std::string& metrics_text);
std::optional<ServerCounters> scrape_server_counters(const std::string& host, int port, const std::string& api_key);

// What happened between two scrapes, per engine step; `seconds` is the wall time between them.
struct ServerActivity {
  double steps = 0.0, preemptions = 0.0;
  double tokens_per_step = 0.0, generated_per_step = 0.0, prompt_per_step = 0.0;
  double ms_per_step = 0.0;  // seconds / steps: the mean step while the server was busy the whole time
  double masked_steps = 0.0;
  double launched_ahead_share = 0.0;     // of the steps, the share launched while the one before was in flight
  double mask_ms_per_masked_step = 0.0;  // token-mask fill time per step that had masks (the device waits)
  // The engine thread's ms per step by phase (gossamer only; all 0 from a server without them): the host
  // blocked on the device (wait), and the host's own work.
  double wait_ms_per_step = 0.0, schedule_ms_per_step = 0.0, collect_ms_per_step = 0.0, launch_ms_per_step = 0.0,
         postprocess_ms_per_step = 0.0, idle_ms_per_step = 0.0;
};
ServerActivity server_activity(const ServerCounters& before, const ServerCounters& after, double seconds);

}  // namespace gossamer::server
