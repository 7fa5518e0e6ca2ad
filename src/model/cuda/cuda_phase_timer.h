// The cuda backend's phase timer (model/step_phases.h): an event recorded on the step's stream at each
// phase boundary, read back after the step.
//
// Contract: mark(kEmbedding, …) starts a step (earlier marks are dropped); mark(phase) records that `phase`
// starts now in stream order (ignored after end() until the next step); end() records the close of the last
// phase; collect() waits for the end event and returns the per-phase times (valid = false when the step was
// not closed). Events are created on first use and reused (no allocation in steady state); never used under
// graph capture.
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "model/step_phases.h"

namespace gossamer::model::cuda {

class CudaPhaseTimer {
 public:
  CudaPhaseTimer() = default;
  ~CudaPhaseTimer();
  CudaPhaseTimer(const CudaPhaseTimer&) = delete;
  CudaPhaseTimer& operator=(const CudaPhaseTimer&) = delete;

  void mark(StepPhase phase, cudaStream_t stream);
  void end(cudaStream_t stream);
  PhaseSeconds collect();

 private:
  cudaEvent_t next_event();

  std::vector<cudaEvent_t> events_;  // pool; the first num_used_ are this step's, in order
  std::vector<StepPhase> phases_;    // phase started by events_[i] (one fewer than used events once ended)
  size_t num_used_ = 0;
  bool ended_ = false;
};

}  // namespace gossamer::model::cuda
