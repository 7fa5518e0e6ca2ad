#include "bench/bench_serve.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include "bench/bench_multiturn.h"
#include "bench/http_client.h"
#include "core/error.h"
#include "text/incremental_detokenizer.h"

namespace gossamer::server {

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct BenchRequest {
  Json messages;  // multiturn: the whole chat so far (else one user message of `prompt`)
  std::string prompt;
  int input_len = 0;
  int output_len = 0;
};

struct Outcome {
  bool success = false;
  std::string error;
  double ttft = 0.0;
  double latency = 0.0;
  std::vector<double> itl;
  int prompt_tokens = 0;
  int output_tokens = 0;
  std::string text;  // the answer's content
};

std::vector<BenchRequest> random_dataset(const BenchServeOptions& options, const text::Tokenizer& tokenizer) {
  std::mt19937_64 rng(options.seed);
  const auto length = [&](int base) {
    const int low = std::max(1, static_cast<int>(std::floor(base * (1.0 - options.random_range_ratio))));
    const int high = std::max(low, static_cast<int>(std::ceil(base * (1.0 + options.random_range_ratio))));
    return std::uniform_int_distribution<int>(low, high)(rng);
  };
  std::uniform_int_distribution<int> token(0, text::kNumOrdinaryTokens - 1);
  std::vector<BenchRequest> requests(options.num_prompts);
  for (auto& request : requests) {
    request.input_len = length(options.random_input_len);
    request.output_len = length(options.random_output_len);
    text::IncrementalDetokenizer detokenizer(tokenizer);
    for (int i = 0; i < request.input_len; ++i) request.prompt += detokenizer.push(token(rng));
    request.prompt += detokenizer.flush();
  }
  return requests;
}

Outcome send_one(const BenchServeOptions& options, const std::string& endpoint, const std::string& model,
                 const BenchRequest& request) {
  Outcome outcome;
  Json body = {{"model", model}, {"stream", true}, {"stream_options", {{"include_usage", true}}}};
  if (options.backend == "openai-chat") {
    body["messages"] =
        request.messages.is_array() ? request.messages : Json{{{"role", "user"}, {"content", request.prompt}}};
    body["max_completion_tokens"] = request.output_len;
  } else {
    body["prompt"] = request.prompt;
    body["max_tokens"] = request.output_len;
  }
  if (options.ignore_eos) body["ignore_eos"] = true;
  if (!options.response_format.empty()) body["response_format"] = {{"type", options.response_format}};
  HeaderList headers;
  if (!options.api_key.empty()) headers.emplace_back("Authorization", "Bearer " + options.api_key);
  int chunks = 0;
  int usage_tokens = -1;
  const auto start = Clock::now();
  auto last = start;
  try {
    HttpClient client(options.host, options.port, 3600.0);
    SseReader reader;
    const auto response =
        client.request("POST", endpoint, body.dump(-1, ' ', false, Json::error_handler_t::replace), headers,
                       [&](std::string_view data) {
                         for (const auto& event : reader.push(data)) {
                           if (event == "[DONE]") continue;
                           const auto now = Clock::now();
                           const Json chunk = Json::parse(event, nullptr, false);
                           if (chunk.is_discarded()) continue;
                           if (chunk.contains("error")) {
                             outcome.error = chunk["error"].dump();
                             continue;
                           }
                           if (chunk.contains("usage") && chunk["usage"].is_object()) {
                             usage_tokens = chunk["usage"].value("completion_tokens", -1);
                             outcome.prompt_tokens = chunk["usage"].value("prompt_tokens", 0);
                           }
                           if (chunk.contains("choices") && chunk["choices"].is_array() && !chunk["choices"].empty()) {
                             const Json& choice = chunk["choices"][0];
                             if (choice.contains("delta") && choice["delta"].value("content", Json()).is_string()) {
                               outcome.text += choice["delta"]["content"].get<std::string>();
                             } else if (choice.value("text", Json()).is_string()) {
                               outcome.text += choice["text"].get<std::string>();
                             }
                             if (chunks == 0) {
                               outcome.ttft = std::chrono::duration<double>(now - start).count();
                             } else {
                               outcome.itl.push_back(std::chrono::duration<double>(now - last).count());
                             }
                             last = now;
                             ++chunks;
                           }
                         }
                         return true;
                       });
    if (response.status != 200) {
      outcome.error = "HTTP " + std::to_string(response.status) + " " + response.body.substr(0, 200);
      return outcome;
    }
  } catch (const std::exception& error) {
    outcome.error = error.what();
    return outcome;
  }
  outcome.latency = std::chrono::duration<double>(last - start).count();
  outcome.output_tokens = usage_tokens >= 0 ? usage_tokens : std::max(0, chunks - 1);
  if (outcome.prompt_tokens == 0) outcome.prompt_tokens = request.input_len;
  outcome.success = chunks > 0 && outcome.error.empty();
  return outcome;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  // NOTE: numpy's default (linear interpolation), as vLLM uses np.percentile.
  const double rank = p / 100.0 * static_cast<double>(values.size() - 1);
  const size_t low = static_cast<size_t>(std::floor(rank));
  const size_t high = std::min(values.size() - 1, low + 1);
  return values[low] + (values[high] - values[low]) * (rank - static_cast<double>(low));
}

std::string format_number(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.2f", value);
  return text;
}

}  // namespace

