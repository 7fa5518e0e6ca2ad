// What the model benchmarks (`gossamer bench prefill | decode | step | sweep`) share: the model choice
// flags, random prompt tokens, and the two synthetic workloads: one prefill sequence from position 0, and a
// decode batch of B sequences each with C cached positions (zeroed KV: attention reads the real number of
// bytes), one new token per sequence per step. Sliding-window layers keep only their window (the engine's
// ring) unless `ring` is false.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/loader.h"
#include "model/model.h"
#include "model/step_phases.h"

namespace gossamer::app {

inline constexpr double kBenchDollarsPerGpuHour = 3.00;
inline constexpr int32_t kBenchBlockSize = 16;

struct ModelChoice {
  std::string model_dir, load_format = "auto", preset = "20b", device = "cuda";
  uint64_t seed = 0;
  double gpu_memory_limit_gib = 0;  // > 0: the cuda backend behaves as a GPU of this size
  model::ModelOptions options;
  void add_options(CLI::App& cli);
  // Loads the model (reports the time, weight format and size on stderr); throws gossamer::Error on bad
  // flags or checkpoint.
  std::unique_ptr<model::Model> load() const;
  std::string name() const { return load_format == "dummy" ? "dummy-" + preset : model_dir; }
};

// `count` prompt tokens of a seeded stream, below the special tokens.
std::vector<int32_t> bench_random_tokens(uint64_t seed, int64_t count, int32_t vocab);
double bench_seconds_since(std::chrono::steady_clock::time_point start);
// {phase name: {"us": µs summed over its repeats, "count": repeats}} of the phases that ran (`bench step`,
// `bench prefill --phases`).
nlohmann::json phase_seconds_json(const model::PhaseSeconds& phases);

// Allocates the cache for one sequence of up to max_tokens positions; returns its block table.
std::vector<int32_t> prepare_prefill(model::Model& model, int64_t max_tokens);
// Seconds of one forward pass of `tokens` from position 0 (until the last row's logits reached the host).
double time_prefill(model::Model& model, const std::vector<int32_t>& tokens, const std::vector<int32_t>& table,
                    std::vector<float>& logits);

// A decode batch whose KV cache is allocated in the model. Valid until the model's next allocate_kv_cache.
struct DecodeSetup {
  int64_t context = 0;
  int32_t batch = 0;
  double kv_gib = 0.0;  // KV cache the batch takes
  std::vector<std::vector<int32_t>> tables, sliding_tables;
  int32_t max_queries = 1;      // tokens a sequence may run in one step (a verification step's 1 + drafts)
  std::vector<int32_t> tokens;  // [batch][max_queries] the tokens each sequence runs
  // Step `index` (0, 1, …): every sequence's `queries` (≤ max_queries) tokens from position
  // context + index · queries, with a logits row each (one: kLast). Views into this setup.
  model::ForwardBatch step(int index, int32_t queries = 1) const;
};

// Allocates the cache for `batch` sequences of `context` positions plus `max_steps` steps of up to
// `max_queries` tokens, the tokens drawn from `token_seed`; nullopt (and nothing allocated) when it would take
// more than budget_gib, with `kv_gib` set to what it would take.
std::optional<DecodeSetup> prepare_decode(model::Model& model, int64_t context, int32_t batch, int max_steps, bool ring,
                                          double budget_gib, uint64_t token_seed, double* kv_gib = nullptr,
                                          int32_t max_queries = 1);
// Mean seconds of `steps` decode steps (steps warmup …) of `queries` tokens a sequence after `warmup` untimed
// ones (steps 0 …): greedy sampling of every row on the device where the backend samples there (the engine's
// path), else forward() to host logits.
double decode_seconds_per_step(model::Model& model, const DecodeSetup& setup, int warmup, int steps,
                               int32_t queries = 1);

}  // namespace gossamer::app
