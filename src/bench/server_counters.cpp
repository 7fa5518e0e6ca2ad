#include "bench/server_counters.h"

#include <array>
#include <cstdlib>
#include <sstream>

#include "bench/http_client.h"

namespace gossamer::server {

namespace {

// The counters under one name prefix, or nullopt when none is there.
std::optional<ServerCounters> parse_with_prefix(const std::string& metrics_text, const std::string& prefix) {
  ServerCounters counters;
  bool found = false;
  const std::array<std::pair<const char*, double ServerCounters::*>, 8> kNames = {{
      {"num_preemptions_total", &ServerCounters::preemptions},
      {"prompt_tokens_total", &ServerCounters::prompt_tokens},
      {"generation_tokens_total", &ServerCounters::generation_tokens},
      {"iteration_tokens_total_count", &ServerCounters::steps},
      {"iteration_tokens_total_sum", &ServerCounters::step_tokens},
      {"token_mask_fill_seconds_count", &ServerCounters::masked_steps},
      {"token_mask_fill_seconds_sum", &ServerCounters::token_mask_seconds},
      {"engine_steps_launched_ahead_total", &ServerCounters::launched_ahead},
  }};
  std::istringstream lines(metrics_text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    const std::string name = line.substr(prefix.size(), line.find_first_of("{ ") - prefix.size());
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    if (name == "engine_loop_seconds_total") {  // one sample per phase label
      const std::array<std::pair<const char*, double ServerCounters::*>, 6> kPhases = {{
          {"phase=\"idle\"", &ServerCounters::loop_idle},
          {"phase=\"schedule\"", &ServerCounters::loop_schedule},
          {"phase=\"wait\"", &ServerCounters::loop_wait},
          {"phase=\"collect\"", &ServerCounters::loop_collect},
          {"phase=\"launch\"", &ServerCounters::loop_launch},
          {"phase=\"postprocess\"", &ServerCounters::loop_postprocess},
      }};
      for (const auto& [label, field] : kPhases) {
        if (line.find(label) == std::string::npos) continue;
        counters.*field += std::strtod(line.c_str() + space + 1, nullptr);
        found = true;
      }
      continue;
    }
    for (const auto& [counter, field] : kNames) {
      if (name != counter) continue;
      char* end = nullptr;
      const double value = std::strtod(line.c_str() + space + 1, &end);
      if (end == line.c_str() + space + 1) continue;  // not a number
      counters.*field += value;
      found = true;
    }
  }
  return found ? std::optional<ServerCounters>(counters) : std::nullopt;
}

}  // namespace

std::optional<ServerCounters> parse_server_counters(const std::string& metrics_text) {
  // NOTE: gossamer also exports every metric under vLLM's names: read one prefix only, never both.
  if (auto counters = parse_with_prefix(metrics_text, "gossamer:")) return counters;
  return parse_with_prefix(metrics_text, "vllm:");
}

std::optional<ServerCounters> scrape_server_counters(const std::string& host, int port, const std::string& api_key) {
  try {
    HttpClient client(host, port, 30.0);
    HeaderList headers;
    if (!api_key.empty()) headers.emplace_back("Authorization", "Bearer " + api_key);
    const ClientResponse response = client.request("GET", "/metrics", {}, headers);
    if (response.status != 200) return std::nullopt;
    return parse_server_counters(response.body);
  } catch (const std::exception&) {  // no /metrics: the sweep reports its own figures only
    return std::nullopt;
  }
}

ServerActivity server_activity(const ServerCounters& before, const ServerCounters& after, double seconds) {
  ServerActivity activity;
  activity.steps = after.steps - before.steps;
  activity.preemptions = after.preemptions - before.preemptions;
  if (activity.steps > 0.0) {
    activity.tokens_per_step = (after.step_tokens - before.step_tokens) / activity.steps;
    activity.generated_per_step = (after.generation_tokens - before.generation_tokens) / activity.steps;
    activity.prompt_per_step = (after.prompt_tokens - before.prompt_tokens) / activity.steps;
    activity.ms_per_step = seconds * 1000.0 / activity.steps;
    activity.launched_ahead_share = (after.launched_ahead - before.launched_ahead) / activity.steps;
    const auto per_step = [&](double ServerCounters::*field) {
      return (after.*field - before.*field) * 1000.0 / activity.steps;
    };
    activity.wait_ms_per_step = per_step(&ServerCounters::loop_wait);
    activity.schedule_ms_per_step = per_step(&ServerCounters::loop_schedule);
    activity.collect_ms_per_step = per_step(&ServerCounters::loop_collect);
    activity.launch_ms_per_step = per_step(&ServerCounters::loop_launch);
    activity.postprocess_ms_per_step = per_step(&ServerCounters::loop_postprocess);
    activity.idle_ms_per_step = per_step(&ServerCounters::loop_idle);
  }
  activity.masked_steps = after.masked_steps - before.masked_steps;
  if (activity.masked_steps > 0.0) {
    activity.mask_ms_per_masked_step =
        (after.token_mask_seconds - before.token_mask_seconds) * 1000.0 / activity.masked_steps;
  }
  return activity;
}

}  // namespace gossamer::server
