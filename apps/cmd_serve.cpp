// `gossamer serve [MODEL_DIR | --model DIR]`: the OpenAI-compatible server (vLLM's flag names; docs/server-http.md).
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include "command.h"
#include "core/error.h"
#include "core/log.h"
#include "core/mapped_file.h"
#include "engine/speculative.h"
#include "model/embedded_default.h"
#include "model/loader.h"
#include "model/spmd_model.h"
#include "parallel_flags.h"
#include "rank_launch.h"
#include "server/openai_server.h"
#include "testing/test_backend.h"
#include "text/tokenizer.h"
#include "weights_flag.h"

namespace gossamer::app {

namespace {

// The control channel of a cuda group (model/spmd_model.h): rank 0's TCP bootstrap one port above the
// communicator's. NOTE: ranks finish loading at different times, so connecting may take minutes, and
// between requests the channel idles for as long as the server does.
std::unique_ptr<comm::TcpBootstrap> connect_control(const model::ModelOptions& options) {
  comm::BootstrapConfig config;
  config.host = options.dist_host;
  config.port = options.dist_port + 1;
  config.rank = options.rank;
  config.world_size = options.layout.tensor_parallel;
  config.timeout = std::chrono::minutes(30);
  config.idle_timeout = std::chrono::hours(24 * 365);
  return std::make_unique<comm::TcpBootstrap>(config);
}

// Ranks 1..N−1 of `serve --device cuda -tp N`: with this rank's shard loaded, replay rank 0's model
// calls until it stops (exit 0) or is gone (exit 1).
int run_serve_worker(std::unique_ptr<model::Model> model, const model::ModelOptions& options) {
  GOSSAMER_LOG_INFO("rank ", options.rank, ": ", layout_summary(*model, options), ", serving rank 0's steps");
  const auto control = connect_control(options);
  model::run_spmd_worker(*model, *control);
  return 0;
}

int run_serve(int argc, char** argv) {
  CLI::App cli{"Serve gpt-oss over an OpenAI-compatible HTTP API (without a model: the embedded default on the CPU)"};
  cli.option_defaults()->always_capture_default();
  std::string model_dir, model_flag, device = "auto", served_name, log_format = "text", log_level = "info";
  std::string reasoning_field = "both", port_file, speculative_config;
  std::vector<std::string> api_keys;
  server::ServerConfig config;
  engine::EngineConfig engine_config;
  double gpu_memory_utilization = 0.9, gpu_memory_limit_gib = 0;
  int64_t kv_cache_memory_bytes = 0;
  bool disable_log_stats = false, no_vllm_metrics = false;
  uint64_t seed = 0;
  test_support::TestBackend test;  // hidden flags of the end-to-end tests; off the product path unless given

  cli.add_option("model_dir", model_dir, "checkpoint directory (Hugging Face layout); none = embedded default");
  cli.add_option("--model", model_flag, "same as the positional MODEL_DIR")->envname("GOSSAMER_MODEL")->group("Model");
  cli.add_option("--device", device, "auto (cuda when a GPU is present) | cpu | cuda")
      ->envname("GOSSAMER_DEVICE")
      ->group("Model");
  model::ModelOptions model_options;
  add_weights_flag(cli, model_options.weights)->group("Model");
  cli.add_flag(
         "--enforce-eager", [&](int64_t) { model_options.cuda_graphs = false; }, "no CUDA graphs for decode steps")
      ->group("Model");
  cli.add_option(
         "--dense-gemm", model_options.dense_gemm,
         "cuda: cublaslt (default: FP8 qkv/o above the decode GEMV's rows on cuBLASLt, where it is faster) | gossamer")
      ->envname("GOSSAMER_DENSE_GEMM")
      ->check(CLI::IsMember({"cublaslt", "gossamer"}))
      ->group("Model");
  cli.add_option("--prefill-attention", model_options.prefill_attention,
                 "cuda: auto (default: wgmma on full-causal layers, mma.sync on sliding ones) | mma | wgmma")
      ->envname("GOSSAMER_PREFILL_ATTENTION")
      ->check(CLI::IsMember({"auto", "mma", "wgmma"}))
      ->group("Model");
  cli.add_flag("--split-mixed-attention,!--no-split-mixed-attention", model_options.split_mixed_attention,
               "cuda: decode sequences of mixed steps on the decode attention kernel (default; off: all on the "
               "prefill kernel)")
      ->envname("GOSSAMER_SPLIT_MIXED_ATTENTION")
      ->group("Model");
  cli.add_option("--kv-cache-dtype", model_options.kv_cache_dtype,
                 "auto (default: bf16) | fp8 (alias fp8_e4m3: e4m3 K/V with scales of 1.0 on the full-attention "
                 "layers, sliding-window layers bf16; on cpu the float32 cache holds the rounded values)")
      ->envname("GOSSAMER_KV_CACHE_DTYPE")
      ->check(CLI::IsMember({"auto", "fp8", "fp8_e4m3"}))
      ->group("Model");
  cli.add_option(
         "--moe-decode", model_options.moe_decode,
         "cuda: auto (default: the weight-streaming grouped GEMM at 9-64 tokens with FP8 experts; MXFP4 experts on "
         "the grouped GEMMs from 9 tokens) | gemv (never stream; MXFP4 experts on GEMV chunks up to 16 tokens) | "
         "stream | gemm (never stream; the grouped GEMMs from 9 tokens)")
      ->envname("GOSSAMER_MOE_DECODE")
      ->check(CLI::IsMember({"auto", "gemv", "stream", "gemm"}))
      ->group("Model");
  bool host_sampling = false;
  cli.add_flag("--host-sampling", host_sampling,
               "sample on the CPU from copied logits (default: on the GPU, only token ids come back)")
      ->group("Model");
  std::string load_format = "auto", preset = "20b";
  cli.add_option("--load-format", load_format, "auto | dummy (random weights of --preset shapes, no disk)")
      ->envname("GOSSAMER_LOAD_FORMAT")
      ->group("Model");
  cli.add_option("--preset", preset, "20b | 120b | tiny | embedded (with --load-format dummy)")->group("Model");
  add_parallel_flags(cli, model_options.layout, "Model");
  add_rank_flags(cli, model_options);
  cli.add_option("--served-model-name", served_name, "model id in the API (default: the model path)")
      ->envname("GOSSAMER_SERVED_MODEL_NAME")
      ->group("Model");
  cli.add_option("--seed", seed, "seed of dummy weights and of unseeded requests")
      ->envname("GOSSAMER_SEED")
      ->group("Model");

  cli.add_option("--host", config.http.host, "address to bind")->envname("GOSSAMER_HOST")->group("HTTP");
  cli.add_option("--port", config.http.port, "port to bind (0 = any free port)")
      ->envname("GOSSAMER_PORT")
      ->group("HTTP");
  cli.add_option("--api-key", api_keys, "required bearer key(s) for /v1/* (repeatable)")
      ->envname("GOSSAMER_API_KEY")
      ->group("HTTP");
  cli.add_option("--http-threads", config.http.num_threads, "HTTP I/O threads")
      ->envname("GOSSAMER_HTTP_THREADS")
      ->group("HTTP");
  cli.add_option("--allowed-origins", config.http.allowed_origins, "CORS origins browsers may call from (* = any)")
      ->delimiter(',')
      ->envname("GOSSAMER_ALLOWED_ORIGINS")
      ->group("HTTP");
  cli.add_option("--allowed-methods", config.http.allowed_methods, "CORS methods (* = any)")
      ->delimiter(',')
      ->envname("GOSSAMER_ALLOWED_METHODS")
      ->group("HTTP");
  cli.add_option("--allowed-headers", config.http.allowed_headers, "CORS request headers (* = any)")
      ->delimiter(',')
      ->envname("GOSSAMER_ALLOWED_HEADERS")
      ->group("HTTP");
  cli.add_option("--reasoning-field", reasoning_field,
                 "where the analysis channel goes: reasoning | reasoning_content | both")
      ->check(CLI::IsMember({"reasoning", "reasoning_content", "both"}))
      ->envname("GOSSAMER_REASONING_FIELD")
      ->group("HTTP");
  cli.add_option("--shutdown-timeout", config.shutdown_timeout_s, "seconds to let in-flight requests finish on SIGTERM")
      ->envname("GOSSAMER_SHUTDOWN_TIMEOUT")
      ->group("HTTP");

  cli.add_option("--max-model-len", engine_config.max_model_len, "context length per request (0 = the model's)")
      ->envname("GOSSAMER_MAX_MODEL_LEN")
      ->group("Scheduler");
  cli.add_option("--max-num-seqs", engine_config.max_num_seqs, "most sequences per step (per replica with -dp)")
      ->envname("GOSSAMER_MAX_NUM_SEQS")
      ->group("Scheduler");
  cli.add_option("--max-num-batched-tokens", engine_config.max_num_batched_tokens,
                 "token budget per step, decodes + prompt chunks (0 = --max-num-seqs + --max-prefill-tokens)")
      ->envname("GOSSAMER_MAX_NUM_BATCHED_TOKENS")
      ->group("Scheduler");
  cli.add_option("--max-prefill-tokens", engine_config.max_prefill_tokens,
                 "prompt tokens per step next to the decodes (0 = " +
                     std::to_string(engine::EngineConfig::kDefaultPrefillTokens) + ", at most the budget)")
      ->envname("GOSSAMER_MAX_PREFILL_TOKENS")
      ->group("Scheduler");
  cli.add_option("--long-prefill-token-threshold", engine_config.long_prefill_token_threshold,
                 "most prompt tokens one request gets per step (0 = no cap)")
      ->envname("GOSSAMER_LONG_PREFILL_TOKEN_THRESHOLD")
      ->group("Scheduler");
  cli.add_option("--max-num-partial-prefills", engine_config.max_num_partial_prefills,
                 "requests mid-prompt at once; a prompt that finishes in the step always joins (0 = no cap)")
      ->envname("GOSSAMER_MAX_NUM_PARTIAL_PREFILLS")
      ->group("Scheduler");
  cli.add_option("--max-step-ms", engine_config.max_step_ms,
                 "adapt the prompt budget (up to --max-prefill-tokens, then 8192 by default) so steps with decodes "
                 "take about this long, from the measured step times (0 = a fixed budget)")
      ->envname("GOSSAMER_MAX_STEP_MS")
      ->group("Scheduler");
  cli.add_flag(
         "--decode-first,!--no-decode-first", engine_config.decode_first,
         "decode-first steps with a prompt budget (--max-prefill-tokens, --max-step-ms): bounded TPOT at the cost "
         "of throughput and TTFT (H200: -13% tok/s, p99 TPOT 58 -> 41 ms at 256 clients); default off = one 2048 "
         "budget in running order")
      ->envname("GOSSAMER_DECODE_FIRST")
      ->group("Scheduler");
  cli.add_flag(
         "--async-scheduling,!--no-async-scheduling", engine_config.async_scheduling,
         "launch step N+1 before step N's tokens are read back, feeding them on the GPU (vLLM's async "
         "scheduling; cuda backend with device sampling); off by default: +2% output tok/s at 256-1,024 clients on "
         "an H200, docs/engine-scheduler.md")
      ->envname("GOSSAMER_ASYNC_SCHEDULING")
      ->group("Scheduler");
  cli.add_option("--speculative-config", speculative_config,
                 "speculative decoding, vLLM's JSON; the ngram method (prompt lookup): '{\"method\": \"ngram\", "
                 "\"num_speculative_tokens\": 3, \"prompt_lookup_max\": 4, \"prompt_lookup_min\": 2}' (optional "
                 "\"disable_by_batch_size\": no drafts above that many running requests); off by default, needs "
                 "--no-async-scheduling (docs/engine-scheduler.md)")
      ->envname("GOSSAMER_SPECULATIVE_CONFIG")
      ->group("Scheduler");
  cli.add_option("--max-queued-requests", engine_config.max_queued_requests,
                 "waiting requests (per replica with -dp) beyond which new ones get 429")
      ->envname("GOSSAMER_MAX_QUEUED_REQUESTS")
      ->group("Scheduler");
  cli.add_option("--block-size", engine_config.block_size, "KV cache block size in tokens")
      ->envname("GOSSAMER_BLOCK_SIZE")
      ->group("Scheduler");
  cli.add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", engine_config.enable_prefix_caching,
               "reuse the cached KV blocks of shared prompt prefixes (default on)")
      ->envname("GOSSAMER_ENABLE_PREFIX_CACHING")
      ->group("Scheduler");
  cli.add_option("--num-gpu-blocks-override", engine_config.num_kv_blocks,
                 "KV cache blocks of each replica (0 = from the memory budget)")
      ->envname("GOSSAMER_NUM_GPU_BLOCKS_OVERRIDE")
      ->group("Scheduler");
  cli.add_option("--gpu-memory-utilization", gpu_memory_utilization,
                 "share of GPU memory for weights and KV cache (cuda)")
      ->envname("GOSSAMER_GPU_MEMORY_UTILIZATION")
      ->group("Scheduler");
  cli.add_option("--gpu-memory-limit-gib", gpu_memory_limit_gib,
                 "cuda: behave as a GPU of this many GiB (e.g. 80 on an H200; --gpu-memory-utilization then applies to "
                 "it); 0 = the whole GPU")
      ->check(CLI::NonNegativeNumber)
      ->envname("GOSSAMER_GPU_MEMORY_LIMIT_GIB")
      ->group("Scheduler");
  cli.add_option("--kv-cache-memory-bytes", kv_cache_memory_bytes,
                 "KV cache budget in bytes of each replica (-dp N holds N of them; 0 = 1 GiB on cpu; on cuda "
                 "from --gpu-memory-utilization)")
      ->envname("GOSSAMER_KV_CACHE_MEMORY_BYTES")
      ->group("Scheduler");

