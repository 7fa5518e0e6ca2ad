#include "bench_setup.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

#include "core/error.h"
#include "core/random.h"
#include "weights_flag.h"

namespace gossamer::app {

void ModelChoice::add_options(CLI::App& cli) {
  cli.add_option("--gpu-memory-limit-gib", gpu_memory_limit_gib,
                 "cuda: behave as a GPU of this many GiB (e.g. 80 on an H200); 0 = the whole GPU")
      ->check(CLI::NonNegativeNumber);
  add_weights_flag(cli, options.weights);
  cli.add_flag(
      "--enforce-eager", [this](int64_t) { options.cuda_graphs = false; }, "no CUDA graphs for decode steps");
  cli.add_option("--dense-gemm", options.dense_gemm,
                 "cuda: cublaslt (default: FP8 qkv/o above the decode GEMV's rows on cuBLASLt, where it is faster) "
                 "| gossamer")
      ->check(CLI::IsMember({"cublaslt", "gossamer"}));
  cli.add_option("--prefill-attention", options.prefill_attention,
                 "cuda: auto (default: wgmma on full-causal layers, mma.sync on sliding ones) | mma | wgmma")
      ->check(CLI::IsMember({"auto", "mma", "wgmma"}));
  cli.add_option("--prefill-attention-warpgroups", options.prefill_attention_warpgroups,
                 "cuda: the wgmma prefill attention's consumer warpgroups, 0 (auto) | 2 (128-query tiles) | 3 "
                 "(192) (A/B)")
      ->check(CLI::IsMember({0, 2, 3}))
      ->group("");  // hidden: A/B runs
  cli.add_flag("--prefill-attention-fixed-max,!--no-prefill-attention-fixed-max", options.prefill_attention_fixed_max,
               "cuda: the wgmma prefill attention (three warpgroups) keeps the running max on unmasked key tiles "
               "after the first (default; A/B)")
      ->group("");  // hidden: A/B runs
  cli.add_option("--decode-attention-min-tiles-per-split", options.decode_attention_min_tiles_per_split,
                 "cuda: decode attention's splits hold at least N key tiles where one per tile would pass two "
                 "waves of CTAs (default 4; 1: no floor) (A/B)")
      ->check(CLI::PositiveNumber)
      ->group("");  // hidden: A/B runs
  cli.add_flag("--decode-attention-prefetch-kv,!--no-decode-attention-prefetch-kv",
               options.decode_attention_prefetch_kv,
               "cuda: decode attention loads its first key tile of earlier steps before its PDL wait (default; A/B)")
      ->group("");  // hidden: A/B runs
  cli.add_flag("--decode-qkv-rope,!--no-decode-qkv-rope", options.decode_qkv_rope,
               "cuda: RoPE and the K/V cache write in the decode QKV GEMV's epilogue (default; A/B)")
      ->group("");  // hidden: A/B runs
  cli.add_flag("--prefill-norm-fp8,!--no-prefill-norm-fp8", options.prefill_norm_fp8,
               "cuda: a prefill step's attention norm writes its rows quantized for the FP8 QKV GEMM (default; A/B)")
      ->group("");  // hidden: A/B runs
  cli.add_flag("--prefill-moe-combine-deferred,!--no-prefill-moe-combine-deferred",
               options.prefill_moe_combine_deferred,
               "cuda: the prefill MoE's combine summed by the next norm (default; A/B)")
      ->group("");  // hidden: A/B runs
  cli.add_option(
         "--moe-decode", options.moe_decode,
         "cuda: auto (default: the weight-streaming grouped GEMM at 9-64 tokens with FP8 experts; MXFP4 experts on "
         "the grouped GEMMs from 9 tokens) | gemv (never stream; MXFP4 experts on GEMV chunks up to 16 tokens) | "
         "stream | gemm (never stream; the grouped GEMMs from 9 tokens)")
      ->check(CLI::IsMember({"auto", "gemv", "stream", "gemm"}));
  cli.add_flag("--split-mixed-attention,!--no-split-mixed-attention", options.split_mixed_attention,
               "cuda: decode sequences of mixed steps on the decode attention kernel (default; off: all on the "
               "prefill kernel)");
  cli.add_option("--moe-gemv-shape", options.moe_gemv_shape,
                 "cuda: the MXFP4 decode GEMVs' launch shape, rule | warps4 | warps4-stages4 (A/B)")
      ->check(CLI::IsMember({"rule", "warps4", "warps4-stages4"}))
      ->group("");  // hidden: candidates
  cli.add_flag("--moe-gemv-single-row,!--no-moe-gemv-single-row", options.moe_gemv_single_row,
               "cuda: the MXFP4 decode GEMVs' single-row kernel at one token (default; A/B)")
      ->group("");  // hidden: A/B runs
  cli.add_flag("--moe-gemv-x-shared,!--no-moe-gemv-x-shared", options.moe_gemv_x_shared,
               "cuda: the single-row MXFP4 gate_up GEMV stages x in shared memory by one bulk copy before its PDL "
               "wait (default; A/B)")
      ->group("");  // hidden: A/B runs
  cli.add_flag("--moe-quantize-tokens-once,!--no-moe-quantize-tokens-once", options.moe_quantize_tokens_once,
               "cuda: the MoE quantizes each token once and scatters it to its expert-order rows (default; A/B)")
      ->group("");  // hidden: A/B runs
  cli.add_flag(
         "--moe-mxfp4-w4a8,!--no-moe-mxfp4-w4a8", options.moe_mxfp4_w4a8,
         "cuda: MXFP4 experts on the W4A8 GEMMs from 128 rows per expert (default; off: W4A16 at every size; A/B)")
      ->group("");  // hidden: A/B runs
  cli.add_option("--moe-w4a16-narrow-max-rows", options.moe_w4a16_narrow_max_rows,
                 "cuda: the W4A16 expert GEMMs' 32-token tiles up to this many rows per expert on average (default: "
                 "the measured threshold; 0: 128-token tiles at every size; A/B)")
      ->group("");  // hidden: A/B runs
  cli.add_option("--moe-gemm-tile", options.moe_gemm_tile,
                 "cuda: the expert GEMMs' tile at 128-row tiles, auto | 128x192tma2 | 128x256tma2 | 128x256tma2b "
                 "(pairs share B) (A/B)")
      ->check(CLI::IsMember({"auto", "128x192tma2", "128x256tma2", "128x256tma2b"}))
      ->group("");
  cli.add_option("--kv-cache-dtype", options.kv_cache_dtype,
                 "auto (default: bf16) | fp8 (alias fp8_e4m3: e4m3 K/V with scales of 1.0 on the full-attention "
                 "layers, sliding-window layers bf16; on cpu the float32 cache holds the rounded values)")
      ->check(CLI::IsMember({"auto", "fp8", "fp8_e4m3"}));
  cli.add_option("--model", model_dir, "checkpoint directory");
  cli.add_option("--load-format", load_format, "auto | dummy (random weights of --preset shapes, no disk)");
  cli.add_option("--preset", preset, "20b | 120b | tiny (with --load-format dummy)");
  cli.add_option("--device", device, "cuda | cpu");
  cli.add_option("--seed", seed, "seed of the dummy weights and of the prompt tokens");
}

std::unique_ptr<model::Model> ModelChoice::load() const {
  const auto start = std::chrono::steady_clock::now();
  GOSSAMER_CHECK(load_format == "dummy" || !model_dir.empty(), "give --model DIR or --load-format dummy");
  GOSSAMER_CHECK(gpu_memory_limit_gib == 0 || device == "cuda", "--gpu-memory-limit-gib needs --device cuda");
  model::limit_gpu_memory(static_cast<int64_t>(gpu_memory_limit_gib * double(int64_t{1} << 30)),
                          model::gpu_of(options));
  auto model = load_format == "dummy" ? model::load_dummy_model(preset, seed, device, options)
                                      : model::load_model(model_dir, device, options);
  std::fprintf(stderr, "loaded %s on %s (weights %s, %.1f GiB; KV cache %s) in %.1f s\n",
               load_format == "dummy" ? ("dummy " + preset).c_str() : model_dir.c_str(), model->backend_name().c_str(),
               device == "cuda" ? options.weights.c_str() : "f32",
               static_cast<double>(model->weight_bytes()) / double(1u << 30), model->kv_cache_dtype_name().c_str(),
               bench_seconds_since(start));
  return model;
}

std::vector<int32_t> bench_random_tokens(uint64_t seed, int64_t count, int32_t vocab) {
  SplitMix64 rng(seed);
  std::vector<int32_t> tokens(static_cast<size_t>(count));
  for (int32_t& token : tokens)
    token = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(std::min(vocab, 199998)));
  return tokens;
}

