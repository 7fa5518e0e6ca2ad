// StepCopy: an owned copy of one launched step (Model::launch_step's batch and sampling rows), for backends
// that run a step after launch_step has returned (the default launch_step; test doubles that run steps on a
// worker thread).
//
// Contract: assign() copies everything the batch's and the rows' spans and mask pointers refer to, so the
// caller's storage may change as soon as it returns; batch and rows then point into the copy, valid until
// the next assign(). feed_pending_tokens() writes each pending row's id (SequenceInput::pending_from_row)
// from the tokens the step before it drew, and clears the marks.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "model/model.h"

namespace gossamer::model {

class StepCopy {
 public:
  void assign(const ForwardBatch& batch, std::optional<std::span<const RowSampling>> rows, int32_t vocab_size);
  // Throws gossamer::Error when a pending row is past `drawn`.
  void feed_pending_tokens(std::span<const int32_t> drawn);
  bool has_pending_tokens() const;

  bool sampled = false;  // launched with rows (forward_sample), else for logits (forward)
  ForwardBatch batch;
  std::vector<RowSampling> rows;

 private:
  std::vector<int32_t> ints_;     // tokens, block tables, sliding tables, penalty tokens and counts
  std::vector<uint32_t> masks_;   // [masked rows, ceil(vocab / 32)] token masks
  std::vector<size_t> token_at_;  // per sequence: where its tokens start in ints_
};

}  // namespace gossamer::model
