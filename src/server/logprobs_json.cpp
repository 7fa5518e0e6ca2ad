#include "server/logprobs_json.h"

#include <cmath>

namespace gossamer::server {

namespace {

using Json = nlohmann::json;

double finite(float logprob) {
  return std::isfinite(logprob) ? static_cast<double>(logprob) : -9999.0;
}

std::string token_text(const text::Tokenizer& tokenizer, engine::TokenId token) {
  return std::string(tokenizer.token_bytes(token));
}

Json token_bytes(const std::string& text) {
  Json bytes = Json::array();
  for (const char c : text) bytes.push_back(static_cast<int>(static_cast<unsigned char>(c)));
  return bytes;
}

}  // namespace

Json chat_logprob_entry(const text::Tokenizer& tokenizer, engine::TokenId token,
                        const engine::SampledLogprobs& logprobs) {
  const std::string text = token_text(tokenizer, token);
  Json top = Json::array();
  for (const engine::TokenLogprob& candidate : logprobs.top) {
    const std::string candidate_text = token_text(tokenizer, candidate.token);
    top.push_back(
        {{"token", candidate_text}, {"logprob", finite(candidate.logprob)}, {"bytes", token_bytes(candidate_text)}});
  }
  return {{"token", text},
          {"logprob", finite(logprobs.logprob)},
          {"bytes", token_bytes(text)},
          {"top_logprobs", std::move(top)}};
}

Json completion_logprobs_empty() {
  return {{"tokens", Json::array()},
          {"token_logprobs", Json::array()},
          {"top_logprobs", Json::array()},
          {"text_offset", Json::array()}};
}

void append_completion_logprob(const text::Tokenizer& tokenizer, engine::TokenId token,
                               const engine::SampledLogprobs& logprobs, int64_t text_offset, Json& out) {
  out["tokens"].push_back(token_text(tokenizer, token));
  out["token_logprobs"].push_back(finite(logprobs.logprob));
  Json top = Json::object();
  for (const engine::TokenLogprob& candidate : logprobs.top)
    top[token_text(tokenizer, candidate.token)] = finite(candidate.logprob);
  out["top_logprobs"].push_back(std::move(top));
  out["text_offset"].push_back(text_offset);
}

}  // namespace gossamer::server
