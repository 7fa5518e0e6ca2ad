// The gossamer-only metrics of /metrics (server/metrics.h): token masks: only steps with masks are observed, only under
// `gossamer:` (vLLM has no such metric), as a histogram of seconds plus a counter of rows; the engine
// thread's seconds by phase.
#include "server/metrics.h"

#include <gtest/gtest.h>

namespace gossamer::server {
namespace {

TEST(Metrics, TokenMaskFillTimePerMaskedStep) {
  Metrics metrics("m", 1024, true);
  engine::StepInfo unmasked;
  unmasked.num_tokens = 64;
  metrics.observe_step(unmasked);
  engine::StepInfo masked = unmasked;
  masked.num_constrained_rows = 64;
  masked.token_mask_seconds = 0.002;
  metrics.observe_step(masked);
  masked.token_mask_seconds = 0.0004;
  metrics.observe_step(masked);
  const std::string text = metrics.render({});
  EXPECT_NE(text.find("# TYPE gossamer:token_mask_fill_seconds histogram\n"), std::string::npos);
  EXPECT_NE(text.find("gossamer:token_mask_fill_seconds_count{model_name=\"m\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gossamer:token_mask_fill_seconds_sum{model_name=\"m\"} 0.0024"), std::string::npos);
  EXPECT_NE(text.find("gossamer:token_mask_fill_seconds_bucket{model_name=\"m\",le=\"0.00050000000000000001\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("gossamer:token_mask_fill_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("gossamer:token_mask_rows_total{model_name=\"m\"} 128\n"), std::string::npos);
  EXPECT_EQ(text.find("vllm:token_mask"), std::string::npos);
  EXPECT_NE(text.find("vllm:iteration_tokens_total_count{model_name=\"m\"} 3\n"), std::string::npos);
}

TEST(Metrics, EngineLoopSecondsByPhase) {
  Metrics metrics("m", 1024, true);
  engine::EngineStats stats;
  stats.loop.wait = 1.5;
  stats.loop.launch = 0.25;
  stats.num_steps_launched_ahead_total = 7;
  const std::string text = metrics.render({stats});
  EXPECT_NE(text.find("# TYPE gossamer:engine_loop_seconds_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("gossamer:engine_loop_seconds_total{model_name=\"m\",engine=\"0\",phase=\"wait\"} 1.5\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gossamer:engine_loop_seconds_total{model_name=\"m\",engine=\"0\",phase=\"launch\"} 0.25\n"),
            std::string::npos);
  EXPECT_NE(text.find("gossamer:engine_loop_seconds_total{model_name=\"m\",engine=\"0\",phase=\"idle\"} 0\n"),
            std::string::npos);
  EXPECT_EQ(text.find("vllm:engine_loop"), std::string::npos);  // vLLM has no such metric
  EXPECT_NE(text.find("gossamer:engine_steps_launched_ahead_total{model_name=\"m\",engine=\"0\"} 7\n"),
            std::string::npos)
      << text;
}

// Data-parallel replicas: the engine-read metrics have one sample per replica, labelled engine="<index>" as
// vLLM's are (a scraper sums them); the server's own metrics keep one sample.
TEST(Metrics, EngineMetricsHaveOneSamplePerReplica) {
  Metrics metrics("m", 1024, true);
  engine::EngineStats first, second;
  first.num_running = 2;
  first.num_prompt_tokens_total = 100;
  second.num_running = 3;
  second.num_prompt_tokens_total = 40;
  second.loop.wait = 0.5;
  const std::string text = metrics.render({first, second});
  for (const char* line : {"vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 2\n",
                           "vllm:num_requests_running{model_name=\"m\",engine=\"1\"} 3\n",
                           "gossamer:prompt_tokens_total{model_name=\"m\",engine=\"0\"} 100\n",
                           "gossamer:prompt_tokens_total{model_name=\"m\",engine=\"1\"} 40\n",
                           "gossamer:engine_loop_seconds_total{model_name=\"m\",engine=\"1\",phase=\"wait\"} 0.5\n",
                           "gossamer:client_disconnects_total{model_name=\"m\"} 0\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
  }
  EXPECT_EQ(text.find("# TYPE vllm:num_requests_running gauge"), text.rfind("# TYPE vllm:num_requests_running gauge"));
}

}  // namespace
}  // namespace gossamer::server
