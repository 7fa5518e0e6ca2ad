#include "engine/schedule_sim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/error.h"
#include "engine/block_allocator.h"
#include "engine/request.h"
#include "engine/scheduler.h"

namespace gossamer::engine {
namespace {

double mean_of(const std::vector<double>& values) {
  if (values.empty()) return 0.0;
  double sum = 0.0;
  for (const double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

// numpy.percentile's default (linear between the closest ranks), as `bench serve` reports it.
double percentile_of(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double rank = p / 100.0 * static_cast<double>(values.size() - 1);
  const auto low = static_cast<size_t>(std::floor(rank));
  const size_t high = std::min(low + 1, values.size() - 1);
  return values[low] + (values[high] - values[low]) * (rank - static_cast<double>(low));
}

}  // namespace

SimResult simulate(const EngineConfig& base, const SimLoad& load, const StepCost& cost) {
  GOSSAMER_CHECK(load.concurrency >= 1 && load.num_prompts >= 1 && load.input_len >= 1 && load.output_len >= 1 &&
                     load.shared_prefix >= 0,
                 "simulate: concurrency, prompts, input and output lengths must be >= 1");
  EngineConfig config = base;
  config.num_sliding_kv_blocks = 0;  // the ring changes the sliding pool only; the full pool decides
  config.sliding_window = 0;
  const int32_t prompt_len = load.shared_prefix + load.input_len;
  if (config.max_model_len == 0) config.max_model_len = prompt_len + load.output_len;
  config.resolve_budgets();
  config.validate_resolved();
  BlockAllocator allocator(config.num_kv_blocks, config.enable_prefix_caching ? config.block_size : 0);
  Scheduler scheduler(config, allocator);

  std::vector<std::unique_ptr<Request>> requests;
  std::vector<double> arrival, first_token, ttft, tpot;
  std::vector<Request*> active;
  double now_ms = 0.0;
  const auto submit = [&] {
    if (static_cast<int32_t>(requests.size()) >= load.num_prompts) return;
    auto request = std::make_unique<Request>();
    request->id = static_cast<RequestId>(requests.size() + 1);
    request->prompt.reserve(static_cast<size_t>(prompt_len));
    for (int32_t i = 0; i < load.shared_prefix; ++i) request->prompt.push_back(1 + i);
    for (int32_t i = 0; i < load.input_len; ++i) {
      request->prompt.push_back(100'000 + static_cast<TokenId>((request->id * 7919 + i * 31) % 100'000));
    }
    request->max_total_tokens = prompt_len + load.output_len;
    arrival.push_back(now_ms);
    first_token.push_back(-1.0);
    active.push_back(request.get());
    scheduler.add(request.get());
    requests.push_back(std::move(request));
  };
  for (int32_t c = 0; c < load.concurrency; ++c) submit();

  SimResult result;
  double decode_rows_total = 0.0, prompt_tokens_total = 0.0;
  std::vector<int64_t> marks;
  while (scheduler.has_work()) {
    // Which running requests wait for one decode token, and their marks, to check decode-first.
    marks.assign(active.size(), 0);
    for (size_t i = 0; i < active.size(); ++i) marks[i] = active[i]->scheduled_step;
    const SchedulerOutput out = scheduler.schedule();
    GOSSAMER_CHECK(!out.empty(), "simulate: the scheduler stalled with ", scheduler.num_running(), " running and ",
                   scheduler.num_waiting(), " waiting");
    const int32_t decode_rows = out.num_tokens - out.num_prompt_tokens;
    if (decode_rows < config.max_num_batched_tokens) {
      for (size_t i = 0; i < active.size(); ++i) {
        const Request* request = active[i];
        const bool waits = request->state == RequestState::kRunning && request->num_uncomputed() == 1;
        if (waits && request->scheduled_step == marks[i]) ++result.num_skipped_decodes;
      }
    }
    const double step_ms = cost.step_ms(decode_rows, out.num_prompt_tokens);
    scheduler.observe_step(decode_rows, out.num_prompt_tokens, step_ms / 1000.0);
    now_ms += step_ms;
    ++result.num_steps;
    result.max_step_ms = std::max(result.max_step_ms, step_ms);
    decode_rows_total += decode_rows;
    prompt_tokens_total += out.num_prompt_tokens;
    result.max_running = std::max(result.max_running, scheduler.num_running());
    int32_t finished = 0;
    for (const ScheduledSequence& seq : out.sequences) {
      Request* request = seq.request;
      request->num_computed += seq.num_new;
      if (!seq.sample) continue;
      request->output.push_back(7);
      const auto index = static_cast<size_t>(request->id - 1);
      if (first_token[index] < 0.0) {
        first_token[index] = now_ms;
        ttft.push_back(now_ms - arrival[index]);
      }
      if (static_cast<int32_t>(request->output.size()) >= load.output_len) {
        if (load.output_len > 1) tpot.push_back((now_ms - first_token[index]) / (load.output_len - 1));
        scheduler.finish(request, FinishReason::kLength);
        ++finished;
      }
    }
    std::erase_if(active, [](const Request* r) { return r->state == RequestState::kFinished; });
    for (int32_t f = 0; f < finished; ++f) submit();
  }
  result.seconds = now_ms / 1000.0;
  result.num_preemptions = scheduler.num_preemptions_total();
  const double outputs = static_cast<double>(load.num_prompts) * load.output_len;
  result.output_tokens_per_s = result.seconds > 0.0 ? outputs / result.seconds : 0.0;
  result.mean_ttft_ms = mean_of(ttft);
  result.p99_ttft_ms = percentile_of(ttft, 99.0);
  result.mean_tpot_ms = mean_of(tpot);
  result.p99_tpot_ms = percentile_of(tpot, 99.0);
  const auto steps = static_cast<double>(std::max<int64_t>(1, result.num_steps));
  result.mean_step_ms = now_ms / steps;
  result.mean_decode_rows = decode_rows_total / steps;
  result.mean_prompt_tokens = prompt_tokens_total / steps;
  return result;
}

std::string sim_table_header() {
  return "| concurrency | steps | output tok/s | mean / p99 TTFT ms | mean / p99 TPOT ms | step mean / max ms | "
         "decode rows / prompt tokens per step | max running | preemptions |\n"
         "|---|---|---|---|---|---|---|---|---|";
}

std::string format_sim_row(const SimLoad& load, const SimResult& r) {
  char line[512];
  std::snprintf(line, sizeof(line),
                "| %d | %lld | %.0f | %.0f / %.0f | %.1f / %.1f | %.1f / %.1f | %.0f / %.0f | %d | %lld |",
                load.concurrency, static_cast<long long>(r.num_steps), r.output_tokens_per_s, r.mean_ttft_ms,
                r.p99_ttft_ms, r.mean_tpot_ms, r.p99_tpot_ms, r.mean_step_ms, r.max_step_ms, r.mean_decode_rows,
                r.mean_prompt_tokens, r.max_running, static_cast<long long>(r.num_preemptions));
  return line;
}

}  // namespace gossamer::engine
