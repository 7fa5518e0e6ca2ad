// The cuda backend's phase timing (model/step_phases.h, `gossamer bench step`): a timed decode step gives
// the same tokens as an untimed eager step, every layer's phases are counted once per layer, the phases
// add up to the device span, and turning timing off brings the graphs back. Skips visibly without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "gpu_test_util.h"
#include "model/cuda/cuda_model.h"
#include "model/loader.h"

namespace gossamer::model {
namespace {

using test::have_gpu;

TEST(CudaPhaseTiming, TimedStepsMatchTheGraphsAndCountEveryLayer) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU";
  ModelOptions options;
  options.weights = "fp8";
  auto model = load_dummy_model("tiny", 0, "cuda", options);
  auto* cuda = dynamic_cast<cuda::CudaModel*>(model.get());
  ASSERT_NE(cuda, nullptr);
  const int32_t batch = 4, block = 16, per_seq = 4;
  model->allocate_kv_cache(batch * per_seq, block);
  std::vector<std::vector<int32_t>> tables(batch), tokens(batch);
  for (int32_t b = 0; b < batch; ++b) {
    tables[b].resize(per_seq);
    std::iota(tables[b].begin(), tables[b].end(), b * per_seq);
    tokens[b] = {17 + b};
  }
  auto step = [&](int32_t position) {
    ForwardBatch forward;
    for (int32_t b = 0; b < batch; ++b)
      forward.sequences.push_back(SequenceInput{tokens[b], position, tables[b], LogitsWanted::kLast});
    return forward;
  };
  const std::vector<RowSampling> rows(batch);  // greedy
  std::vector<int32_t> graph_tokens, timed_tokens;
  for (int i = 0; i < 3; ++i) model->forward_sample(step(0), rows, graph_tokens);  // warm-up, capture, replay
  const int64_t replays = cuda->graph_replays();
  ASSERT_GT(replays, 0);
  EXPECT_FALSE(model->last_phase_seconds().valid) << "timing is off by default";

  ASSERT_TRUE(model->set_phase_timing(true));
  model->forward_sample(step(0), rows, timed_tokens);
  EXPECT_EQ(cuda->graph_replays(), replays) << "a timed step runs eagerly";
  // The timed step runs the eager path: the same launches as a model without graphs, events aside.
  ModelOptions eager_options = options;
  eager_options.cuda_graphs = false;
  auto eager = load_dummy_model("tiny", 0, "cuda", eager_options);
  eager->allocate_kv_cache(batch * per_seq, block);
  std::vector<int32_t> eager_tokens;
  eager->forward_sample(step(0), rows, eager_tokens);
  EXPECT_EQ(timed_tokens, eager_tokens);
  const PhaseSeconds phases = model->last_phase_seconds();
  ASSERT_TRUE(phases.valid);
  const int32_t layers = model->config().num_layers;
  for (StepPhase phase : {StepPhase::kAttnNorm, StepPhase::kQkv, StepPhase::kAttention, StepPhase::kOProj,
                          StepPhase::kMlpNorm, StepPhase::kRouter, StepPhase::kExperts}) {
    EXPECT_EQ(phases.counts[static_cast<size_t>(phase)], layers) << step_phase_name(phase);
  }
  // A decode step on FP8 linears (--weights fp8 here; mxfp4's dense linears are FP8 too) applies RoPE in the QKV
  // GEMV's epilogue (its time counts under qkv), so the rope phase never opens.
  EXPECT_EQ(phases.counts[static_cast<size_t>(StepPhase::kRope)], 0) << "RoPE fused into the decode QKV GEMV";
  for (StepPhase phase : {StepPhase::kEmbedding, StepPhase::kFinalNorm, StepPhase::kUnembedding, StepPhase::kSampling,
                          StepPhase::kOutput}) {
    EXPECT_EQ(phases.counts[static_cast<size_t>(phase)], 1) << step_phase_name(phase);
  }
  double sum = 0.0;
  for (double seconds : phases.seconds) {
    EXPECT_GE(seconds, 0.0);
    sum += seconds;
  }
  EXPECT_GT(phases.span, 0.0);
  EXPECT_NEAR(sum, phases.span, 1e-6 + 1e-3 * phases.span);

  std::vector<float> logits;
  model->forward(step(0), logits);  // forward (logits to the host) is timed too: no sampling phase
  const PhaseSeconds forward_phases = model->last_phase_seconds();
  ASSERT_TRUE(forward_phases.valid);
  EXPECT_EQ(forward_phases.counts[static_cast<size_t>(StepPhase::kSampling)], 0);
  EXPECT_EQ(forward_phases.counts[static_cast<size_t>(StepPhase::kOutput)], 1);

  model->set_phase_timing(false);
  model->forward_sample(step(0), rows, graph_tokens);
  EXPECT_EQ(cuda->graph_replays(), replays + 1) << "timing off: the graph is replayed again";
}

}  // namespace
}  // namespace gossamer::model
