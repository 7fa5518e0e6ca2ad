#include "model/cuda/cuda_phase_timer.h"

#include "core/cuda/check.h"

namespace gossamer::model::cuda {

CudaPhaseTimer::~CudaPhaseTimer() {
  for (cudaEvent_t event : events_) cudaEventDestroy(event);
}

cudaEvent_t CudaPhaseTimer::next_event() {
  if (num_used_ == events_.size()) {
    cudaEvent_t event = nullptr;
    GOSSAMER_CUDA_CHECK(cudaEventCreate(&event));
    events_.push_back(event);
  }
  return events_[num_used_++];
}

void CudaPhaseTimer::mark(StepPhase phase, cudaStream_t stream) {
  if (phase == StepPhase::kEmbedding) {
    num_used_ = 0;
    phases_.clear();
    ended_ = false;
  }
  if (ended_) return;  // a step that ran no kernels (nothing to time) after the last closed one
  GOSSAMER_CUDA_CHECK(cudaEventRecord(next_event(), stream));
  phases_.push_back(phase);
}

void CudaPhaseTimer::end(cudaStream_t stream) {
  if (phases_.empty() || ended_) return;
  GOSSAMER_CUDA_CHECK(cudaEventRecord(next_event(), stream));
  ended_ = true;
}

PhaseSeconds CudaPhaseTimer::collect() {
  PhaseSeconds out;
  if (!ended_) return out;
  GOSSAMER_CUDA_CHECK(cudaEventSynchronize(events_[num_used_ - 1]));
  for (size_t i = 0; i < phases_.size(); ++i) {
    float ms = 0.0f;
    GOSSAMER_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i], events_[i + 1]));
    out.seconds[static_cast<size_t>(phases_[i])] += ms * 1e-3;
    ++out.counts[static_cast<size_t>(phases_[i])];
  }
  float span_ms = 0.0f;
  GOSSAMER_CUDA_CHECK(cudaEventElapsedTime(&span_ms, events_[0], events_[num_used_ - 1]));
  out.span = span_ms * 1e-3;
  out.valid = true;
  return out;
}

}  // namespace gossamer::model::cuda
