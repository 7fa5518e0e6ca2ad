// `gossamer bench step`: where a decode step's time goes, at each batch size and one context.
//
// Per batch size B (B sequences of --context cached positions, one new token each, greedy):
//   product path  the step as the engine runs it (forward_sample where the backend samples on its device;
//                 CUDA graphs for B ≤ the largest graph batch), wall clock
//   phases        one eager step timed phase by phase (model/step_phases.h: CUDA events between the launch
//                 groups, or the cpu backend's clock), µs per step summed over the layers
//   host gap      the timed step's wall clock minus its device span (plan building, uploads, the wait)
//   engine        B requests through a real engine::Engine (apps/bench_step_engine.h): the host work before
//                 and after the forward and between steps (schedule(), output events); with
//                 --response-format json_object every request carries the server's structured-output
//                 constraint, and the token masks' fill time per step is a row of its own
// Prints one markdown table (a row per figure, a column per batch size) and, with --json-out, the same as JSON.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench_setup.h"
#include "bench_step_engine.h"
#include "command.h"
#include "core/error.h"
#include "server/structured_output.h"
#include "text/tokenizer.h"

namespace gossamer::app {

namespace {

using Clock = std::chrono::steady_clock;

struct BatchResult {
  int32_t batch = 0;
  std::string skipped;                                             // non-empty: not measured, and why
  double product_step = 0.0, eager_step = 0.0, device_span = 0.0;  // seconds per step (means)
  model::PhaseSeconds phases;                                      // means per step
  std::optional<EngineStepTimes> engine, engine_overlapped;
};

BatchResult measure_batch(model::Model& model, int64_t context, int32_t batch, int steps, bool ring, double budget_gib,
                          uint64_t seed, int engine_prompt_len, const ConstraintFactory& make_constraint) {
  BatchResult out;
  out.batch = batch;
  const int warmup = 2;
  double kv_gib = 0.0;
  const auto setup = prepare_decode(model, context, batch, 2 * (warmup + steps) + 2, ring, budget_gib,
                                    seed + static_cast<uint64_t>(batch), &kv_gib);
  if (!setup) {
    char reason[96];
    std::snprintf(reason, sizeof(reason), "KV cache %.1f GiB > --kv-budget-gib %.1f", kv_gib, budget_gib);
    out.skipped = reason;
    return out;
  }
  const std::vector<model::RowSampling> rows(static_cast<size_t>(batch));  // greedy
  std::vector<float> logits;
  std::vector<int32_t> tokens;
  int index = 0;
  auto run = [&] {
    const model::ForwardBatch forward = setup->step(index++);
    if (model.samples_on_device()) {
      model.forward_sample(forward, rows, tokens);
    } else {
      model.forward(forward, logits);
    }
  };
  // ---- the product path ----
  for (int i = 0; i < warmup; ++i) run();
  const auto start = Clock::now();
  for (int i = 0; i < steps; ++i) run();
  out.product_step = bench_seconds_since(start) / steps;
  // ---- one phase-timed eager step at a time ----
  model.set_phase_timing(true);
  run();  // warm-up of the eager path (larger than any graph's batch: kernels set attributes on first use)
  for (int i = 0; i < steps; ++i) {
    const auto step_start = Clock::now();
    run();
    out.eager_step += bench_seconds_since(step_start);
    const model::PhaseSeconds phases = model.last_phase_seconds();
    GOSSAMER_CHECK(phases.valid, "bench step: the backend timed no phases");
    for (int p = 0; p < model::kNumStepPhases; ++p) {
      out.phases.seconds[static_cast<size_t>(p)] += phases.seconds[static_cast<size_t>(p)] / steps;
      out.phases.counts[static_cast<size_t>(p)] = phases.counts[static_cast<size_t>(p)];
    }
    out.device_span += phases.span / steps;
  }
  out.eager_step /= steps;
  out.phases.valid = true;
  model.set_phase_timing(false);
  // ---- the engine's host work around the same batch ----
  if (engine_prompt_len > 0) {
    out.engine = measure_engine_steps(model, batch, engine_prompt_len, warmup, steps, seed, false, make_constraint);
    out.engine_overlapped =
        measure_engine_steps(model, batch, engine_prompt_len, warmup, steps, seed, true, make_constraint);
  }
  return out;
}

std::string micros(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", seconds * 1e6);
  return text;
}

void print_table(const std::string& title, int64_t context, const std::vector<BatchResult>& results) {
  std::vector<std::pair<std::string, std::vector<std::string>>> lines;
  auto add = [&](const std::string& label, auto&& cell) {
    std::vector<std::string> cells;
    for (const BatchResult& r : results) cells.push_back(r.skipped.empty() ? cell(r) : std::string("skipped"));
    lines.emplace_back(label, std::move(cells));
  };
  for (int p = 0; p < model::kNumStepPhases; ++p) {
    add(std::string("phase: ") + model::step_phase_name(static_cast<model::StepPhase>(p)), [&](const BatchResult& r) {
      return r.phases.counts[static_cast<size_t>(p)] == 0 ? std::string("-")
                                                          : micros(r.phases.seconds[static_cast<size_t>(p)]);
    });
  }
  add("device span (first phase → last)", [](const BatchResult& r) { return micros(r.device_span); });
  add("host gap (timed step − device span)", [](const BatchResult& r) { return micros(r.eager_step - r.device_span); });
  add("step, phase-timed eager (wall)", [](const BatchResult& r) { return micros(r.eager_step); });
  add("step, product path (wall)", [](const BatchResult& r) { return micros(r.product_step); });
  add("engine: before forward (build batch)",
      [](const BatchResult& r) { return r.engine ? micros(r.engine->before_forward) : "-"; });
  add("engine: forward", [](const BatchResult& r) { return r.engine ? micros(r.engine->forward) : "-"; });
  add("engine: after forward (sample, stop, outputs)",
      [](const BatchResult& r) { return r.engine ? micros(r.engine->after_forward) : "-"; });
  add("engine: between steps (schedule, callbacks)",
      [](const BatchResult& r) { return r.engine ? micros(r.engine->between_steps) : "-"; });
  add("engine: step (StepInfo)", [](const BatchResult& r) { return r.engine ? micros(r.engine->step) : "-"; });
  add("engine: token masks (fill, in the step)",
      [](const BatchResult& r) { return r.engine ? micros(r.engine->token_masks) : "-"; });
  add("engine: step period, steps run one after another",
      [](const BatchResult& r) { return r.engine ? micros(r.engine->period) : "-"; });
  add("engine: step period, overlapped (the product)",
      [](const BatchResult& r) { return r.engine_overlapped ? micros(r.engine_overlapped->period) : "-"; });
  add("tok/s (product path)", [](const BatchResult& r) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.0f", r.batch / r.product_step);
    return std::string(text);
  });
  std::printf("%s, context %lld: µs per decode step\n\n| figure |", title.c_str(), static_cast<long long>(context));
  for (const BatchResult& r : results) std::printf(" B=%d |", r.batch);
  std::printf("\n|---|");
  for (size_t i = 0; i < results.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (const auto& [label, cells] : lines) {
    std::printf("| %s |", label.c_str());
    for (const std::string& cell : cells) std::printf(" %s |", cell.c_str());
    std::printf("\n");
  }
  for (const BatchResult& r : results) {
    if (!r.skipped.empty()) std::printf("B=%d skipped: %s\n", r.batch, r.skipped.c_str());
  }
}

nlohmann::json to_json(const BatchResult& r) {
  nlohmann::json out = {{"batch", r.batch}};
  if (!r.skipped.empty()) {
    out["skipped"] = r.skipped;
    return out;
  }
  out["phases"] = phase_seconds_json(r.phases);
  out["device_span_us"] = r.device_span * 1e6;
  out["host_gap_us"] = (r.eager_step - r.device_span) * 1e6;
  out["eager_step_us"] = r.eager_step * 1e6;
  out["product_step_us"] = r.product_step * 1e6;
  out["tokens_per_s"] = r.batch / r.product_step;
  if (r.engine) {
    out["engine"] = {{"before_forward_us", r.engine->before_forward * 1e6},
                     {"forward_us", r.engine->forward * 1e6},
                     {"after_forward_us", r.engine->after_forward * 1e6},
                     {"between_steps_us", r.engine->between_steps * 1e6},
                     {"step_us", r.engine->step * 1e6},
                     {"period_us", r.engine->period * 1e6},
                     {"token_masks_us", r.engine->token_masks * 1e6},
                     {"timed_steps", r.engine->timed_steps}};
  }
  if (r.engine_overlapped) {
    out["engine_overlapped"] = {{"period_us", r.engine_overlapped->period * 1e6},
                                {"token_masks_us", r.engine_overlapped->token_masks * 1e6}};
  }
  return out;
}

int run_bench_step(int argc, char** argv) {
  CLI::App cli{"Per-step breakdown of decode: each phase's µs, host gaps, the engine's host work, per batch size"};
  ModelChoice choice;
  choice.add_options(cli);
  std::vector<int> batch_sizes = {1, 16, 64, 256, 512, 1024};
  int64_t context = 1024;
  int steps = 10, engine_prompt_len = 32;
  double kv_budget_gib = 100.0;
  bool ring = true, engine = true;
  std::string json_out;
  cli.add_option("--batch-sizes", batch_sizes, "batch sizes")->delimiter(',')->check(CLI::PositiveNumber);
  cli.add_option("--context", context, "cached context per sequence")->check(CLI::NonNegativeNumber);
  cli.add_option("--steps", steps, "timed steps per figure and batch size")->check(CLI::PositiveNumber);
  cli.add_option("--kv-budget-gib", kv_budget_gib, "largest KV cache to allocate; bigger batch sizes are skipped");
  cli.add_flag("!--no-ring", ring, "full-length KV on the sliding-window layers too");
  cli.add_option("--engine-prompt-len", engine_prompt_len,
                 "prompt tokens of the engine's requests (its host work depends on the batch, not the context)")
      ->check(CLI::PositiveNumber);
  cli.add_flag("!--no-engine", engine, "skip the engine rows");
  cli.add_option("--json-out", json_out, "also write the results as JSON");
  std::string response_format;
  cli.add_option("--response-format", response_format,
                 "the engine's requests carry the server's structured-output constraint (as bench serve's flag)")
      ->check(CLI::IsMember({"json_object"}));
  CLI11_PARSE(cli, argc, argv);
  ConstraintFactory make_constraint;
  std::shared_ptr<const text::Tokenizer> tokenizer;
  if (!response_format.empty()) {
    tokenizer = text::Tokenizer::load_default();
    const auto spec =
        server::parse_structured_output(nlohmann::ordered_json{{"response_format", {{"type", response_format}}}}, {});
    make_constraint = [spec, tokenizer, steps] {  // max_tokens as the engine rows' requests (2 warm-up steps)
      return server::make_structured_output_constraint(spec, *tokenizer, steps + 4);
    };
  }
  auto model = choice.load();
  GOSSAMER_CHECK(response_format.empty() || model->config().vocab_size == text::kVocabSize,
                 "bench step: --response-format needs the o200k_harmony vocabulary (", text::kVocabSize,
                 " tokens); this model has ", model->config().vocab_size);
  GOSSAMER_CHECK(model->set_phase_timing(true), "bench step: the ", model->backend_name(), " backend (",
                 model->parallel_layout(), ") has no phase timing");
  model->set_phase_timing(false);
  std::vector<BatchResult> results;
  for (const int batch : batch_sizes) {
    std::fprintf(stderr, "bench step: batch %d\n", batch);
    results.push_back(measure_batch(*model, context, batch, steps, ring, kv_budget_gib,
                                    choice.seed + static_cast<uint64_t>(batch), engine ? engine_prompt_len : 0,
                                    make_constraint));
  }
  print_table(choice.name() + " (" + model->backend_name() + ")", context, results);
  if (!json_out.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const BatchResult& r : results) list.push_back(to_json(r));
    std::ofstream(json_out)
        << nlohmann::json{{"bench", "step"},    {"model", choice.name()}, {"device", model->backend_name()},
                          {"context", context}, {"steps", steps},         {"results", list}}
               .dump(2)
        << "\n";
  }
  return 0;
}

}  // namespace

GOSSAMER_REGISTER_BENCH("step", "per-step breakdown of decode: phase µs, host gaps, engine host work per batch size",
                        run_bench_step);

}  // namespace gossamer::app
