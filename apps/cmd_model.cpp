// Model sub-commands on token ids: make-dummy, logits, generate.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "command.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/npy.h"
#include "model/dummy_checkpoint.h"
#include "model/loader.h"
#include "model/sequence_runner.h"
#include "parallel_flags.h"
#include "rank_launch.h"
#include "weights_flag.h"

namespace gossamer::app {

namespace {

int run_make_dummy(int argc, char** argv) {
  CLI::App cli{"Write a deterministic random gpt-oss checkpoint in the Hugging Face layout"};
  std::string preset = "tiny", out;
  uint64_t seed = 0;
  cli.add_option("--preset", preset, "tiny | 20b | 20b-2layers | 120b")
      ->check(CLI::IsMember({"tiny", "20b", "20b-2layers", "120b"}));
  cli.add_option("--out", out, "output directory")->required();
  cli.add_option("--seed", seed, "random seed");
  std::string init = "standard";
  cli.add_option("--init", init, "weight scaling: standard | conditioned (see model/dummy_checkpoint.h)")
      ->check(CLI::IsMember({"standard", "conditioned"}));
  CLI11_PARSE(cli, argc, argv);
  const auto config = model::preset_config(preset);
  model::write_dummy_checkpoint(config, seed, out, model::parse_dummy_init(init));
  std::printf("{\"preset\": \"%s\", \"out\": \"%s\", \"seed\": %llu}\n", preset.c_str(), out.c_str(),
              static_cast<unsigned long long>(seed));
  return 0;
}

std::vector<std::vector<int32_t>> read_token_batch(const std::string& path) {
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(read_text_file(path));
  } catch (const nlohmann::json::exception& error) {
    GOSSAMER_THROW(path, ": invalid JSON: ", error.what());
  }
  GOSSAMER_CHECK(parsed.is_array() && !parsed.empty(), path, ": expected a non-empty JSON array of token-id arrays");
  std::vector<std::vector<int32_t>> batch;
  for (const auto& row : parsed) {
    GOSSAMER_CHECK(row.is_array() && !row.empty(), path, ": every sequence must be a non-empty array of token ids");
    std::vector<int32_t> ids;
    for (const auto& id : row) {
      GOSSAMER_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() <= INT32_MAX, path,
                     ": token ids must be non-negative integers, got ", id.dump());
      ids.push_back(id.get<int32_t>());
    }
    GOSSAMER_CHECK(batch.empty() || ids.size() == batch.front().size(), path,
                   ": all sequences must have the same length");
    batch.push_back(std::move(ids));
  }
  return batch;
}

int run_logits(int argc, char** argv) {
  CLI::App cli{"Logits at every position of equal-length token sequences, as a float32 .npy [batch, seq, vocab]"};
  std::string model_dir, input, output, device = "cpu";
  cli.add_option("--model", model_dir, "checkpoint directory")->required();
  cli.add_option("--input", input, "tokens.json: a JSON array of equal-length arrays of token ids")->required();
  cli.add_option("--output", output, "output .npy path")->required();
  cli.add_option("--device", device, "cpu | cuda");
  model::ModelOptions options;
  add_weights_flag(cli, options.weights);
  cli.add_option("--kv-cache-dtype", options.kv_cache_dtype,
                 "auto (default: bf16) | fp8 (alias fp8_e4m3: e4m3 K/V with scales of 1.0 on the full-attention "
                 "layers, sliding-window layers bf16; on cpu the float32 cache holds the rounded values)")
      ->check(CLI::IsMember({"auto", "fp8", "fp8_e4m3"}));
  add_parallel_flags(cli, options.layout);
  add_rank_flags(cli, options);
  VllmArgs args(argc, argv);
  CLI11_PARSE(cli, args.argc(), args.argv());
  const auto batch = read_token_batch(input);
  check_single_replica(options, device);
  RankLauncher ranks(device, args.argc(), args.argv(), options);
  auto model = model::load_model(model_dir, device, options);
  std::fprintf(stderr, "loaded %s: %s\n", model_dir.c_str(), layout_summary(*model, options).c_str());
  const auto start = std::chrono::steady_clock::now();
  const std::vector<float> logits = model::prefill_logits(*model, batch);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ranks.wait();
  if (options.rank != 0) return 0;  // every rank computed the same logits; rank 0 writes them
  const int64_t sequences = static_cast<int64_t>(batch.size()), length = static_cast<int64_t>(batch.front().size());
  write_npy_f32(output, {sequences, length, model->config().vocab_size}, logits.data());
  std::fprintf(stderr, "logits: %lld x %lld tokens in %.3f s on %s\n", static_cast<long long>(sequences),
               static_cast<long long>(length), seconds, model->backend_name().c_str());
  return 0;
}

