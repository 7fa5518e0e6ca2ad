#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <memory>

#include "core/error.h"
#include "model/model.h"

namespace gossamer::engine {
namespace {

EngineConfig small_config(int32_t blocks, int32_t budget, int32_t max_seqs = 8) {
  EngineConfig config;
  config.block_size = 4;
  config.num_kv_blocks = blocks;
  config.max_num_batched_tokens = budget;
  config.max_num_seqs = max_seqs;
  config.max_model_len = 16;
  config.validate();
  return config;
}

std::unique_ptr<Request> make_request(RequestId id, int32_t prompt_len) {
  auto request = std::make_unique<Request>();
  request->id = id;
  request->prompt.assign(prompt_len, 7);
  return request;
}

// Applies a step's result the way the engine does: advance, and append a token when sampling.
void complete_step(const SchedulerOutput& out) {
  for (const auto& seq : out.sequences) {
    seq.request->num_computed += seq.num_new;
    if (seq.sample) seq.request->output.push_back(1);
  }
}

TEST(Scheduler, ChunksPrefillUnderTheTokenBudget) {
  EngineConfig config = small_config(16, 5);
  BlockAllocator allocator(config.num_kv_blocks);
  Scheduler scheduler(config, allocator);
  auto request = make_request(1, 12);
  scheduler.add(request.get());

  auto out = scheduler.schedule();
  ASSERT_EQ(out.sequences.size(), 1u);
  EXPECT_EQ(out.sequences[0].num_new, 5);
  EXPECT_FALSE(out.sequences[0].sample);
  EXPECT_EQ(request->block_table.size(), 2u);  // 5 positions in blocks of 4
  complete_step(out);
  out = scheduler.schedule();
  EXPECT_EQ(out.sequences[0].num_new, 5);
  complete_step(out);
  out = scheduler.schedule();
  EXPECT_EQ(out.sequences[0].num_new, 2);
  EXPECT_TRUE(out.sequences[0].sample);
  complete_step(out);
  out = scheduler.schedule();  // decode
  EXPECT_EQ(out.sequences[0].num_new, 1);
  EXPECT_TRUE(out.sequences[0].sample);
  EXPECT_EQ(request->block_table.size(), 4u);  // 13 positions
}

TEST(Scheduler, MixesDecodesAndPrefillChunksInOneStep) {
  EngineConfig config = small_config(16, 6);
  BlockAllocator allocator(config.num_kv_blocks);
  Scheduler scheduler(config, allocator);
  auto first = make_request(1, 3);
  scheduler.add(first.get());
  complete_step(scheduler.schedule());  // first prefilled, now decoding
  auto second = make_request(2, 10);
  scheduler.add(second.get());
  const auto out = scheduler.schedule();
  ASSERT_EQ(out.sequences.size(), 2u);
  EXPECT_EQ(out.sequences[0].request, first.get());
  EXPECT_EQ(out.sequences[0].num_new, 1);
  EXPECT_EQ(out.sequences[1].request, second.get());
  EXPECT_EQ(out.sequences[1].num_new, 5);
  EXPECT_EQ(out.num_tokens, 6);
}

TEST(Scheduler, AdmitsOnlyWhenBlocksAreFree) {
  EngineConfig config = small_config(4, 64);
  BlockAllocator allocator(config.num_kv_blocks);
  Scheduler scheduler(config, allocator);
  auto big = make_request(1, 13);  // 4 blocks: the whole cache
  auto small = make_request(2, 2);
  scheduler.add(big.get());
  scheduler.add(small.get());
  const auto out = scheduler.schedule();
  ASSERT_EQ(out.sequences.size(), 1u);
  EXPECT_EQ(scheduler.num_waiting(), 1);
  EXPECT_EQ(small->state, RequestState::kWaiting);
  scheduler.finish(big.get(), FinishReason::kStop);
  EXPECT_EQ(allocator.num_free(), 4);
  EXPECT_EQ(scheduler.schedule().sequences.size(), 1u);
  EXPECT_EQ(small->state, RequestState::kRunning);
}

TEST(Scheduler, RespectsMaxNumSeqs) {
  EngineConfig config = small_config(64, 64, 2);
  BlockAllocator allocator(config.num_kv_blocks);
  Scheduler scheduler(config, allocator);
  std::vector<std::unique_ptr<Request>> requests;
  for (int i = 0; i < 3; ++i) {
    requests.push_back(make_request(i + 1, 2));
    scheduler.add(requests.back().get());
  }
  EXPECT_EQ(scheduler.schedule().sequences.size(), 2u);
  EXPECT_EQ(scheduler.num_running(), 2);
  EXPECT_EQ(scheduler.num_waiting(), 1);
}

TEST(Scheduler, PreemptsTheNewestByRecomputeWhenBlocksRunOut) {
  EngineConfig config = small_config(5, 64);
  BlockAllocator allocator(config.num_kv_blocks);
  Scheduler scheduler(config, allocator);
  auto old_request = make_request(1, 4);  // 1 block
  auto new_request = make_request(2, 8);  // 2 blocks
  scheduler.add(old_request.get());
  complete_step(scheduler.schedule());
  scheduler.add(new_request.get());
  const auto admitted = scheduler.schedule();  // old decodes (needs block 2), new prefills (2 blocks)
  ASSERT_EQ(admitted.sequences.size(), 2u);
  complete_step(admitted);
  // Both now need a new block eventually; drive until a preemption happens.
  int preemptions = 0;
  for (int step = 0; step < 12 && preemptions == 0; ++step) {
    const auto out = scheduler.schedule();
    preemptions += static_cast<int>(out.preempted.size());
    if (!out.preempted.empty()) {
      EXPECT_EQ(out.preempted[0], new_request.get());
      EXPECT_EQ(new_request->state, RequestState::kPreempted);
      EXPECT_EQ(new_request->num_computed, 0);
      EXPECT_TRUE(new_request->block_table.empty());
      EXPECT_EQ(new_request->num_preemptions, 1);
    }
    complete_step(out);
  }
  EXPECT_EQ(preemptions, 1);
  EXPECT_EQ(scheduler.num_preemptions_total(), 1);
  // The preempted request resumes once the old one finishes, recomputing prompt and output.
  scheduler.finish(old_request.get(), FinishReason::kLength);
  const auto out = scheduler.schedule();
  ASSERT_EQ(out.sequences.size(), 1u);
  EXPECT_EQ(out.sequences[0].request, new_request.get());
  EXPECT_EQ(out.sequences[0].num_new, new_request->num_tokens());
  EXPECT_TRUE(out.sequences[0].sample);
}

TEST(Scheduler, FinishFreesBlocksOfWaitingAndRunningRequests) {
  EngineConfig config = small_config(8, 64);
  BlockAllocator allocator(config.num_kv_blocks);
  Scheduler scheduler(config, allocator);
  auto running = make_request(1, 9);
  scheduler.add(running.get());
  complete_step(scheduler.schedule());
  auto waiting = make_request(2, 2);
  scheduler.add(waiting.get());
  scheduler.finish(waiting.get(), FinishReason::kAbort);
  scheduler.finish(running.get(), FinishReason::kAbort);
  EXPECT_EQ(allocator.num_free(), 8);
  EXPECT_FALSE(scheduler.has_work());
  EXPECT_EQ(running->state, RequestState::kFinished);
  EXPECT_EQ(running->finish_reason, FinishReason::kAbort);
}

TEST(EngineConfig, RejectsACacheTooSmallForOneSequence) {
  EngineConfig config;
  config.block_size = 16;
  config.num_kv_blocks = 2;
  config.max_model_len = 64;
  EXPECT_THROW(config.validate(), Error);
  config.num_kv_blocks = 4;
  EXPECT_NO_THROW(config.validate());
}

// The sliding-window ring: sliding blocks are returned once wholly below window start − margin, the pool
// sized by ring_blocks_needed never runs out with many long sequences, and everything comes back.
TEST(Scheduler, SlidingRingTrimsAndNeverRunsOut) {
  EngineConfig config;
  config.block_size = 4;
  config.num_kv_blocks = 4096;
  config.max_num_batched_tokens = 24;
  config.max_num_seqs = 4;
  config.max_model_len = 2048;
  config.validate();
  config.sliding_window = 8;
  config.num_sliding_kv_blocks = config.ring_blocks_needed(config.sliding_window);
  BlockAllocator allocator(config.num_kv_blocks), sliding(config.num_sliding_kv_blocks);
  Scheduler scheduler(config, allocator, &sliding);
  std::vector<std::unique_ptr<Request>> requests;
  for (RequestId id = 1; id <= 6; ++id) {  // more requests than max_num_seqs: admission and finishing mix
    requests.push_back(make_request(id, 40 + 30 * static_cast<int32_t>(id)));
    scheduler.add(requests.back().get());
  }
  const int32_t ring_blocks =
      (config.sliding_window - 1 + model::kSlidingKeepMargin + config.block_size - 1) / config.block_size + 3;
  int steps = 0;
  int32_t most_trimmed = 0;
  while (scheduler.has_work() && steps < 10000) {
    const auto out = scheduler.schedule();
    for (const auto& seq : out.sequences) {
      Request* request = seq.request;
      EXPECT_EQ(request->sliding_block_table.size(), request->block_table.size());
      const int32_t held = static_cast<int32_t>(request->sliding_block_table.size()) - request->sliding_trimmed;
      EXPECT_LE(held, ring_blocks + (seq.num_new + config.block_size - 1) / config.block_size)
          << "request " << request->id;
      // Every block a query of this step may read is still owned (not trimmed).
      const int64_t first_read =
          std::max<int64_t>(0, int64_t{request->num_computed} - config.sliding_window + 1 - model::kSlidingKeepMargin);
      EXPECT_LE(request->sliding_trimmed, first_read / config.block_size);
      most_trimmed = std::max(most_trimmed, request->sliding_trimmed);
    }
    complete_step(out);
    for (const auto& seq : out.sequences) {
      if (seq.request->output.size() >= 200) scheduler.finish(seq.request, FinishReason::kLength);
    }
    ++steps;
  }
  EXPECT_FALSE(scheduler.has_work());
  EXPECT_GT(most_trimmed, 20);  // blocks really went back to the pool
  EXPECT_EQ(sliding.num_free(), sliding.num_blocks());
  EXPECT_EQ(allocator.num_free(), allocator.num_blocks());
  // Long sequences (up to 380 positions) went through a pool far smaller than their tables.
  EXPECT_LT(sliding.num_blocks(), 6 * 380 / config.block_size);
}

// Overlapped steps (engine/engine.h): the engine schedules the next step before the tokens of the one in
// flight are back. A sampled request then ends with a placeholder, which is scheduled like a known token,
// but the block holding it is offered to the prefix cache only once its id is known; a request whose last
// token is in flight (nothing to compute) is left out, and still counts as running.
TEST(Scheduler, SchedulesPendingTokensAndCachesOnlyKnownOnes) {
  EngineConfig config = small_config(16, 32);
  BlockAllocator allocator(config.num_kv_blocks, config.block_size);
  Scheduler scheduler(config, allocator);
  auto request = make_request(1, 7);  // its first output token completes block 1 (positions 4-7)
  scheduler.add(request.get());
  const auto launch = [](const SchedulerOutput& out, bool last) {
    for (const auto& seq : out.sequences) {
      seq.request->num_computed += seq.num_new;
      if (!seq.sample || last) continue;
      seq.request->output.push_back(kPendingToken);
      ++seq.request->num_pending;
    }
  };
  const auto resolve = [](Request& r, TokenId token) {
    if (r.num_pending > 0) {
      r.output.back() = token;
    } else {
      r.output.push_back(token);
    }
    r.num_pending = 0;
  };

  auto out = scheduler.schedule();  // the prompt
  ASSERT_EQ(out.sequences.size(), 1u);
  EXPECT_TRUE(out.sequences[0].sample);
  launch(out, false);
  out = scheduler.schedule();  // while it runs: the placeholder at position 7
  ASSERT_EQ(out.sequences.size(), 1u);
  EXPECT_EQ(out.sequences[0].num_new, 1);
  EXPECT_TRUE(out.sequences[0].sample);
  EXPECT_EQ(request->block_table.size(), 2u);
  EXPECT_EQ(request->num_cached_blocks, 1);  // block 1 holds the placeholder: not offered yet
  EXPECT_EQ(request->block_hashes.size(), 1u);
  resolve(*request, 42);
  launch(out, false);

  auto twin = make_request(2, 7);  // the same prompt
  scheduler.add(twin.get());
  out = scheduler.schedule();  // block 1 is known now and offered; the twin shares block 0
  EXPECT_EQ(request->num_cached_blocks, 2);
  EXPECT_EQ(twin->num_cached_tokens, 4);
  resolve(*request, 43);
  launch(out, true);  // the request's next token is its last: no placeholder
  resolve(*twin, 42);
  out = scheduler.schedule();  // the request has nothing to compute: only the twin runs
  ASSERT_EQ(out.sequences.size(), 1u);
  EXPECT_EQ(out.sequences[0].request, twin.get());
  EXPECT_EQ(scheduler.num_running(), 2);
}

}  // namespace
}  // namespace gossamer::engine
