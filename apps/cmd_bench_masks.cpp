// `gossamer bench masks`: the host time of structured output's token masks per engine step, without a model
// or a GPU (issue #16: at batch 64 with every request constrained, serving must lose < 5% throughput).
//
// It replays what the engine does at a step: --concurrency requests, each with the server's Harmony
// constraint (server/structured_output.h) for one of --formats, have their masks filled by the engine's own
// TokenMaskFiller (engine/token_mask_filler.h: rows in parallel, the wall time the device waits for), then
// each draws one token from its mask and accepts it, like a model with random logits (`random`: uniform
// over the allowed tokens, what the dummy-weight server runs do; `adversarial`: half the time among the
// allowed tokens with JSON structure in them). A request ends after --output-len tokens (the server runs use
// --ignore-eos) and the next one takes its slot, until --num-prompts have run.
//
// Per step it reports the filler's wall time on this machine and, from each row's thread CPU time, the
// critical path the filler's worker pool gives at --model-threads threads (each row to the first free
// thread, wake-up not included: what a machine with that many idle cores would see); per row, the CPU time
// by the kind of mask (forced: at most 8 tokens; narrow: JSON structure; wide: inside a string or free
// reasoning, over 100,000 tokens; free: no mask).
#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "command.h"
#include "core/error.h"
#include "core/parallel.h"
#include "engine/token_mask_filler.h"
#include "server/structured_output.h"
#include "text/tokenizer.h"

namespace gossamer::app {

namespace {

using OrderedJson = nlohmann::ordered_json;

double thread_cpu_us() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e6 + static_cast<double>(now.tv_nsec) * 1e-3;
}

// Forwards to the request's constraint and records the thread CPU time of its last fill_mask().
class TimedConstraint final : public engine::TokenConstraint {
 public:
  explicit TimedConstraint(std::shared_ptr<engine::TokenConstraint> inner) : inner_(std::move(inner)) {}
  bool fill_mask(std::span<uint32_t> mask) override {
    const double start = thread_cpu_us();
    const bool masked = inner_->fill_mask(mask);
    last_us = thread_cpu_us() - start;
    return masked;
  }
  void accept(engine::TokenId token) override { inner_->accept(token); }
  double last_us = 0.0;

