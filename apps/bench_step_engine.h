// The engine side of `gossamer bench step`: B requests run through a real engine::Engine on the loaded
// model, and each pure decode step (B sequences, one token each) split into the engine's host phases.
//
// The model is wrapped in a probe that stamps each forward's start and end; the engine's StepObserver
// (engine/engine.h) stamps the end of its step and reports the step's length, so that, per step:
//   before forward = forward start − step start (the batch built from the requests, token masks)
//   forward        = the model's forward (forward_sample on a backend that samples on its device)
//   after forward  = step end − forward end (host sampling, stop checks, output events queued)
//   between steps  = next step start − step end (stats, output callbacks, the loop, schedule())
//
// With `overlapped` the probe passes the engine's launch_step/wait_step through to the model instead, so
// a backend that overlaps (cuda) does: the phases then overlap each other, and the figure that counts is
// `period`, the time between the ends of consecutive decode steps (the engine's real step rate).
//
// With `make_constraint`, every request carries the token constraint it returns (structured output), and
// `token_masks` is the mean wall time each timed step's masks took to fill (StepInfo::token_mask_seconds).
//
// Contract: measure_engine_steps() leaves `model` usable (its KV cache re-allocated) and returns the
// means over the timed decode steps (the first `warmup` decode steps are not timed); throws
// gossamer::Error when the engine refuses the requests or produces fewer decode steps than asked.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "engine/token_constraint.h"
#include "model/model.h"

namespace gossamer::app {

struct EngineStepTimes {
  double before_forward = 0.0, forward = 0.0, after_forward = 0.0, between_steps = 0.0;  // seconds, means
  double step = 0.0;         // the engine's whole step (StepInfo::seconds), mean
  double period = 0.0;       // end of a decode step → end of the next, mean
  double token_masks = 0.0;  // filling the token masks, mean (0 without constraints)
  int32_t timed_steps = 0;
};

using ConstraintFactory = std::function<std::shared_ptr<engine::TokenConstraint>()>;

EngineStepTimes measure_engine_steps(model::Model& model, int32_t batch, int32_t prompt_len, int warmup, int steps,
                                     uint64_t seed, bool overlapped = false,
                                     const ConstraintFactory& make_constraint = {});

}  // namespace gossamer::app