double bench_seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

nlohmann::json phase_seconds_json(const model::PhaseSeconds& phases) {
  nlohmann::json out = nlohmann::json::object();
  for (int p = 0; p < model::kNumStepPhases; ++p) {
    if (phases.counts[static_cast<size_t>(p)] == 0) continue;
    out[model::step_phase_name(static_cast<model::StepPhase>(p))] = {
        {"us", phases.seconds[static_cast<size_t>(p)] * 1e6}, {"count", phases.counts[static_cast<size_t>(p)]}};
  }
  return out;
}

std::vector<int32_t> prepare_prefill(model::Model& model, int64_t max_tokens) {
  const int32_t blocks = static_cast<int32_t>((max_tokens + kBenchBlockSize - 1) / kBenchBlockSize);
  model.allocate_kv_cache(blocks, kBenchBlockSize);
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  std::iota(table.begin(), table.end(), 0);
  return table;
}

double time_prefill(model::Model& model, const std::vector<int32_t>& tokens, const std::vector<int32_t>& table,
                    std::vector<float>& logits) {
  model::ForwardBatch batch;
  batch.sequences.push_back(model::SequenceInput{tokens, 0, table, model::LogitsWanted::kLast});
  const auto start = std::chrono::steady_clock::now();
  model.forward(batch, logits);  // returns after the logits reached the host
  return bench_seconds_since(start);
}

