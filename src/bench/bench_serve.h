// The `gossamer bench serve` load generator: vLLM's `bench serve` options and figures (docs/PERF.md shows them) against
// any OpenAI-compatible server, with the random dataset (random ordinary o200k tokens decoded to text) or the
// multi-turn chat dataset (bench_multiturn.h).
//
// Contract: run_bench_serve() blocks until every request has finished; failed requests are counted, never
// thrown. Timings use a steady clock: TTFT is the first chunk with a non-empty `choices`, ITL the gaps
// between such chunks, E2EL the time to the last one; output tokens come from the usage chunk (or the
// number of content chunks when a server sends none).
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace gossamer::server {

struct BenchServeOptions {
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string backend = "openai-chat";  // openai-chat (/v1/chat/completions) | openai (/v1/completions)
  std::string endpoint;                 // default from the backend
  std::string model;                    // empty = the first id from /v1/models
  std::string api_key;                  // sent as a bearer token when set
  std::string dataset = "random";       // random | multiturn (bench_multiturn.h: num_prompts conversations)
  int num_prompts = 100;
  int multiturn_turns = 10;  // multiturn: turns per conversation
  int random_input_len = 1024;
  int random_output_len = 128;
  double random_range_ratio = 0.0;                                // lengths uniform in [len * (1 - r), len * (1 + r)]
  double request_rate = std::numeric_limits<double>::infinity();  // requests/s; inf = all at once
  double burstiness = 1.0;                                        // gamma shape of the arrival gaps (1 = Poisson)
  int max_concurrency = 0;                                        // 0 = unlimited
  bool ignore_eos = false;
  std::string response_format;  // chat: sent as {"type": response_format} (json_object); empty = none
  uint64_t seed = 0;
  std::vector<std::string> goodput;  // SLOs such as "ttft:500" "tpot:50" "e2el:2000" (ms)
  std::vector<double> percentiles = {99.0};
};

struct BenchServeResult {
  nlohmann::ordered_json json;  // vLLM's result keys
  std::string report;           // the human-readable block
};

BenchServeResult run_bench_serve(const BenchServeOptions& options, const text::Tokenizer& tokenizer);

}  // namespace gossamer::server
