#include "engine/speculative.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"

namespace gossamer::engine {

void SpeculativeConfig::validate() const {
  GOSSAMER_CHECK(num_speculative_tokens >= 0 && num_speculative_tokens <= kMaxSpeculativeTokens,
                 "num_speculative_tokens must be in [0, ", kMaxSpeculativeTokens, "], got ", num_speculative_tokens);
  if (!enabled()) return;
  GOSSAMER_CHECK(prompt_lookup_min >= 1, "prompt_lookup_min must be >= 1, got ", prompt_lookup_min);
  GOSSAMER_CHECK(prompt_lookup_max >= prompt_lookup_min && prompt_lookup_max <= 64,
                 "prompt_lookup_max must be in [prompt_lookup_min, 64], got ", prompt_lookup_max);
  GOSSAMER_CHECK(disable_by_batch_size >= 0, "disable_by_batch_size must be >= 0, got ", disable_by_batch_size);
}

SpeculativeConfig parse_speculative_config(std::string_view json) {
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& error) {
    throw Error(detail::concat("--speculative-config is not JSON: ", error.what()));
  }
  GOSSAMER_CHECK(config.is_object(), "--speculative-config must be a JSON object");
  const auto integer = [&](const char* key) -> int32_t {
    const nlohmann::json& value = config.at(key);
    GOSSAMER_CHECK(value.is_number_integer() && value.get<int64_t>() >= 0 && value.get<int64_t>() <= 1 << 20,
                   "--speculative-config: ", key, " must be a non-negative integer");
    return value.get<int32_t>();
  };
  SpeculativeConfig out;
  for (const auto& [key, value] : config.items()) {
    if (key == "method") {
      GOSSAMER_CHECK(value.is_string() && value.get<std::string>() == "ngram", "--speculative-config: method ",
                     value.dump(), " is not supported (only \"ngram\": prompt lookup)");
    } else if (key != "num_speculative_tokens" && key != "prompt_lookup_max" && key != "prompt_lookup_min" &&
               key != "disable_by_batch_size") {
      throw Error(detail::concat("--speculative-config: \"", key,
                                 "\" is not supported (the ngram method takes "
                                 "method, num_speculative_tokens, prompt_lookup_max, prompt_lookup_min, "
                                 "disable_by_batch_size)"));
    }
  }
  GOSSAMER_CHECK(config.contains("method"), "--speculative-config: give \"method\": \"ngram\"");
  GOSSAMER_CHECK(config.contains("num_speculative_tokens"), "--speculative-config: num_speculative_tokens is required");
  out.num_speculative_tokens = integer("num_speculative_tokens");
  GOSSAMER_CHECK(out.num_speculative_tokens >= 1, "--speculative-config: num_speculative_tokens must be >= 1");
  const bool has_max = config.contains("prompt_lookup_max"), has_min = config.contains("prompt_lookup_min");
  if (has_max) out.prompt_lookup_max = integer("prompt_lookup_max");
  if (has_min) out.prompt_lookup_min = integer("prompt_lookup_min");
  if (has_max && !has_min) out.prompt_lookup_min = out.prompt_lookup_max;
  if (has_min && !has_max) out.prompt_lookup_max = out.prompt_lookup_min;
  if (config.contains("disable_by_batch_size")) out.disable_by_batch_size = integer("disable_by_batch_size");
  out.validate();
  return out;
}

void propose_ngram_draft(std::span<const TokenId> prompt, std::span<const TokenId> output,
                         const SpeculativeConfig& config, int32_t max_tokens, std::vector<TokenId>& draft) {
  draft.clear();
  const int32_t wanted = std::min(max_tokens, config.num_speculative_tokens);
  const auto prompt_len = static_cast<int64_t>(prompt.size());
  const int64_t length = prompt_len + static_cast<int64_t>(output.size());
  const auto at = [&](int64_t i) {
    return i < prompt_len ? prompt[static_cast<size_t>(i)] : output[static_cast<size_t>(i - prompt_len)];
  };
  if (wanted <= 0) return;
  // The first choice is the most recent occurrence followed by `wanted` tokens, at the longest n that has one;
  // failing that (matches near the end only, as in a run of one token), the longest continuation of any
  // occurrence (ties: the longer n, then the more recent).
  int64_t partial_from = -1, partial_count = 0;
  for (int32_t n = config.prompt_lookup_max; n >= config.prompt_lookup_min; --n) {
    if (length < n + 1) continue;
    const int64_t suffix = length - n;
    const TokenId last = at(length - 1);
    // Occurrences end before the suffix's last token (start ≤ length − n − 1), most recent first.
    for (int64_t start = length - n - 1; start >= 0; --start) {
      if (at(start + n - 1) != last) continue;  // the cheap filter first
      int32_t i = 0;
      while (i < n - 1 && at(start + i) == at(suffix + i)) ++i;
      if (i < n - 1) continue;
      const int64_t from = start + n;
      const int64_t count = std::min<int64_t>(wanted, length - from);
      if (count == wanted) {
        for (int64_t j = 0; j < count; ++j) draft.push_back(at(from + j));
        return;
      }
      if (count > partial_count) {
        partial_from = from;
        partial_count = count;
      }
    }
  }
  for (int64_t j = 0; j < partial_count; ++j) draft.push_back(at(partial_from + j));
}

int32_t count_accepted_drafts(std::span<const TokenId> draft, std::span<const TokenId> drawn) {
  int32_t accepted = 0;
  while (static_cast<size_t>(accepted) < draft.size() && static_cast<size_t>(accepted) < drawn.size() &&
         drawn[static_cast<size_t>(accepted)] == draft[static_cast<size_t>(accepted)]) {
    ++accepted;
  }
  return accepted;
}

bool speculation_eligible(const Request& request) {
  const SamplingParams& params = request.sampling;
  return !params.constraint && !params.has_penalties() && params.logprobs < 0;
}

}  // namespace gossamer::engine