int run_generate(int argc, char** argv) {
  CLI::App cli{"Greedy generation on token ids"};
  std::string model_dir, prompt, device = "cpu";
  int32_t max_tokens = 16;
  cli.add_option("--model", model_dir, "checkpoint directory")->required();
  cli.add_option("--prompt-tokens", prompt, "comma-separated token ids, e.g. 1,2,3")->required();
  cli.add_option("--max-tokens", max_tokens, "tokens to generate")->check(CLI::NonNegativeNumber);
  cli.add_option("--device", device, "cpu | cuda");
  model::ModelOptions options;
  add_weights_flag(cli, options.weights);
  cli.add_option("--kv-cache-dtype", options.kv_cache_dtype,
                 "auto (default: bf16) | fp8 (alias fp8_e4m3: e4m3 K/V with scales of 1.0 on the full-attention "
                 "layers, sliding-window layers bf16; on cpu the float32 cache holds the rounded values)")
      ->check(CLI::IsMember({"auto", "fp8", "fp8_e4m3"}));
  cli.add_flag(
      "--enforce-eager", [&](int64_t) { options.cuda_graphs = false; }, "no CUDA graphs for decode steps");
  add_parallel_flags(cli, options.layout);
  add_rank_flags(cli, options);
  VllmArgs args(argc, argv);
  CLI11_PARSE(cli, args.argc(), args.argv());
  std::vector<int32_t> ids;
  for (const auto& piece : CLI::detail::split(prompt, ',')) {
    try {
      size_t used = 0;
      const long long value = std::stoll(piece, &used);
      GOSSAMER_CHECK(used == piece.size() && value >= 0 && value <= INT32_MAX, "bad token id '", piece, "'");
      ids.push_back(static_cast<int32_t>(value));
    } catch (const std::logic_error&) {
      GOSSAMER_THROW("bad token id '", piece, "' in --prompt-tokens");
    }
  }
  check_single_replica(options, device);
  RankLauncher ranks(device, args.argc(), args.argv(), options);
  auto model = model::load_model(model_dir, device, options);
  std::fprintf(stderr, "loaded %s: %s\n", model_dir.c_str(), layout_summary(*model, options).c_str());
  const auto start = std::chrono::steady_clock::now();
  const auto generated = model::greedy_generate(*model, ids, max_tokens, {200002, 200012});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ranks.wait();
  if (options.rank != 0) return 0;  // every rank generated the same tokens; rank 0 prints them
  std::cout << nlohmann::json{{"prompt_tokens", ids}, {"generated_tokens", generated}, {"seconds", seconds}}.dump()
            << "\n";
  return 0;
}

}  // namespace

GOSSAMER_REGISTER_COMMAND("make-dummy", "write a deterministic random checkpoint (HF layout)", run_make_dummy);
GOSSAMER_REGISTER_COMMAND("logits", "float32 logits of token sequences to a .npy file", run_logits);
GOSSAMER_REGISTER_COMMAND("generate", "greedy generation on token ids", run_generate);

}  // namespace gossamer::app
