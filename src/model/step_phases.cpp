#include "model/step_phases.h"

namespace gossamer::model {

const char* step_phase_name(StepPhase phase) {
  static constexpr std::array<const char*, kNumStepPhases> kNames = {
      "embedding",   "attn norm", "qkv proj",    "rope + kv write", "attention",
      "o proj",      "mlp norm",  "router",      "experts",         "final norm + gather",
      "unembedding", "sampling",  "copy to host"};
  return kNames[static_cast<size_t>(phase)];
}

void WallPhaseClock::mark(StepPhase phase) {
  // NOTE: a mark of kEmbedding starts a new step (the first phase of every forward).
  if (phase == StepPhase::kEmbedding) marks_.clear();
  marks_.emplace_back(phase, Clock::now());
}

void WallPhaseClock::end() {
  end_ = Clock::now();
}

PhaseSeconds WallPhaseClock::collect() const {
  PhaseSeconds out;
  if (marks_.empty() || end_ < marks_.back().second) return out;
  for (size_t i = 0; i < marks_.size(); ++i) {
    const auto next = i + 1 < marks_.size() ? marks_[i + 1].second : end_;
    out.seconds[static_cast<size_t>(marks_[i].first)] += std::chrono::duration<double>(next - marks_[i].second).count();
    ++out.counts[static_cast<size_t>(marks_[i].first)];
  }
  out.span = std::chrono::duration<double>(end_ - marks_.front().second).count();
  out.valid = true;
  return out;
}

}  // namespace gossamer::model
