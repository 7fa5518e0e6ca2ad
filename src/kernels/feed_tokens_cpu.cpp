#include "kernels/feed_tokens.h"

namespace gossamer::kernels {

void feed_tokens_cpu(const FeedTokensParams& p) {
  for (int32_t f = 0; f < p.num_feeds; ++f) p.ids[p.feeds[2 * f]] = p.drawn[p.feeds[2 * f + 1]];
}

}  // namespace gossamer::kernels
