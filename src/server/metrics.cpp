#include "server/metrics.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace gossamer::server {

namespace {

const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                                          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kItlBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                         0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kLatencyBuckets = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
                                             30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

// vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, ... up to max_value.
std::vector<double> buckets_1_2_5(double max_value) {
  std::vector<double> out;
  for (double exponent = 1.0;; exponent *= 10.0) {
    for (const double mantissa : {1.0, 2.0, 5.0}) {
      const double value = mantissa * exponent;
      if (value > max_value) return out;
      out.push_back(value);
    }
  }
}

// Token-mask fill time per step: 10 µs to 100 ms (a decode step of 64 rows takes ~10 ms on the H200).
const std::vector<double> kTokenMaskBuckets = {1e-5,   2.5e-5, 5e-5, 1e-4,   2.5e-4, 5e-4, 1e-3,
                                               2.5e-3, 5e-3,   1e-2, 2.5e-2, 5e-2,   0.1};

std::vector<double> iteration_buckets() {
  return {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
}

std::string number(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

std::string escape_label(const std::string& value) {
  std::string out;
  for (const char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// The _bucket (cumulative), _sum and _count samples of a histogram named `name` (prefix included).
void write_histogram_samples(std::ostringstream& out, const std::string& name, const std::string& model_label,
                             const Histogram& h) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.bounds().size(); ++i) {
    cumulative += h.counts()[i];
    out << name << "_bucket{" << model_label << ",le=\"" << number(h.bounds()[i]) << "\"} " << cumulative << "\n";
  }
  cumulative += h.counts().back();
  out << name << "_bucket{" << model_label << ",le=\"+Inf\"} " << cumulative << "\n";
  out << name << "_sum{" << model_label << "} " << number(h.sum()) << "\n";
  out << name << "_count{" << model_label << "} " << h.count() << "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const auto index = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++counts_[index];
  sum_ += value;
  ++count_;
}

Metrics::Metrics(std::string model_name, int32_t max_model_len, bool vllm_alias)
    : model_name_(std::move(model_name)),
      vllm_alias_(vllm_alias),
      ttft_(kTtftBuckets),
      itl_(kItlBuckets),
      tpot_(kItlBuckets),
      e2e_(kLatencyBuckets),
      queue_(kLatencyBuckets),
      prompt_tokens_(buckets_1_2_5(max_model_len)),
      generation_tokens_(buckets_1_2_5(max_model_len)),
      max_tokens_(buckets_1_2_5(max_model_len)),
      iteration_tokens_(iteration_buckets()),
      legacy_tpot_(kItlBuckets),
      prefill_(kLatencyBuckets),
      decode_(kLatencyBuckets),
      inference_(kLatencyBuckets),
      params_n_({1, 2, 5, 10, 20}),
      max_generation_tokens_(buckets_1_2_5(max_model_len)),
      token_mask_fill_(kTokenMaskBuckets) {}

void Metrics::set_cache_config_info(std::vector<std::pair<std::string, std::string>> labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  cache_config_ = std::move(labels);
}

void Metrics::observe_request(int32_t n, int32_t max_generation_tokens) {
  std::lock_guard<std::mutex> lock(mutex_);
  params_n_.observe(n);
  max_generation_tokens_.observe(max_generation_tokens);
}

void Metrics::observe_finished(const engine::RequestOutput& output, const std::string& finish_reason,
                               int32_t max_tokens) {
  using seconds = std::chrono::duration<double>;
  const auto& times = output.times;
  std::lock_guard<std::mutex> lock(mutex_);
  ++success_by_reason_[finish_reason];
  if (times.first_token != engine::Clock::time_point{}) {
    ttft_.observe(seconds(times.first_token - times.arrival).count());
    if (output.num_output_tokens > 1) {
      tpot_.observe(seconds(times.finished - times.first_token).count() / (output.num_output_tokens - 1));
    }
  }
  e2e_.observe(seconds(times.finished - times.arrival).count());
  if (times.first_scheduled != engine::Clock::time_point{}) {
    queue_.observe(seconds(times.first_scheduled - times.arrival).count());
    inference_.observe(seconds(times.finished - times.first_scheduled).count());
    if (times.first_token != engine::Clock::time_point{}) {
      prefill_.observe(seconds(times.first_token - times.first_scheduled).count());
      decode_.observe(seconds(times.finished - times.first_token).count());
    }
  }
  prompt_tokens_.observe(output.num_prompt_tokens);
  generation_tokens_.observe(output.num_output_tokens);
  max_tokens_.observe(max_tokens);
}

void Metrics::observe_inter_token(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  itl_.observe(seconds);
  legacy_tpot_.observe(seconds);
}

void Metrics::observe_step(const engine::StepInfo& step) {
  std::lock_guard<std::mutex> lock(mutex_);
  iteration_tokens_.observe(step.num_tokens);
  if (step.num_constrained_rows > 0) {
    token_mask_fill_.observe(step.token_mask_seconds);
    token_mask_rows_ += static_cast<uint64_t>(step.num_constrained_rows);
  }
}

void Metrics::count_rejected(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++rejected_by_reason_[reason];
}

void Metrics::count_disconnect() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++disconnects_;
}

void Metrics::count_http(int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++http_by_status_[status];
}

std::string Metrics::render(const std::vector<engine::EngineStats>& replicas) const {
  std::ostringstream out;
  const std::string model_label = "model_name=\"" + escape_label(model_name_) + "\"";
  // One label set per replica: model_name plus engine="<index>".
  std::vector<std::string> engine_labels;
  for (size_t r = 0; r < replicas.size(); ++r)
    engine_labels.push_back(model_label + ",engine=\"" + std::to_string(r) + "\"");
  std::lock_guard<std::mutex> lock(mutex_);

  std::vector<std::string> prefixes = {"gossamer:"};
  if (vllm_alias_) prefixes.push_back("vllm:");
  for (const std::string& prefix : prefixes) {
    const auto header = [&](const std::string& name, const char* type, const char* help) {
      out << "# HELP " << prefix << name << " " << help << "\n# TYPE " << prefix << name << " " << type << "\n";
    };
    using Reading = double (*)(const engine::EngineStats&);
    const auto gauge = [&](const std::string& name, const char* help, Reading value) {
      header(name, "gauge", help);
      for (size_t r = 0; r < replicas.size(); ++r)
        out << prefix << name << "{" << engine_labels[r] << "} " << number(value(replicas[r])) << "\n";
    };
    // NOTE: counter families are named by their samples (`…_total`), as prometheus_client writes them.
    const auto counter = [&](const std::string& name, const char* help, Reading value) {
      header(name + "_total", "counter", help);
      for (size_t r = 0; r < replicas.size(); ++r)
        out << prefix << name << "_total{" << engine_labels[r] << "} " << number(value(replicas[r])) << "\n";
    };
    const auto histogram = [&](const std::string& name, const char* help, const Histogram& h) {
      header(name, "histogram", help);
      write_histogram_samples(out, prefix + name, model_label, h);
    };

    gauge("num_requests_running", "Number of requests in model execution batches.",
          [](const engine::EngineStats& s) { return double(s.num_running); });
    gauge("num_requests_waiting", "Number of requests waiting to be processed.",
          [](const engine::EngineStats& s) { return double(s.num_waiting); });
    gauge("kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
          [](const engine::EngineStats& s) { return s.kv_usage(); });
    counter("num_preemptions", "Cumulative number of preemptions (by recompute).",
            [](const engine::EngineStats& s) { return double(s.num_preemptions_total); });
    counter("prompt_tokens", "Number of prefill tokens processed.",
            [](const engine::EngineStats& s) { return double(s.num_prompt_tokens_total); });
    counter("generation_tokens", "Number of generation tokens processed.",
            [](const engine::EngineStats& s) { return double(s.num_generation_tokens_total); });
    counter("prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.",
            [](const engine::EngineStats& s) { return double(s.num_prefix_cache_queries_total); });
    counter("prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
            [](const engine::EngineStats& s) { return double(s.num_prefix_cache_hits_total); });
    counter("spec_decode_num_drafts", "Number of spec decoding drafts.",
            [](const engine::EngineStats& s) { return double(s.num_spec_drafts_total); });
    counter("spec_decode_num_draft_tokens", "Number of draft tokens.",
            [](const engine::EngineStats& s) { return double(s.num_spec_draft_tokens_total); });
    counter("spec_decode_num_accepted_tokens", "Number of accepted tokens.",
            [](const engine::EngineStats& s) { return double(s.num_spec_accepted_tokens_total); });
    header("request_success_total", "counter", "Count of successfully processed requests.");
    for (const char* reason : {"stop", "length", "tool_calls", "abort"}) {
      const auto found = success_by_reason_.find(reason);
      out << prefix << "request_success_total{" << model_label << ",finished_reason=\"" << reason << "\"} "
          << (found == success_by_reason_.end() ? 0 : found->second) << "\n";
    }
    histogram("time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttft_);
    histogram("inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itl_);
    histogram("request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.",
              tpot_);
    histogram("e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", e2e_);
    histogram("request_queue_time_seconds", "Histogram of time spent in the WAITING phase for request.", queue_);
    histogram("request_prompt_tokens", "Number of prefill tokens processed.", prompt_tokens_);
    histogram("request_generation_tokens", "Number of generation tokens processed.", generation_tokens_);
    histogram("request_params_max_tokens", "Histogram of the max_tokens request parameter.", max_tokens_);
    histogram("iteration_tokens_total", "Histogram of number of tokens per engine_step.", iteration_tokens_);
    histogram("time_per_output_token_seconds",
              "Histogram of time per output token in seconds (the old name of "
              "inter_token_latency_seconds).",
              legacy_tpot_);
    histogram("request_prefill_time_seconds", "Histogram of time spent in the PREFILL phase for request.", prefill_);
    histogram("request_decode_time_seconds", "Histogram of time spent in the DECODE phase for request.", decode_);
    histogram("request_inference_time_seconds", "Histogram of time spent in the RUNNING phase for request.",
              inference_);
    histogram("request_params_n", "Histogram of the n request parameter.", params_n_);
    histogram("request_max_num_generation_tokens", "Histogram of maximum number of requested generation tokens.",
              max_generation_tokens_);
    header("cache_config_info", "gauge", "Information of the LLMEngine CacheConfig");
    out << prefix << "cache_config_info{" << model_label;
    for (const auto& [key, value] : cache_config_) out << "," << key << "=\"" << escape_label(value) << "\"";
    out << "} 1\n";
  }

  // Engine thread time by phase (gossamer only): where a step's wall time goes, device or host.
  out << "# HELP gossamer:engine_loop_seconds_total Engine thread time by phase: idle, schedule, wait (blocked on "
         "the device), collect, launch, postprocess.\n# TYPE gossamer:engine_loop_seconds_total counter\n";
  for (size_t r = 0; r < replicas.size(); ++r) {
    const engine::EngineLoopSeconds& loop = replicas[r].loop;
    const std::pair<const char*, double> phases[] = {{"idle", loop.idle},     {"schedule", loop.schedule},
                                                     {"wait", loop.wait},     {"collect", loop.collect},
                                                     {"launch", loop.launch}, {"postprocess", loop.postprocess}};
    for (const auto& [phase, seconds] : phases) {
      out << "gossamer:engine_loop_seconds_total{" << engine_labels[r] << ",phase=\"" << phase << "\"} "
          << number(seconds) << "\n";
    }
  }
  out << "# HELP gossamer:engine_steps_launched_ahead_total Engine steps launched while the step before them was "
         "still in flight (--async-scheduling).\n# TYPE gossamer:engine_steps_launched_ahead_total counter\n";
  for (size_t r = 0; r < replicas.size(); ++r) {
    out << "gossamer:engine_steps_launched_ahead_total{" << engine_labels[r] << "} "
        << replicas[r].num_steps_launched_ahead_total << "\n";
  }
  // Structured output (gossamer only): the critical-path time of filling token masks before a step.
  out << "# HELP gossamer:token_mask_fill_seconds Per engine step with structured-output rows: wall time filling "
         "their token masks (on cuda while the step's forward runs; elsewhere before the step's launch).\n"
         "# TYPE gossamer:token_mask_fill_seconds histogram\n";
  write_histogram_samples(out, "gossamer:token_mask_fill_seconds", model_label, token_mask_fill_);
  out << "# HELP gossamer:token_mask_rows_total Structured-output rows asked for a token mask (rows of steps).\n"
         "# TYPE gossamer:token_mask_rows_total counter\n"
      << "gossamer:token_mask_rows_total{" << model_label << "} " << token_mask_rows_ << "\n";
  out << "# HELP gossamer:requests_rejected_total Requests refused before reaching the engine.\n"
         "# TYPE gossamer:requests_rejected_total counter\n";
  for (const char* reason : {"overload", "auth", "validation", "draining", "loading"}) {
    const auto found = rejected_by_reason_.find(reason);
    out << "gossamer:requests_rejected_total{" << model_label << ",reason=\"" << reason << "\"} "
        << (found == rejected_by_reason_.end() ? 0 : found->second) << "\n";
  }
  out << "# HELP gossamer:client_disconnects_total Clients that went away before their response was complete.\n"
         "# TYPE gossamer:client_disconnects_total counter\n"
      << "gossamer:client_disconnects_total{" << model_label << "} " << disconnects_ << "\n";
  out << "# HELP gossamer:http_requests_total HTTP requests answered, by status.\n# TYPE gossamer:http_requests_total "
         "counter\n";
  for (const auto& [status, count] : http_by_status_) {
    out << "gossamer:http_requests_total{" << model_label << ",status=\"" << status << "\"} " << count << "\n";
  }
  return out.str();
}

}  // namespace gossamer::server
