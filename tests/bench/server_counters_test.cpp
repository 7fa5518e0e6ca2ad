// The engine counters read from a server's /metrics (bench/server_counters.h): either name prefix (never
// both added), sums over label sets, non-counter lines, a text without them, and the per-step deltas.
#include "bench/server_counters.h"

#include <gtest/gtest.h>

namespace gossamer::server {
namespace {

TEST(ServerCounters, ParsesGossamerAndVllmNames) {
  const std::string gossamer_text =
      "# HELP gossamer:num_preemptions_total Cumulative number of preemption from the engine.\n"
      "# TYPE gossamer:num_preemptions_total counter\n"
      "gossamer:num_preemptions_total{model_name=\"m\"} 3\n"
      "gossamer:prompt_tokens_total{model_name=\"m\"} 1200\n"
      "gossamer:generation_tokens_total{model_name=\"m\"} 640\n"
      "gossamer:iteration_tokens_total_bucket{model_name=\"m\",le=\"1\"} 5\n"
      "gossamer:iteration_tokens_total_sum{model_name=\"m\"} 1840\n"
      "gossamer:iteration_tokens_total_count{model_name=\"m\"} 80\n"
      "gossamer:token_mask_fill_seconds_bucket{model_name=\"m\",le=\"0.001\"} 20\n"
      "gossamer:token_mask_fill_seconds_sum{model_name=\"m\"} 0.05\n"
      "gossamer:token_mask_fill_seconds_count{model_name=\"m\"} 25\n"
      "gossamer:num_requests_running{model_name=\"m\"} 4\n"
      "gossamer:engine_loop_seconds_total{model_name=\"m\",phase=\"wait\"} 1.5\n"
      "gossamer:engine_loop_seconds_total{model_name=\"m\",phase=\"launch\"} 0.25\n"
      "gossamer:engine_loop_seconds_total{model_name=\"m\",phase=\"postprocess\"} 0.125\n"
      "gossamer:engine_steps_launched_ahead_total{model_name=\"m\"} 40\n"
      "vllm:generation_tokens_total{model_name=\"m\"} 640\n";  // the same counter under vLLM's name: not added
  const auto counters = parse_server_counters(gossamer_text);
  ASSERT_TRUE(counters.has_value());
  EXPECT_EQ(counters->preemptions, 3.0);
  EXPECT_EQ(counters->prompt_tokens, 1200.0);
  EXPECT_EQ(counters->generation_tokens, 640.0);
  EXPECT_EQ(counters->steps, 80.0);
  EXPECT_EQ(counters->step_tokens, 1840.0);
  EXPECT_EQ(counters->masked_steps, 25.0);
  EXPECT_DOUBLE_EQ(counters->token_mask_seconds, 0.05);
  EXPECT_DOUBLE_EQ(counters->loop_wait, 1.5);  // each phase label its own field
  EXPECT_DOUBLE_EQ(counters->loop_launch, 0.25);
  EXPECT_DOUBLE_EQ(counters->loop_postprocess, 0.125);
  EXPECT_EQ(counters->loop_schedule, 0.0);
  EXPECT_EQ(counters->launched_ahead, 40.0);

  // vLLM: the same names under `vllm:`, one label set per engine: summed.
  const auto vllm = parse_server_counters(
      "vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 10.0\n"
      "vllm:generation_tokens_total{engine=\"1\",model_name=\"m\"} 5.0\n");
  ASSERT_TRUE(vllm.has_value());
  EXPECT_EQ(vllm->generation_tokens, 15.0);
  EXPECT_EQ(vllm->steps, 0.0);

  EXPECT_FALSE(parse_server_counters("# nothing here\nhttp_requests_total 4\n").has_value());
  EXPECT_FALSE(parse_server_counters("").has_value());
}

TEST(ServerCounters, ActivityPerStep) {
  ServerCounters before{1, 100, 50, 10, 150}, after{3, 300, 450, 110, 750};
  const ServerActivity activity = server_activity(before, after, 2.0);
  EXPECT_EQ(activity.steps, 100.0);
  EXPECT_EQ(activity.preemptions, 2.0);
  EXPECT_DOUBLE_EQ(activity.tokens_per_step, 6.0);
  EXPECT_DOUBLE_EQ(activity.generated_per_step, 4.0);
  EXPECT_DOUBLE_EQ(activity.prompt_per_step, 2.0);
  EXPECT_DOUBLE_EQ(activity.ms_per_step, 20.0);
  EXPECT_EQ(activity.masked_steps, 0.0);
  ServerCounters masked_before = before, masked_after = after;
  masked_before.masked_steps = 5, masked_before.token_mask_seconds = 0.01;
  masked_after.masked_steps = 45, masked_after.token_mask_seconds = 0.09;
  EXPECT_DOUBLE_EQ(server_activity(masked_before, masked_after, 2.0).mask_ms_per_masked_step, 2.0);
  ServerCounters loop_after = after;
  loop_after.loop_wait = 1.0, loop_after.loop_launch = 0.2;  // over 100 steps
  const ServerActivity loop = server_activity(before, loop_after, 2.0);
  EXPECT_DOUBLE_EQ(loop.wait_ms_per_step, 10.0);
  EXPECT_DOUBLE_EQ(loop.launch_ms_per_step, 2.0);
  EXPECT_EQ(loop.schedule_ms_per_step, 0.0);
  ServerCounters ahead_after = after;
  ahead_after.launched_ahead = 75.0;  // of 100 steps
  EXPECT_DOUBLE_EQ(server_activity(before, ahead_after, 2.0).launched_ahead_share, 0.75);
  const ServerActivity idle = server_activity(before, before, 1.0);
  EXPECT_EQ(idle.steps, 0.0);
  EXPECT_EQ(idle.ms_per_step, 0.0);
}

TEST(ServerCounters, NoServerIsNotAnError) {
  EXPECT_FALSE(scrape_server_counters("127.0.0.1", 1, "").has_value());
}

}  // namespace
}  // namespace gossamer::server
