// Parsing and validation of OpenAI Chat Completions and Completions request bodies into engine requests.
//
// Contract: every function throws ApiError (status 400, or 404 for an unknown model) with `param` naming
// the offending field; nothing else escapes (tokenizer and renderer errors are wrapped). Unknown fields are
// accepted and listed in `ignored_fields` (the caller logs them; docs/server-http.md).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/request.h"
#include "server/json_fields.h"
#include "server/structured_output.h"
#include "text/harmony_renderer.h"
#include "text/tokenizer.h"

namespace gossamer::server {

// Limits on the tools of one request (400 naming the limit beyond them); each schema is also held to
// text::harmony::SchemaLimits (depth 64, 10,000 JSON values).
inline constexpr int kMaxTools = 128;                        // OpenAI's limit
inline constexpr int64_t kMaxSchemaNodesPerRequest = 20000;  // JSON values over all tool schemas
inline constexpr int kMaxChoices = 16;                       // the largest `n`

// The tokens that end a gpt-oss completion, the engine's stop_token_ids for every request (the engine knows
// no chat format): Harmony's assistant-action stops <|return|> and <|call|>, and <|endoftext|>. A <|call|>
// becomes finish_reason "tool_calls" where the answer's parser found a tool call.
std::vector<engine::TokenId> harmony_stop_token_ids();

struct ApiContext {
  std::string served_model_name;
  std::vector<std::string> model_aliases;  // also accepted in "model"
  int32_t max_model_len = 0;
};

struct GenerationRequest {
  std::vector<engine::TokenId> prompt;
  engine::SamplingParams sampling;
  int32_t requested_max_tokens = 0;  // 0 when the client gave none
  int32_t n = 1;                     // choices: n engine requests on the same prompt
  bool stream = false;
  bool include_usage = false;
  bool include_reasoning = true;
  std::vector<std::string> stop;
  std::vector<std::string> ignored_fields;
  std::vector<std::string> tool_names;  // declared function tools (chat)
  std::shared_ptr<const StructuredOutputSpec>
      structured;  // response_format / tool arguments / tool_choice; null = none
};

GenerationRequest parse_chat_request(const nlohmann::ordered_json& body, const ApiContext& context,
                                     const text::harmony::HarmonyRenderer& renderer);
GenerationRequest parse_completion_request(const nlohmann::ordered_json& body, const ApiContext& context,
                                           const text::Tokenizer& tokenizer);

}  // namespace gossamer::server
