// Structured output for Chat Completions: `response_format` (json_object, json_schema), tool-call
// arguments that follow their tool's parameter schema, and tool_choice "required" / named / "none" —
// enforced by a token constraint (engine/token_constraint.h) that knows Harmony's message structure.
//
// The constraint follows the generated tokens message by message. Reasoning stays free: a message's
// header is only forced when tool_choice asks for it, and its content is only constrained where the
// answer is JSON — the final channel's content with a response_format, or the arguments of a message to
// `functions.NAME` (its header ends `<|constrain|>json<|message|>`). JSON content may end (with
// <|return|>, or <|call|> for a tool call) only where the value is complete, and nothing else ends it.
//   - tool_choice "required" / named: every header is `<|channel|>analysis<|message|>` or
//     `<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>` (NAME among the allowed
//     tools), and analysis can only end with <|end|> (no <|return|>, no other special token).
//   - tool_choice "none": every header is the analysis or the final channel (no recipient).
//   - a response_format with tool_choice "auto": analysis, final, or a call of any declared tool.
//   Plain "auto" leaves headers free (arguments are still constrained once a tool is addressed).
//
// Contract: parse_structured_output throws ApiError 400 naming the field (and, for a schema, the
// unsupported or invalid keyword). The spec is immutable and shared; make_structured_output_constraint
// makes one constraint per request (not thread-safe, as TokenConstraint allows).
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/token_constraint.h"
#include "text/grammar/grammar.h"
#include "text/tokenizer.h"

namespace gossamer::server {

enum class ToolChoice : uint8_t { kAuto, kNone, kRequired, kNamed };

struct StructuredOutputSpec {
  std::shared_ptr<const text::grammar::Grammar> response;  // final-channel JSON, or null
  std::string response_format_text;                        // for the developer message ("# Response Formats"), or empty
  std::map<std::string, std::shared_ptr<const text::grammar::Grammar>> tools;  // arguments by function name
  ToolChoice tool_choice = ToolChoice::kAuto;
  std::string named_tool;  // kNamed
  // True when a constraint is needed at all.
  bool active() const { return response != nullptr || !tools.empty() || tool_choice != ToolChoice::kAuto; }
};

// body: the chat request. tool_parameters: each declared function's name and `parameters` (null = none).
std::shared_ptr<const StructuredOutputSpec> parse_structured_output(
    const nlohmann::ordered_json& body,
    const std::vector<std::pair<std::string, nlohmann::ordered_json>>& tool_parameters);

// max_tokens: the request's output budget (0 = none). While an answer is owed (response_format, or a forced
// tool call), reasoning may use at most half of it, so that the answer always has room and a random model
// terminates: past that the analysis message can only end, and no further analysis message can open.
std::shared_ptr<engine::TokenConstraint> make_structured_output_constraint(
    std::shared_ptr<const StructuredOutputSpec> spec, const text::Tokenizer& tokenizer, int32_t max_tokens = 0);

}  // namespace gossamer::server
