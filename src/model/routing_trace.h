// Which experts a forward step's tokens were routed to, per layer, for benchmarks (`gossamer bench decode
// --routing-stats`). How many of a layer's experts a step touches decides how many expert bytes it reads, and
// the dummy weights' routing need not resemble a trained model's: a decode figure at batch > 1 means little
// without it.
//
// Contract:
// - Off by default (Model::set_routing_trace(false)): a backend then pays one null check per layer.
// - While on, every forward records each layer's router logits (bias included, as the routing reads them) and
//   counts each token's top-k experts with the kernels' reference selection (kernels::moe_topk_softmax_cpu:
//   ties to the lower index); the cuda backend then runs every step eagerly (no CUDA graphs) and copies the
//   logits to the host after each router launch. Model::last_routing() returns the last forward's counts.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace gossamer::model {

struct RoutingCounts {
  int32_t tokens = 0;   // tokens of the step (every layer routes all of them)
  int32_t experts = 0;  // E
  int32_t top_k = 0;
  std::vector<std::vector<int32_t>> rows;  // [layer][expert]: the (token, expert) pairs routed to each expert
  bool valid() const { return !rows.empty(); }
};

// The counts of one forward, built a layer at a time.
class RoutingTrace {
 public:
  // Forgets the previous forward's layers.
  void begin_step() { counts_ = {}; }
  // Appends the next layer: logits [tokens, experts] f32 (row-major).
  void add_layer(std::span<const float> logits, int32_t tokens, int32_t experts, int32_t top_k);
  const RoutingCounts& counts() const { return counts_; }

 private:
  RoutingCounts counts_;
};

// How evenly a step's pairs spread over the experts, averaged over the layers.
struct RoutingSpread {
  double experts_touched = 0.0;  // experts with at least one row
  double uniform_touched = 0.0;  // the same expected of uniform routing: E · (1 − (1 − k/E)^T)
  double busiest_rows = 0.0;     // rows of the layer's busiest expert
  double mean_rows = 0.0;        // T · k / E
};
// Zeros for counts that are not valid().
RoutingSpread routing_spread(const RoutingCounts& counts);

}  // namespace gossamer::model
