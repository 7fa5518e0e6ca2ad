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
  parallel_for(static_cast<int64_t>(rows), 1, [&](int64_t begin, int64_t end) {
    for (auto row = static_cast<size_t>(begin); row < static_cast<size_t>(end); ++row) {
      if (constraints[row] == nullptr) continue;
      const std::span<uint32_t> mask(masks_.data() + row * words(), words());
      masked_[row] = constraints[row]->fill_mask(mask);
      none_allowed_[row] = masked_[row] && !token_mask_allows_any(mask, vocab_size_);
    }
  });
  num_masked_ = static_cast<int32_t>(std::count(masked_.begin(), masked_.end(), uint8_t{1}));
  last_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace gossamer::engine
