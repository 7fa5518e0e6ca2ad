// TokenMaskFiller: the token masks of one step's sampled rows, filled rows in parallel (structured output,
// token_constraint.h). The Runner fills a step's masks with it before launching the step, so its time is
// time the device waits: `last_seconds()` is that wall time, reported per step (StepInfo::token_mask_seconds).
// The rows run on a persistent WorkerPool (cpu_thread_count() threads, started at the first constrained
// step), each thread taking the next row as it gets free: no thread start-up per step, and a slow row does
// not hold up a fixed share of the others.
//
// Contract: fill() calls fill_mask() once on every non-null constraint, each on one thread (different rows'
// constraints run at the same time, as TokenConstraint allows); rows with a null constraint are unmasked.
// After fill(), mask(row) is the row's [token_mask_words(vocab)] words, or null when the row is unmasked
// (no constraint, or its constraint allowed every token); the pointers stay valid until the next fill().
// Not thread-safe: one filler per Runner.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/worker_pool.h"
#include "engine/token_constraint.h"

namespace gossamer::engine {

class TokenMaskFiller {
 public:
  explicit TokenMaskFiller(int32_t vocab_size) : vocab_size_(vocab_size), words_(token_mask_words(vocab_size)) {}

  // constraints: one per sampled row, null = unconstrained.
  void fill(std::span<TokenConstraint* const> constraints);

  const uint32_t* mask(size_t row) const { return masked_[row] ? masks_.data() + row * words() : nullptr; }
  // The row's constraint filled a mask that allows no token below the vocabulary size (its bug).
  bool none_allowed(size_t row) const { return none_allowed_[row] != 0; }
  bool any_masked() const { return num_masked_ > 0; }
  // Rows whose constraint was asked for a mask (whether or not it restricted anything).
  int32_t num_constrained() const { return num_constrained_; }
  // Wall time of the last fill() (0 when no row was constrained).
  double last_seconds() const { return last_seconds_; }

 private:
  size_t words() const { return static_cast<size_t>(words_); }

  int32_t vocab_size_ = 0;
  int32_t words_ = 0;
  std::vector<uint32_t> masks_;  // [rows, words]
  std::vector<uint8_t> masked_, none_allowed_;
  std::vector<size_t> constrained_rows_;  // the rows with a constraint, in order
  int32_t num_masked_ = 0, num_constrained_ = 0;
  double last_seconds_ = 0.0;
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace gossamer::engine
