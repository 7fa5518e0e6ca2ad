// JSON form of Harmony conversations: openai-harmony's Conversation JSON (documented in docs/harmony-json.md).
//
//   {"messages": [{"role", "name"?, "recipient"?, "channel"?, "content_type"?,
//                  "content": string | [item, ...]}]}
//   item = {"type": "text", "text"}
//        | {"type": "system_content", "model_identity"?, "reasoning_effort"?, "conversation_start_date"?,
//           "knowledge_cutoff"?, "channel_config"? {"valid_channels", "channel_required"?}, "tools"?}
//        | {"type": "developer_content", "instructions"?, "tools"?}
//   tools = {namespace: {"name"?, "description"?, "tools": [{"name", "description"?, "parameters"?}]}}
//
// Contract:
//  - Reading: a missing system_content field takes openai-harmony's default (SystemContent{}); an explicit
//    null means "absent". Unknown keys in messages and content items, and wrong types anywhere, throw
//    gossamer::Error naming the JSON path (e.g. "messages[2].content[0].reasoning_effort").
//  - Writing: content is always written as an array of items; system_content writes all six fields (null
//    where absent) so that reading it back gives the same value. Property order of tool parameters is kept.
#pragma once

#include <nlohmann/json.hpp>

#include "text/harmony_message.h"

namespace gossamer::text::harmony {

Conversation conversation_from_json(const nlohmann::ordered_json& json);
nlohmann::ordered_json conversation_to_json(const Conversation& conversation);

// One message object, `path` is used in error messages.
Message message_from_json(const nlohmann::ordered_json& json, const std::string& path = "message");
nlohmann::ordered_json message_to_json(const Message& message);

// A JSON array of messages (the form `harmony parse` prints under "messages").
nlohmann::ordered_json messages_to_json(const std::vector<Message>& messages);

}  // namespace gossamer::text::harmony