  cli.add_option("--log-format", log_format, "text | json")
      ->check(CLI::IsMember({"text", "json"}))
      ->envname("GOSSAMER_LOG_FORMAT")
      ->group("Logging");
  cli.add_option("--log-level", log_level, "debug | info | warning | error")
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}))
      ->envname("GOSSAMER_LOG_LEVEL")
      ->group("Logging");
  cli.add_flag("--enable-log-requests", config.enable_log_requests, "log every request with its figures")
      ->group("Logging");
  cli.add_flag("--disable-log-stats", disable_log_stats, "no periodic stats line")->group("Logging");
  cli.add_flag("--disable-vllm-metric-names", no_vllm_metrics, "emit only gossamer:* metric names")->group("Logging");

  // Hidden: test backends and harness hooks.
  cli.add_option("--test-backend", test.kind, "")->group("");
  cli.add_option("--test-script", test.script_path, "")->group("");
  cli.add_option("--test-step-delay-ms", test.step_delay_ms, "")->group("");
  cli.add_option("--test-stop-one-in", test.stop_one_in, "")->group("");
  cli.add_option("--test-max-positions", test.max_position_embeddings, "")->group("");
  cli.add_option("--test-load-delay-ms", test.load_delay_ms, "")->group("");
  cli.add_option("--port-file", port_file, "")->group("");
  VllmArgs args(argc, argv);
  CLI11_PARSE(cli, args.argc(), args.argv());

  log::set_format(log_format == "json" ? log::Format::kJson : log::Format::kText);
  log::set_level(log_level == "debug"     ? log::Level::kDebug
                 : log_level == "warning" ? log::Level::kWarning
                 : log_level == "error"   ? log::Level::kError
                                          : log::Level::kInfo);
  if (model_dir.empty()) model_dir = model_flag;
  GOSSAMER_CHECK(model_flag.empty() || model_flag == model_dir, "give the model once (positional or --model)");
  GOSSAMER_CHECK(test.kind.empty() || !model_options.layout.sharded(),
                 "--test-backend runs unsharded (no --tensor-parallel-size)");
  const bool on_cpu_anyway =
      !test.kind.empty() || (model_dir.empty() && load_format != "dummy");  // the embedded default
  GOSSAMER_CHECK(!model_options.colocate_on_gpu0 || kv_cache_memory_bytes > 0 || engine_config.num_kv_blocks > 0,
                 "--test-colocate-gpus needs --kv-cache-memory-bytes or --num-gpu-blocks-override (the replicas "
                 "and ranks share GPU 0, so no automatic budget)");
  GOSSAMER_CHECK(!model_options.colocate_on_gpu0 || gpu_memory_limit_gib == 0,
                 "--test-colocate-gpus takes no --gpu-memory-limit-gib (each process would hold its own limit)");
  const bool on_cuda = !on_cpu_anyway && model::resolve_device(device) == "cuda";
  check_parallel_layout(model_options, on_cuda ? "cuda" : "cpu");
  const bool cuda_group = on_cuda && model_options.layout.sharded();
  const auto gpu_memory_limit_bytes = static_cast<int64_t>(gpu_memory_limit_gib * double(int64_t{1} << 30));
  // One process per GPU: this one is rank 0 (server + engines) of every replica; the other ranks of
  // replica r replay its model calls.
  RankLauncher ranks(cuda_group ? "cuda" : "cpu", args.argc(), args.argv(), model_options);
  if (cuda_group && model_options.rank != 0) {
    model::limit_gpu_memory(gpu_memory_limit_bytes, model::gpu_of(model_options));
    return run_serve_worker(load_format == "dummy" ? model::load_dummy_model(preset, seed, "cuda", model_options)
                                                   : model::load_model(model_dir, "cuda", model_options),
                            model_options);
  }
  GOSSAMER_CHECK(gpu_memory_utilization > 0.0 && gpu_memory_utilization <= 1.0,
                 "--gpu-memory-utilization must be in (0, 1]");
  GOSSAMER_CHECK(gpu_memory_limit_gib == 0 || on_cuda, "--gpu-memory-limit-gib needs the cuda backend");
  GOSSAMER_CHECK(test.kind.empty() || test.kind == "fake", "--test-backend must be 'fake'");
  config.api_keys = api_keys;
  config.reasoning_field = reasoning_field == "both"                ? server::ReasoningField::kBoth
                           : reasoning_field == "reasoning_content" ? server::ReasoningField::kReasoningContent
                                                                    : server::ReasoningField::kReasoning;
  config.log_stats = !disable_log_stats;
  config.vllm_metrics_alias = !no_vllm_metrics;
  if (served_name.empty()) {
    served_name = !test.kind.empty()       ? "gossamer-test-fake"
                  : load_format == "dummy" ? "gossamer-dummy-" + preset
                  : model_dir.empty()      ? model::kEmbeddedDefaultName
                                           : model_dir;
  }
  config.served_model_name = served_name;
  if (!model_dir.empty() && model_dir != served_name) config.model_aliases.push_back(model_dir);
  if (!speculative_config.empty()) engine_config.speculative = engine::parse_speculative_config(speculative_config);
  engine_config.default_seed = seed;
  engine_config.device_sampling = !host_sampling;
  if (kv_cache_memory_bytes > 0) engine_config.kv_cache_memory_bytes = kv_cache_memory_bytes;

  // NOTE: block SIGTERM/SIGINT before any thread starts; the main thread takes them with sigwait().
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // Many concurrent streams need many sockets: lift the soft open-file limit to the hard one.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }

  const std::string model_line = !test.kind.empty()       ? "(test backend)"
                                 : load_format == "dummy" ? "(dummy " + preset + " weights)"
                                 : model_dir.empty()      ? std::string("(") + model::kEmbeddedDefaultDescription + ")"
                                                          : model_dir;
  GOSSAMER_LOG_INFO("gossamer serve: model ", model_line, ", served as '", served_name, "'");
  server::OpenAiServer server(config);
  server.start();
  if (!port_file.empty()) {
    std::ofstream(port_file) << server.port() << "\n";
  }

  try {
    server.set_loading_message("loading tokenizer");
    auto tokenizer = text::Tokenizer::load_default();
    const int32_t num_replicas = model_options.layout.data_parallel;
    // Replica r's options: on cuda its rank 0 sits on GPU gpu_of (r · TP), its group meets on its own port.
    const auto replica_options = [&](int32_t replica) {
      model::ModelOptions options = model_options;
      options.replica = replica;
      if (cuda_group) options.dist_port = ranks.port_of(replica);
      return options;
    };
    if (on_cuda) {
      for (int32_t replica = 0; replica < num_replicas; ++replica)
        model::limit_gpu_memory(gpu_memory_limit_bytes, model::gpu_of(replica_options(replica)));
    }
    // Each data-parallel replica loads its own model (on cuda on its own GPUs).
    const auto load_replica = [&](int32_t replica) -> std::unique_ptr<model::Model> {
      const std::string of =
          num_replicas > 1 ? " (replica " + std::to_string(replica + 1) + " of " + std::to_string(num_replicas) + ")"
                           : "";
      const model::ModelOptions options = replica_options(replica);
      if (!test.kind.empty()) return test_support::make_test_model(test, *tokenizer);
      if (load_format == "dummy") {
        server.set_loading_message("building dummy " + preset + " weights" + of);
        return model::load_dummy_model(preset, seed, model::resolve_device(device), options);
      }
      if (model_dir.empty()) {
        server.set_loading_message("loading the embedded default model" + of);
        // Sharded (simulated ranks on the CPU): the same trained checkpoint through the sharding loader.
        return options.layout.sharded() ? model::load_model(model::embedded_model_dir(), "cpu", options)
                                        : model::make_embedded_default_model();
      }
      server.set_loading_message("loading model from " + model_dir + of);
      return model::load_model(model_dir, model::resolve_device(device), options);
    };
    if (test.kind.empty() && load_format != "dummy" && model_dir.empty()) {
      // NOTE: the embedded default is a toy on the CPU: a modest context and KV budget unless asked otherwise.
      if (engine_config.max_model_len == 0) engine_config.max_model_len = 8192;
      if (kv_cache_memory_bytes == 0) engine_config.kv_cache_memory_bytes = 256LL << 20;
    }
    std::vector<std::unique_ptr<model::Model>> replicas(static_cast<size_t>(num_replicas));
    if (on_cuda && num_replicas > 1) {
      // At once, each on its own GPUs: a replica's other ranks wait for its rank 0 within the bootstrap's
      // timeout, so none may wait for the replicas before it. Every thread ends (loaded, or failed within that
      // timeout); the first failure is rethrown.
      std::vector<std::exception_ptr> failures(replicas.size());
      std::vector<std::thread> loaders;
      for (int32_t replica = 0; replica < num_replicas; ++replica) {
        loaders.emplace_back([&, replica] {
          try {
            replicas[static_cast<size_t>(replica)] = load_replica(replica);
          } catch (...) {
            failures[static_cast<size_t>(replica)] = std::current_exception();
          }
        });
      }
      for (std::thread& loader : loaders) loader.join();
      for (const std::exception_ptr& failure : failures) {
        if (failure) std::rethrow_exception(failure);
      }
    } else {
      for (int32_t replica = 0; replica < num_replicas; ++replica)
        replicas[static_cast<size_t>(replica)] = load_replica(replica);
    }
    const model::Model& first = *replicas.front();
    GOSSAMER_LOG_INFO("model loaded: ", layout_summary(first, model_options),
                      num_replicas > 1 ? ", " + std::to_string(num_replicas) + " replicas" : std::string(),
                      on_cuda ? ", " + placement_summary(model_options) : std::string());
    if (first.backend_name() == "cuda" && kv_cache_memory_bytes == 0) {
      // vLLM's rule: weights + KV cache (+ activation headroom) within --gpu-memory-utilization of the GPU;
      // every replica takes the budget of the fullest rank-0 GPU.
      int64_t budget = std::numeric_limits<int64_t>::max();
      for (int32_t replica = 0; replica < num_replicas; ++replica) {
        budget = std::min(
            budget, model::gpu_kv_cache_budget_bytes(gpu_memory_utilization, model::gpu_of(replica_options(replica))));
      }
      engine_config.kv_cache_memory_bytes = budget;
      GOSSAMER_LOG_INFO(
          "KV cache budget ", engine_config.kv_cache_memory_bytes / double(1 << 30), " GiB",
          num_replicas > 1 ? " per replica" : "", " (--gpu-memory-utilization ", gpu_memory_utilization,
          gpu_memory_limit_gib > 0 ? " of --gpu-memory-limit-gib " + std::to_string(gpu_memory_limit_gib) : "", ")");
    }
    if (cuda_group) {
      for (int32_t replica = 0; replica < num_replicas; ++replica) {
        server.set_loading_message("waiting for the other ranks of " + model_options.layout.describe() +
                                   (num_replicas > 1 ? " (replica " + std::to_string(replica + 1) + ")" : ""));
        auto& model = replicas[static_cast<size_t>(replica)];
        model = std::make_unique<model::SpmdLeader>(std::move(model), connect_control(replica_options(replica)));
      }
    }
    server.attach(std::move(replicas), engine_config, tokenizer);
  } catch (const std::exception& error) {
    GOSSAMER_LOG_ERROR("cannot start: ", error.what());
    server.set_failed(error.what());
    server.drain_and_stop();
    return 1;
  }

  int received = 0;
  sigwait(&signals, &received);
  GOSSAMER_LOG_INFO("received ", received == SIGTERM ? "SIGTERM" : "SIGINT", ", draining");
  server.drain_and_stop();
  return 0;
}

}  // namespace

GOSSAMER_REGISTER_COMMAND("serve",
                          "OpenAI-compatible HTTP server (continuous batching; embedded default without a model)",
                          run_serve);

}  // namespace gossamer::app
