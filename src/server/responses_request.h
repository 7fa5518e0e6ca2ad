// The Responses API request (POST /v1/responses) mapped onto the Chat Completions one: input items become
// chat messages (reasoning items become the `reasoning` of the next assistant message, function_call
// items its tool_calls, function_call_output items tool messages), flat function tools become chat tools,
// and the result goes through parse_chat_request, so both APIs render and validate alike.
//
// Contract: throws ApiError (400, or 404 for an unknown previous_response_id / model) with `param` naming
// the field. Refused with 400 until constrained decoding lands: text.format json_schema / json_object and
// forced tool choices ("required", a named function); also background mode and non-function tools.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/openai_request.h"
#include "server/responses_store.h"

namespace gossamer::server {

struct ResponsesRequest {
  GenerationRequest generation;
  nlohmann::ordered_json messages;  // the conversation in chat form, previous response's included (for the store)
  nlohmann::json echo;              // request fields the response object repeats (instructions, tools, ...)
  std::optional<std::string> previous_response_id;
  bool store = true;
  bool include_encrypted_reasoning = false;  // include: ["reasoning.encrypted_content"]
};

ResponsesRequest parse_responses_request(const nlohmann::ordered_json& body, const ApiContext& context,
                                         const text::harmony::HarmonyRenderer& renderer, const ResponsesStore& store);

// The reasoning text carried back in a reasoning item's encrypted_content (base64 of the text: gossamer
// keeps no secrets from its own clients; the field exists so that stateless clients can round-trip it).
std::string encode_reasoning(const std::string& text);
std::optional<std::string> decode_reasoning(const std::string& encoded);

}  // namespace gossamer::server
