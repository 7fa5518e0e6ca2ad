#include "engine/token_mask_filler.h"

#include <algorithm>
#include <chrono>

#include "core/parallel.h"

namespace gossamer::engine {

void TokenMaskFiller::fill(std::span<TokenConstraint* const> constraints) {
  const size_t rows = constraints.size();
  masked_.assign(rows, 0);
  none_allowed_.assign(rows, 0);
  num_masked_ = 0;
  last_seconds_ = 0.0;
  num_constrained_ = static_cast<int32_t>(
      std::count_if(constraints.begin(), constraints.end(), [](TokenConstraint* c) { return c != nullptr; }));
  if (num_constrained_ == 0) return;
  const auto start = std::chrono::steady_clock::now();
  masks_.resize(rows * words());
  if (!pool_) pool_ = std::make_unique<WorkerPool>(cpu_thread_count());
  constrained_rows_.clear();
  for (size_t row = 0; row < rows; ++row) {
    if (constraints[row] != nullptr) constrained_rows_.push_back(row);
  }
  pool_->run(static_cast<int64_t>(constrained_rows_.size()), [&](int64_t index) {
    const size_t row = constrained_rows_[static_cast<size_t>(index)];
    const std::span<uint32_t> mask(masks_.data() + row * words(), words());
    masked_[row] = constraints[row]->fill_mask(mask);
    none_allowed_[row] = masked_[row] && !token_mask_allows_any(mask, vocab_size_);
  });
  num_masked_ = static_cast<int32_t>(std::count(masked_.begin(), masked_.end(), uint8_t{1}));
  last_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace gossamer::engine
