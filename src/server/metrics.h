// Metrics: Prometheus text exposition of vLLM's serving metrics (the names vLLM exports; docs/server-http.md), written
// by hand.
//
// Every metric is emitted under the `gossamer:` prefix and, with vllm_alias, again under `vllm:` so that
// dashboards and AIPerf work unchanged. Labels: model_name (and finished_reason / reason where noted); the
// metrics read from the engines (requests running / waiting, KV usage, the token and preemption counters,
// the engine loop's) have one sample per data-parallel replica, labelled engine="<index>" as vLLM's are:
// the server's figure is their sum (their mean for kv_cache_usage_perc).
// gossamer's own metrics (no vLLM name) are emitted only under `gossamer:`: requests_rejected_total,
// client_disconnects_total, http_requests_total, and for structured output token_mask_fill_seconds (per
// engine step with constrained rows: the wall time of their token masks, during which the device waits) and
// token_mask_rows_total (the constrained rows of those steps).
//
// Contract: thread-safe (one mutex); observe_* are cheap. Gauges for the engine come from the EngineStats
// passed to render().
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"

namespace gossamer::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  const std::vector<double>& bounds() const { return bounds_; }
  const std::vector<uint64_t>& counts() const { return counts_; }  // not cumulative; last = +Inf
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0.0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics(std::string model_name, int32_t max_model_len, bool vllm_alias);

  void observe_finished(const engine::RequestOutput& output, const std::string& finish_reason, int32_t max_tokens);
  void observe_inter_token(double seconds);
  // Once per generation request (all its choices): n and the most tokens each choice may generate.
  void observe_request(int32_t n, int32_t max_generation_tokens);
  // Labels of the cache_config_info gauge (block_size, num_gpu_blocks, ...).
  void set_cache_config_info(std::vector<std::pair<std::string, std::string>> labels);
  void observe_step(const engine::StepInfo& step);
  void count_rejected(const std::string& reason);
  void count_disconnect();
  void count_http(int status);

  // Prometheus text format 0.0.4; `replicas`: each engine's stats, by replica index.
  std::string render(const std::vector<engine::EngineStats>& replicas) const;

 private:
  std::string model_name_;
  bool vllm_alias_;
  mutable std::mutex mutex_;
  Histogram ttft_, itl_, tpot_, e2e_, queue_, prompt_tokens_, generation_tokens_, max_tokens_, iteration_tokens_;
  Histogram legacy_tpot_, prefill_, decode_, inference_, params_n_, max_generation_tokens_;
  Histogram token_mask_fill_;  // gossamer only: per step with token masks, the time to fill them
  uint64_t token_mask_rows_ = 0;
  std::vector<std::pair<std::string, std::string>> cache_config_;
  std::map<std::string, uint64_t> success_by_reason_;
  std::map<std::string, uint64_t> rejected_by_reason_;
  std::map<int, uint64_t> http_by_status_;
  uint64_t disconnects_ = 0;
};

}  // namespace gossamer::server