model::ForwardBatch DecodeSetup::step(int index, int32_t queries) const {
  GOSSAMER_CHECK(queries >= 1 && queries <= max_queries, "decode setup: ", queries, " queries a step (at most ",
                 max_queries, ")");
  model::ForwardBatch forward;
  forward.sequences.reserve(static_cast<size_t>(batch));
  for (int32_t b = 0; b < batch; ++b) {
    forward.sequences.push_back(model::SequenceInput{
        std::span(tokens).subspan(static_cast<size_t>(b) * static_cast<size_t>(max_queries),
                                  static_cast<size_t>(queries)),
        static_cast<int32_t>(context + int64_t{index} * queries), tables[static_cast<size_t>(b)],
        queries > 1 ? model::LogitsWanted::kAll : model::LogitsWanted::kLast, sliding_tables[static_cast<size_t>(b)]});
  }
  return forward;
}

std::optional<DecodeSetup> prepare_decode(model::Model& model, int64_t context, int32_t batch, int max_steps, bool ring,
                                          double budget_gib, uint64_t token_seed, double* kv_gib, int32_t max_queries) {
  GOSSAMER_CHECK(batch >= 1 && context >= 0 && max_steps >= 1 && max_queries >= 1, "decode setup: batch ", batch,
                 ", context ", context, ", steps ", max_steps, ", queries ", max_queries);
  const int64_t new_positions = int64_t{max_steps} * max_queries;
  GOSSAMER_CHECK(context + new_positions <= model.config().max_position_embeddings, "context ", context, " + ",
                 new_positions, " positions exceeds the model's ", model.config().max_position_embeddings);
  DecodeSetup setup;
  setup.context = context;
  setup.batch = batch;
  setup.max_queries = max_queries;
  const int64_t per_seq = (context + new_positions + kBenchBlockSize - 1) / kBenchBlockSize;
  // The ring (as the engine does it): sliding layers hold only the last window + margin + the steps.
  const int32_t sliding_layers = ring ? model.num_sliding_layers() : 0;
  const int64_t ring_positions = model.config().sliding_window + model::kSlidingKeepMargin + new_positions;
  const int64_t ring_per_seq = sliding_layers > 0 ? std::min(per_seq, ring_positions / kBenchBlockSize + 2) : 0;
  const model::KvPoolBytes pool = model::kv_pool_bytes_per_token(model, sliding_layers > 0);
  setup.kv_gib = (static_cast<double>(per_seq * batch) * static_cast<double>(pool.main * kBenchBlockSize) +
                  static_cast<double>(ring_per_seq * batch) * static_cast<double>(pool.ring * kBenchBlockSize)) /
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
  setup.tokens = bench_random_tokens(token_seed, batch * max_queries, model.config().vocab_size);
  return setup;
}

double decode_seconds_per_step(model::Model& model, const DecodeSetup& setup, int warmup, int steps, int32_t queries) {
  // The engine's step: sampled on the device where the backend can (greedy; only token ids come back),
  // else the logits to the host. Copying B × 201,088 logits to the host would time PCIe, not the model.
  const bool sampled = model.samples_on_device();
  std::vector<float> logits;
  std::vector<int32_t> tokens;
  std::vector<model::RowSampling> rows;
  auto run = [&](int i) {
    const model::ForwardBatch batch = setup.step(i, queries);
    if (!sampled) return model.forward(batch, logits);
    rows.assign(static_cast<size_t>(setup.batch * queries), model::RowSampling{});  // a logits row per query
    model.forward_sample(batch, rows, tokens);
  };
  for (int i = 0; i < warmup; ++i) run(i);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) run(warmup + i);
  return bench_seconds_since(start) / steps;
}

}  // namespace gossamer::app
