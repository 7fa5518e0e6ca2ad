// OpenAI's logprobs shapes from the engine's raw logprobs (engine::SampledLogprobs).
//
// Chat: choice.logprobs = {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob",
// "bytes"}]}], "refusal": null}, for the tokens of the returned content only. Completions (legacy):
// choice.logprobs = {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"}.
// A logprob of -inf is written as -9999.0 (JSON has no infinities; vLLM does the same).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "engine/request.h"
#include "text/tokenizer.h"

namespace gossamer::server {

// One entry of chat logprobs.content.
nlohmann::json chat_logprob_entry(const text::Tokenizer& tokenizer, engine::TokenId token,
                                  const engine::SampledLogprobs& logprobs);

// Appends one token to completions-style logprobs (`out` starts as completion_logprobs_empty()).
void append_completion_logprob(const text::Tokenizer& tokenizer, engine::TokenId token,
                               const engine::SampledLogprobs& logprobs, int64_t text_offset, nlohmann::json& out);
nlohmann::json completion_logprobs_empty();

}  // namespace gossamer::server