BenchServeResult run_bench_serve(const BenchServeOptions& options, const text::Tokenizer& tokenizer) {
  GOSSAMER_CHECK(options.backend == "openai-chat" || options.backend == "openai",
                 "--backend must be openai-chat or openai");
  GOSSAMER_CHECK(options.num_prompts >= 1, "--num-prompts must be >= 1");
  GOSSAMER_CHECK(options.request_rate > 0.0, "--request-rate must be > 0 (or inf)");
  GOSSAMER_CHECK(options.burstiness > 0.0, "--burstiness must be > 0");
  const std::string endpoint = !options.endpoint.empty()          ? options.endpoint
                               : options.backend == "openai-chat" ? "/v1/chat/completions"
                                                                  : "/v1/completions";

  std::string model = options.model;
  if (model.empty()) {
    HttpClient client(options.host, options.port, 30.0);
    HeaderList headers;
    if (!options.api_key.empty()) headers.emplace_back("Authorization", "Bearer " + options.api_key);
    const auto response = client.request("GET", "/v1/models", {}, headers);
    GOSSAMER_CHECK(response.status == 200, "GET /v1/models answered ", response.status, ": ", response.body);
    model = Json::parse(response.body).at("data").at(0).at("id").get<std::string>();
  }

  std::map<std::string, double> slos;
  for (const auto& item : options.goodput) {
    const auto colon = item.find(':');
    GOSSAMER_CHECK(colon != std::string::npos, "--goodput takes KEY:MS pairs (ttft, tpot, e2el), got '", item, "'");
    const std::string key = item.substr(0, colon);
    GOSSAMER_CHECK(key == "ttft" || key == "tpot" || key == "e2el", "unknown --goodput metric '", key, "'");
    slos[key] = std::stod(item.substr(colon + 1));
  }

  const bool multiturn = options.dataset == "multiturn";
  GOSSAMER_CHECK(multiturn || options.dataset == "random", "unknown --dataset-name '", options.dataset, "'");
  GOSSAMER_CHECK(!multiturn || options.backend == "openai-chat", "the multiturn dataset needs --backend openai-chat");
  const std::vector<BenchRequest> requests =
      multiturn ? std::vector<BenchRequest>{} : random_dataset(options, tokenizer);
  std::vector<Outcome> outcomes(multiturn ? static_cast<size_t>(options.num_prompts) * options.multiturn_turns
                                          : requests.size());

  // Arrival times: gamma-distributed gaps with mean 1/rate (shape = burstiness), or all at once.
  std::mt19937_64 rng(options.seed ^ 0x5eedULL);
  std::vector<double> arrivals(requests.size(), 0.0);
  if (std::isfinite(options.request_rate)) {
    std::gamma_distribution<double> gap(options.burstiness, 1.0 / (options.request_rate * options.burstiness));
    double t = 0.0;
    for (auto& arrival : arrivals) {
      arrival = t;
      t += gap(rng);
    }
  }

  std::mutex mutex;
  std::condition_variable slot_free;
  int in_flight = 0;
  const int limit = options.max_concurrency > 0 ? options.max_concurrency : std::numeric_limits<int>::max();
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  if (multiturn) {
    MultiturnSpec spec{options.num_prompts, options.multiturn_turns, options.random_input_len, options.max_concurrency,
                       options.seed};
    run_multiturn(spec, tokenizer, [&](const Json& messages, int conversation, int turn) -> std::optional<std::string> {
      BenchRequest request;
      request.messages = messages;
      request.output_len = options.random_output_len;
      Outcome& outcome = outcomes[static_cast<size_t>(conversation) * options.multiturn_turns + turn];
      outcome = send_one(options, endpoint, model, request);
      return outcome.success ? std::optional<std::string>(outcome.text) : std::nullopt;
    });
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    std::this_thread::sleep_until(
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(arrivals[i])));
    {
      std::unique_lock<std::mutex> lock(mutex);
      slot_free.wait(lock, [&] { return in_flight < limit; });
      ++in_flight;
    }
    threads.emplace_back([&, i] {
      outcomes[i] = send_one(options, endpoint, model, requests[i]);
      std::lock_guard<std::mutex> lock(mutex);
      --in_flight;
      slot_free.notify_one();
    });
  }
  for (auto& thread : threads) thread.join();
  const double duration = std::chrono::duration<double>(Clock::now() - start).count();

  // Figures, as vllm/benchmarks/serve.py computes them.
  int completed = 0, good = 0;
  int64_t total_input = 0, total_output = 0;
  std::vector<double> ttfts, tpots, itls, e2els;
  std::vector<std::string> errors;
  for (const Outcome& outcome : outcomes) {
    if (!outcome.success) {
      if (errors.size() < 5) errors.push_back(outcome.error);
      continue;
    }
    ++completed;
    total_input += outcome.prompt_tokens;
    total_output += outcome.output_tokens;
    ttfts.push_back(outcome.ttft * 1000.0);
    e2els.push_back(outcome.latency * 1000.0);
    double tpot = 0.0;
    if (outcome.output_tokens > 1) {
      tpot = (outcome.latency - outcome.ttft) / (outcome.output_tokens - 1) * 1000.0;
      tpots.push_back(tpot);
    }
    for (const double gap : outcome.itl) itls.push_back(gap * 1000.0);
    bool meets = true;
    if (slos.count("ttft")) meets &= outcome.ttft * 1000.0 <= slos["ttft"];
    if (slos.count("tpot")) meets &= tpot <= slos["tpot"];
    if (slos.count("e2el")) meets &= outcome.latency * 1000.0 <= slos["e2el"];
    good += meets;
  }

  BenchServeResult result;
  using OrderedJson = nlohmann::ordered_json;
  OrderedJson& json = result.json;
  json["backend"] = options.backend;
  json["model_id"] = model;
  json["num_prompts"] = options.num_prompts;
  json["request_rate"] = std::isfinite(options.request_rate) ? OrderedJson(options.request_rate) : OrderedJson("inf");
  json["burstiness"] = options.burstiness;
  json["max_concurrency"] = options.max_concurrency > 0 ? OrderedJson(options.max_concurrency) : OrderedJson(nullptr);
  json["duration"] = duration;
  json["completed"] = completed;
  json["failed"] = static_cast<int>(outcomes.size()) - completed;
  json["total_input_tokens"] = total_input;
  json["total_output_tokens"] = total_output;
  json["request_throughput"] = completed / duration;
  json["request_goodput"] = slos.empty() ? OrderedJson(nullptr) : OrderedJson(good / duration);
  json["output_throughput"] = static_cast<double>(total_output) / duration;
  json["total_token_throughput"] = static_cast<double>(total_input + total_output) / duration;
  json["errors"] = errors;
  if (multiturn) {  // mean TTFT of each turn over the conversations that reached it
    json["multiturn_mean_ttft_ms_by_turn"] = OrderedJson::array();
    for (int t = 0; t < options.multiturn_turns; ++t) {
      std::vector<double> turn_ttfts;
      for (int c = 0; c < options.num_prompts; ++c) {
        const Outcome& o = outcomes[static_cast<size_t>(c) * options.multiturn_turns + t];
        if (o.success) turn_ttfts.push_back(o.ttft * 1000.0);
      }
      json["multiturn_mean_ttft_ms_by_turn"].push_back(
          turn_ttfts.empty()
              ? 0.0
              : std::accumulate(turn_ttfts.begin(), turn_ttfts.end(), 0.0) / static_cast<double>(turn_ttfts.size()));
    }
  }

  std::string report;
  const auto line = [&](const std::string& label, const std::string& value) {
    char text[160];
    std::snprintf(text, sizeof(text), "%-40s%s\n", label.c_str(), value.c_str());
    report += text;
  };
  const auto title = [&](const std::string& text, char fill) {
    const int width = 50;
    const int pad = std::max(0, width - static_cast<int>(text.size()) - 2);
    report += std::string(pad / 2, fill) + (text.empty() ? std::string(2, fill) : " " + text + " ") +
              std::string(pad - pad / 2, fill) + "\n";
  };
  title("Serving Benchmark Result", '=');
  line("Successful requests:", std::to_string(completed));
  line("Failed requests:", std::to_string(outcomes.size() - completed));
  line("Maximum request concurrency:",
       options.max_concurrency > 0 ? std::to_string(options.max_concurrency) : "unlimited");
  line("Request rate configured (RPS):",
       std::isfinite(options.request_rate) ? format_number(options.request_rate) : "inf");
  line("Benchmark duration (s):", format_number(duration));
  line("Total input tokens:", std::to_string(total_input));
  line("Total generated tokens:", std::to_string(total_output));
  line("Request throughput (req/s):", format_number(completed / duration));
  if (!slos.empty()) line("Request goodput (req/s):", format_number(good / duration));
  line("Output token throughput (tok/s):", format_number(static_cast<double>(total_output) / duration));
  line("Total Token throughput (tok/s):", format_number(static_cast<double>(total_input + total_output) / duration));
  const auto stats = [&](const std::string& key, const std::string& name, const std::string& header,
                         const std::vector<double>& v) {
    double mean = 0.0, stddev = 0.0;
    if (!v.empty()) {
      mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
      double sq = 0.0;
      for (const double x : v) sq += (x - mean) * (x - mean);
      stddev = std::sqrt(sq / static_cast<double>(v.size()));
    }
    const double median = percentile(v, 50.0);
    json["mean_" + key + "_ms"] = mean;
    json["median_" + key + "_ms"] = median;
    json["std_" + key + "_ms"] = stddev;
    title(header, '-');
    line("Mean " + name + " (ms):", format_number(mean));
    line("Median " + name + " (ms):", format_number(median));
    for (const double p : options.percentiles) {
      char label[32];
      std::snprintf(label, sizeof(label), "%g", p);
      json[std::string("p") + label + "_" + key + "_ms"] = percentile(v, p);
      line(std::string("P") + label + " " + name + " (ms):", format_number(percentile(v, p)));
    }
  };
  stats("ttft", "TTFT", "Time to First Token", ttfts);
  stats("tpot", "TPOT", "Time per Output Token (excl. 1st token)", tpots);
  stats("itl", "ITL", "Inter-token Latency", itls);
  stats("e2el", "E2EL", "End-to-end Latency", e2els);
  title("", '=');
  for (const auto& error : errors) report += "error: " + error + "\n";
  result.report = report;
  return result;
}

}  // namespace gossamer::server
