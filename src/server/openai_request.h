// Parsing and validation of OpenAI Chat Completions and Completions request bodies into engine requests.
//
// Contract: every function throws ApiError (status 400, or 404 for an unknown model) with `param` naming
// the offending field; nothing else escapes (tokenizer and renderer errors are wrapped). Unknown fields are
// accepted and listed in `ignored_fields` (the caller logs them, spec §1.2).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/request.h"
#include "server/structured_output.h"
#include "text/harmony_renderer.h"
#include "text/tokenizer.h"

namespace gossamer::server {

struct ApiContext {
  std::string served_model_name;
  std::vector<std::string> model_aliases;  // also accepted in "model"
  int32_t max_model_len = 0;
};

struct GenerationRequest {
  std::vector<engine::TokenId> prompt;
  engine::SamplingParams sampling;
  int32_t requested_max_tokens = 0;  // 0 when the client gave none
  bool stream = false;
  bool include_usage = false;
  bool include_reasoning = true;
  std::vector<std::string> stop;
  std::vector<std::string> ignored_fields;
  std::vector<std::string> tool_names;  // declared function tools (chat)
  std::shared_ptr<const StructuredOutputSpec> structured;  // response_format / tool arguments / tool_choice; null = none
};

GenerationRequest parse_chat_request(const nlohmann::ordered_json& body, const ApiContext& context,
                                     const text::harmony::HarmonyRenderer& renderer);
GenerationRequest parse_completion_request(const nlohmann::ordered_json& body, const ApiContext& context,
                                           const text::Tokenizer& tokenizer);

// Parses a request body; a syntax error or a non-object is an ApiError.
nlohmann::ordered_json parse_json_body(const std::string& body);

}  // namespace gossamer::server
