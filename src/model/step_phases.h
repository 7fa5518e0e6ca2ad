// Per-phase timing of forward steps, for benchmarks (`gossamer bench step`): which part of a step
// (embedding, each layer's norms, projections, attention, router, experts, the unembedding, sampling, the
// copy back) took how long, summed over the layers.
//
// Contract:
// - Off by default (Model::set_phase_timing(false)): a backend then pays one null check per phase.
// - While on, a backend times every forward: the cuda backend records an event on its stream at each
//   phase boundary and runs every step eagerly (no CUDA graphs); the cpu backend reads a steady clock.
//   Model::last_phase_seconds() returns the last forward's times (waiting for the device).
// - A phase's time runs from its first launch to the next phase's first launch, so on the cuda backend it
//   includes any launch gap inside it (the GPU waiting for the host); `span` is first mark → end mark.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

namespace gossamer::model {

enum class StepPhase : uint8_t {
  kEmbedding,    // token embedding gather (and the plan's per-token tables on the cpu)
  kAttnNorm,     // attention RMSNorm (fused residual add)
  kQkv,          // q/k/v projection
  kRope,         // RoPE, K/V written to the paged cache
  kAttention,    // paged attention with sinks
  kOProj,        // output projection
  kMlpNorm,      // MLP RMSNorm (fused residual add)
  kRouter,       // router linear
  kExperts,      // top-4, expert GEMMs / GEMVs, SwiGLU, combine
  kFinalNorm,    // final RMSNorm and the gather of the logits rows
  kUnembedding,  // unembedding linear
  kSampling,     // on-device sampling (forward_sample only)
  kOutput,       // logits or token ids copied to the host
};
inline constexpr int kNumStepPhases = 13;

const char* step_phase_name(StepPhase phase);

struct PhaseSeconds {
  std::array<double, kNumStepPhases> seconds{};  // per phase, summed over its repeats (layers)
  std::array<int32_t, kNumStepPhases> counts{};  // times each phase ran in the step (0: not on this path)
  double span = 0.0;                             // first phase start → end of the last phase
  bool valid = false;                            // false: no step was timed
};

// The cpu backend's clock: mark(phase) when `phase` starts, end() after the last one, then collect().
class WallPhaseClock {
 public:
  void mark(StepPhase phase);
  void end();
  PhaseSeconds collect() const;

 private:
  using Clock = std::chrono::steady_clock;
  std::vector<std::pair<StepPhase, Clock::time_point>> marks_;
  Clock::time_point end_{};
};

}  // namespace gossamer::model