 private:
  std::shared_ptr<engine::TokenConstraint> inner_;
};

// One --formats entry as the spec parse_structured_output makes of a chat request.
std::shared_ptr<const server::StructuredOutputSpec> format_spec(const std::string& format,
                                                                const std::vector<nlohmann::json>& schemas) {
  OrderedJson body = OrderedJson::object();
  std::vector<std::pair<std::string, OrderedJson>> tools;
  const auto schema_at = [&](const std::string& index) {
    const size_t k = std::stoul(index);
    GOSSAMER_CHECK(k < schemas.size(), "bench masks: format ", format, ": the corpus has ", schemas.size(), " schemas");
    return OrderedJson::parse(schemas[k].dump());
  };
  if (format == "json_object") {
    body["response_format"] = {{"type", "json_object"}};
  } else if (format.rfind("schema:", 0) == 0) {
    body["response_format"] = {{"type", "json_schema"},
                               {"json_schema", {{"name", "answer"}, {"schema", schema_at(format.substr(7))}}}};
  } else if (format.rfind("tool:", 0) == 0) {
    body["tool_choice"] = "required";
    tools.emplace_back("tool_" + format.substr(5), schema_at(format.substr(5)));
  } else {
    GOSSAMER_THROW("bench masks: unknown format ", format, " (json_object, schema:K or tool:K)");
  }
  return server::parse_structured_output(body, tools);
}

struct Stats {
  double mean = 0.0, p50 = 0.0, p99 = 0.0, max = 0.0;
  size_t count = 0;
};

Stats stats_of(std::vector<double> values) {
  Stats s;
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  s.p50 = values[values.size() / 2];
  s.p99 = values[std::min(values.size() - 1, values.size() * 99 / 100)];
  s.max = values.back();
  return s;
}

nlohmann::json to_json(const Stats& s) {
  return {{"count", s.count}, {"mean_us", s.mean}, {"p50_us", s.p50}, {"p99_us", s.p99}, {"max_us", s.max}};
}

// The filler's pool at `threads` threads: rows taken in order, each by the first thread to get free; the
// last to finish (wake-up latency not included).
double critical_path_us(const std::vector<double>& row_us, int threads) {
  std::vector<double> free_at(static_cast<size_t>(threads), 0.0);
  for (const double us : row_us) *std::min_element(free_at.begin(), free_at.end()) += us;
  return *std::max_element(free_at.begin(), free_at.end());
}

struct Slot {
  std::shared_ptr<TimedConstraint> constraint;
  int32_t produced = 0;
};

int run_bench_masks(int argc, char** argv) {
  CLI::App cli{"Host time of structured-output token masks per engine step (no model, no GPU)"};
  cli.option_defaults()->always_capture_default();
  int num_prompts = 128, concurrency = 64, output_len = 128;
  std::vector<std::string> formats = {"json_object"};
  std::string schemas_path = "tests/data/tool_schemas.json", tokens = "random", json_out;
  std::vector<int> model_threads = {16};
  uint64_t seed = 0;
  cli.add_option("--num-prompts", num_prompts, "requests in all")->check(CLI::PositiveNumber);
  cli.add_option("--max-concurrency", concurrency, "rows per step (requests at a time)")->check(CLI::PositiveNumber);
  cli.add_option("--output-len", output_len, "tokens per request (max_tokens; stop tokens are ignored)")
      ->check(CLI::PositiveNumber);
  cli.add_option("--formats", formats,
                 "per request, round robin: json_object, schema:K (response_format json_schema with corpus schema "
                 "K) or tool:K (tool_choice required, one tool with corpus schema K)")
      ->delimiter(',');
  cli.add_option("--schemas", schemas_path, "the schema corpus (a JSON array)");
  cli.add_option("--tokens", tokens, "how each row draws from its mask")
      ->check(CLI::IsMember({"random", "adversarial"}));
  cli.add_option("--model-threads", model_threads, "thread counts of the modelled critical path")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  cli.add_option("--seed", seed, "token draws");
  cli.add_option("--json-out", json_out, "also write the results as JSON");
  CLI11_PARSE(cli, argc, argv);

  std::vector<nlohmann::json> schemas;
  const auto uses_corpus = [](const std::string& f) { return f.rfind("schema:", 0) == 0 || f.rfind("tool:", 0) == 0; };
  if (std::any_of(formats.begin(), formats.end(), uses_corpus)) {
    const auto corpus = nlohmann::json::parse(read_input(schemas_path), nullptr, false);
    GOSSAMER_CHECK(corpus.is_array(), "bench masks: ", schemas_path, " is not a JSON array");
    schemas = corpus.get<std::vector<nlohmann::json>>();
  }
  std::vector<std::shared_ptr<const server::StructuredOutputSpec>> specs;
  for (const std::string& format : formats) specs.push_back(format_spec(format, schemas));
  const auto tokenizer = text::Tokenizer::load_default();
  const int32_t vocab_size = text::kVocabSize;
  const auto words = static_cast<size_t>(engine::token_mask_words(vocab_size));
  std::vector<uint8_t> structural(static_cast<size_t>(vocab_size), 0);  // tokens with JSON structure in them
  for (engine::TokenId t = 0; t < text::kNumOrdinaryTokens; ++t) {
    structural[static_cast<size_t>(t)] =
        tokenizer->token_bytes(t).find_first_of("\"\\{}[],:0123456789 -") != std::string_view::npos;
  }
  std::fprintf(stderr, "bench masks: building the vocabulary trie\n");
  server::make_structured_output_constraint(specs[0], *tokenizer, output_len);  // builds the shared trie (~1 s)

  std::mt19937_64 rng(seed);
  int started = 0;
  const auto start_request = [&](Slot& slot) {
    const auto& spec = specs[static_cast<size_t>(started) % specs.size()];
    slot.constraint =
        std::make_shared<TimedConstraint>(server::make_structured_output_constraint(spec, *tokenizer, output_len));
    slot.produced = 0;
    ++started;
  };
  std::vector<Slot> slots(static_cast<size_t>(std::min(concurrency, num_prompts)));
  for (Slot& slot : slots) start_request(slot);

  engine::TokenMaskFiller filler(vocab_size);
  std::vector<engine::TokenConstraint*> constraints;
  std::vector<double> step_wall_us, step_cpu_us, row_us;
  std::vector<std::vector<double>> step_critical_us(model_threads.size());
  std::vector<double> forced_us, narrow_us, wide_us, free_us;
  std::vector<int32_t> allowed, allowed_structural;
  int64_t num_steps = 0;
  while (!slots.empty()) {
    constraints.clear();
    for (const Slot& slot : slots) constraints.push_back(slot.constraint.get());
    filler.fill(constraints);
    ++num_steps;
    step_wall_us.push_back(filler.last_seconds() * 1e6);
    row_us.clear();
    for (const Slot& slot : slots) row_us.push_back(slot.constraint->last_us);
    step_cpu_us.push_back(std::accumulate(row_us.begin(), row_us.end(), 0.0));
    for (size_t t = 0; t < model_threads.size(); ++t) {
      step_critical_us[t].push_back(critical_path_us(row_us, model_threads[t]));
    }
    for (size_t row = 0; row < slots.size(); ++row) {
      Slot& slot = slots[row];
      GOSSAMER_CHECK(!filler.none_allowed(row), "bench masks: a constraint allowed no token");
      engine::TokenId token = 0;
      if (const uint32_t* mask = filler.mask(row)) {
        allowed.clear();
        allowed_structural.clear();
        for (size_t w = 0; w < words; ++w) {
          for (uint32_t bits = mask[w]; bits != 0; bits &= bits - 1) {
            const auto t = static_cast<int32_t>(w * 32 + static_cast<size_t>(__builtin_ctz(bits)));
            if (t >= vocab_size) break;
            allowed.push_back(t);
            if (structural[static_cast<size_t>(t)]) allowed_structural.push_back(t);
          }
        }
        (allowed.size() <= 8 ? forced_us : allowed.size() > 100000 ? wide_us : narrow_us).push_back(row_us[row]);
        const bool pick_structural = tokens == "adversarial" && !allowed_structural.empty() && rng() % 2 == 0;
        const auto& pool = pick_structural ? allowed_structural : allowed;
        token = pool[rng() % pool.size()];
      } else {
        free_us.push_back(row_us[row]);
        token = static_cast<engine::TokenId>(rng() % static_cast<uint64_t>(vocab_size));
      }
      slot.constraint->accept(token);
      ++slot.produced;
    }
    for (size_t row = slots.size(); row-- > 0;) {
      if (slots[row].produced < output_len) continue;
      if (started < num_prompts) {
        start_request(slots[row]);
      } else {
        slots.erase(slots.begin() + static_cast<std::ptrdiff_t>(row));
      }
    }
  }

  const Stats wall = stats_of(step_wall_us), cpu = stats_of(step_cpu_us);
  std::string joined_formats;
  for (const std::string& f : formats) joined_formats += (joined_formats.empty() ? "" : ",") + f;
  std::printf(
      "bench masks: %d requests of %d tokens, %d at a time, formats %s, %s tokens: %lld steps, %d threads here\n\n",
      num_prompts, output_len, concurrency, joined_formats.c_str(), tokens.c_str(), static_cast<long long>(num_steps),
      cpu_thread_count());
  std::printf("| per step (µs) | mean | p50 | p99 | max |\n|---|---|---|---|---|\n");
  const auto line = [](const std::string& label, const Stats& s) {
    std::printf("| %s | %.1f | %.1f | %.1f | %.1f |\n", label.c_str(), s.mean, s.p50, s.p99, s.max);
  };
  line("fill, wall here (" + std::to_string(cpu_thread_count()) + " threads)", wall);
  line("fill, CPU summed over the rows", cpu);
  std::vector<Stats> critical;
  for (size_t t = 0; t < model_threads.size(); ++t) {
    critical.push_back(stats_of(step_critical_us[t]));
    line("critical path at " + std::to_string(model_threads[t]) + " threads (no wake-up)", critical.back());
  }
  std::printf("\n| per row (CPU µs) | rows | mean | p50 | p99 | max |\n|---|---|---|---|---|---|\n");
  const std::vector<std::pair<const char*, Stats>> kinds = {{"forced (<= 8 tokens)", stats_of(forced_us)},
                                                            {"narrow (JSON structure)", stats_of(narrow_us)},
                                                            {"wide (> 100,000 tokens)", stats_of(wide_us)},
                                                            {"free (no mask)", stats_of(free_us)}};
  for (const auto& [label, s] : kinds) {
    std::printf("| %s | %zu | %.1f | %.1f | %.1f | %.1f |\n", label, s.count, s.mean, s.p50, s.p99, s.max);
  }
  if (!json_out.empty()) {
    nlohmann::json out = {{"bench", "masks"},
                          {"num_prompts", num_prompts},
                          {"max_concurrency", concurrency},
                          {"output_len", output_len},
                          {"formats", formats},
                          {"tokens", tokens},
                          {"steps", num_steps},
                          {"threads", cpu_thread_count()},
                          {"wall", to_json(wall)},
                          {"cpu", to_json(cpu)}};
    for (size_t t = 0; t < model_threads.size(); ++t) {
      out["critical_path"][std::to_string(model_threads[t])] = to_json(critical[t]);
    }
    for (const auto& [label, s] : kinds) out["rows"][label] = to_json(s);
    std::ofstream(json_out) << out.dump(2) << "\n";
  }
  return 0;
}

}  // namespace

GOSSAMER_REGISTER_BENCH("masks", "host time of structured-output token masks per engine step (no model, no GPU)",
                        run_bench_masks);

}  // namespace gossamer::app
