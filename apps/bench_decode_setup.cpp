#include "bench_decode_setup.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

#include "core/error.h"
#include "core/random.h"

namespace gossamer::app {

void ModelChoice::add_options(CLI::App& cli) {
  cli.add_option("--weights", options.weights, "cuda weight format: fp8 | bf16 (the loader checks it)");
  cli.add_flag(
      "--enforce-eager", [this](int64_t) { options.cuda_graphs = false; }, "no CUDA graphs for decode steps");
  cli.add_option("--model", model_dir, "checkpoint directory");
  cli.add_option("--load-format", load_format, "auto | dummy (random weights of --preset shapes, no disk)");
  cli.add_option("--preset", preset, "20b | 120b | tiny (with --load-format dummy)");
  cli.add_option("--device", device, "cuda | cpu");
  cli.add_option("--seed", seed, "seed of the dummy weights and of the prompt tokens");
}

std::unique_ptr<model::Model> ModelChoice::load() const {
  const auto start = std::chrono::steady_clock::now();
  GOSSAMER_CHECK(load_format == "dummy" || !model_dir.empty(), "give --model DIR or --load-format dummy");
  auto model = load_format == "dummy" ? model::load_dummy_model(preset, seed, device, options)
                                      : model::load_model(model_dir, device, options);
  std::fprintf(stderr, "loaded %s on %s in %.1f s\n",
               load_format == "dummy" ? ("dummy " + preset).c_str() : model_dir.c_str(), model->backend_name().c_str(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return model;
}

std::vector<int32_t> bench_random_tokens(uint64_t seed, int64_t count, int32_t vocab) {
  SplitMix64 rng(seed);
  std::vector<int32_t> tokens(static_cast<size_t>(count));
  for (int32_t& token : tokens)
    token = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(std::min(vocab, 199998)));
  return tokens;
}

model::ForwardBatch DecodeSetup::step(int index) const {
  model::ForwardBatch forward;
  forward.sequences.reserve(static_cast<size_t>(batch));
  for (int32_t b = 0; b < batch; ++b) {
    forward.sequences.push_back(model::SequenceInput{
        std::span(tokens).subspan(static_cast<size_t>(b), 1), static_cast<int32_t>(context + index),
        tables[static_cast<size_t>(b)], model::LogitsWanted::kLast, sliding_tables[static_cast<size_t>(b)]});
  }
  return forward;
}

std::optional<DecodeSetup> prepare_decode(model::Model& model, int64_t context, int32_t batch, int max_steps, bool ring,
                                          double budget_gib, uint64_t seed, double* kv_gib) {
  GOSSAMER_CHECK(batch >= 1 && context >= 0 && max_steps >= 1, "decode setup: batch ", batch, ", context ", context,
                 ", steps ", max_steps);
  GOSSAMER_CHECK(context + max_steps <= model.config().max_position_embeddings, "context ", context, " + ", max_steps,
                 " steps exceeds the model's ", model.config().max_position_embeddings, " positions");
  DecodeSetup setup;
  setup.context = context;
  setup.batch = batch;
  const int64_t per_seq = (context + max_steps + kBenchBlockSize - 1) / kBenchBlockSize;
  // The ring (as the engine does it): sliding layers hold only the last window + margin + the steps.
  const int32_t layers = std::max(1, model.config().num_layers);
  const int32_t sliding_layers = ring ? model.num_sliding_layers() : 0;
  const int64_t ring_positions = model.config().sliding_window + model::kSlidingKeepMargin + max_steps;
  const int64_t ring_per_seq = sliding_layers > 0 ? std::min(per_seq, ring_positions / kBenchBlockSize + 2) : 0;
  const double block_bytes = static_cast<double>(model.kv_bytes_per_token()) * kBenchBlockSize;
  setup.kv_gib = (static_cast<double>(per_seq * batch) * block_bytes * (layers - sliding_layers) / layers +
                  static_cast<double>(ring_per_seq * batch) * block_bytes * sliding_layers / layers) /
                 double(1u << 30);
  if (kv_gib != nullptr) *kv_gib = setup.kv_gib;
  if (setup.kv_gib > budget_gib) return std::nullopt;
  model.allocate_kv_cache(static_cast<int32_t>(per_seq * batch), kBenchBlockSize,
                          static_cast<int32_t>(ring_per_seq * batch));
  setup.tables.resize(static_cast<size_t>(batch));
  setup.sliding_tables.resize(static_cast<size_t>(batch));
  for (int32_t b = 0; b < batch; ++b) {
    auto& table = setup.tables[static_cast<size_t>(b)];
    table.resize(static_cast<size_t>(per_seq));
    std::iota(table.begin(), table.end(), static_cast<int32_t>(b * per_seq));
    if (ring_per_seq == 0) continue;
    // The last ring_per_seq blocks get the sequence's own ring blocks; older entries are stale (never read).
    auto& sliding = setup.sliding_tables[static_cast<size_t>(b)];
    sliding.resize(static_cast<size_t>(per_seq));
    const int64_t first_ring = per_seq - ring_per_seq;
    for (int64_t i = 0; i < per_seq; ++i) {
      sliding[static_cast<size_t>(i)] = static_cast<int32_t>(b * ring_per_seq + std::max<int64_t>(0, i - first_ring));
    }
  }
  setup.tokens = bench_random_tokens(seed + static_cast<uint64_t>(batch), batch, model.config().vocab_size);
  return setup;
}

}  // namespace gossamer::app
