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

void NgramIndex::propose(std::span<const TokenId> prompt, std::span<const TokenId> output,
                         const SpeculativeConfig& config, int32_t max_tokens, std::vector<TokenId>& draft) {
  draft.clear();
  const auto prompt_len = static_cast<int64_t>(prompt.size());
  const int64_t length = prompt_len + static_cast<int64_t>(output.size());
  const auto at = [&](int64_t i) {
    return i < prompt_len ? prompt[static_cast<size_t>(i)] : output[static_cast<size_t>(i - prompt_len)];
  };
  GOSSAMER_ASSERT(length >= num_indexed_, "NgramIndex: the request's tokens shrank");
  for (; num_indexed_ < length; ++num_indexed_)
    positions_[at(num_indexed_)].push_back(static_cast<int32_t>(num_indexed_));
  const int32_t wanted = std::min(max_tokens, config.num_speculative_tokens);
  if (wanted <= 0 || length < config.prompt_lookup_min + 1) return;
  // Every earlier occurrence of the last token ends a candidate suffix match: position p matches n tokens when
  // tokens (p − n, p] equal the last n. The first choice is the longest n (≤ prompt_lookup_max) matched by an
  // occurrence followed by `wanted` tokens, its most recent such occurrence; failing that (matches near the end
  // only, as in a run of one token), the occurrence with the longest continuation.
  const std::vector<int32_t>& candidates = positions_.at(at(length - 1));
  int64_t full_from = -1, partial_from = -1;
  int32_t full_n = 0;
  for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
    const int64_t p = *it;
    if (p == length - 1) continue;  // the suffix itself
    int32_t n = 1;
    while (n < config.prompt_lookup_max && p - n >= 0 && at(p - n) == at(length - 1 - n)) ++n;
    if (n < config.prompt_lookup_min) continue;
    if (length - (p + 1) >= wanted) {
      if (n > full_n) {
        full_n = n;
        full_from = p + 1;
        if (n == config.prompt_lookup_max) break;  // the most recent at the longest n
      }
    } else {
      partial_from = p + 1;  // older occurrences continue longer
    }
  }
  const int64_t from = full_from >= 0 ? full_from : partial_from;
  if (from < 0) return;
  const int64_t count = std::min<int64_t>(wanted, length - from);
  for (int64_t j = 0; j < count; ++j) draft.push_back(at(from + j));
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
  return !params.constraint && !params.has_penalties();
}

}  // namespace gossamer::engine
