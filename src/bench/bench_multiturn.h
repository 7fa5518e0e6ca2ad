// The `multiturn` dataset of `gossamer bench serve`: conversations whose history grows turn by turn, the
// workload that prefix caching serves (each turn's prompt is the previous prompt, the answer and a new
// user message).
//
// Each conversation gets num_turns user messages of about `user_len` random ordinary tokens (decoded to
// text). Conversations run concurrently (at most max_concurrency at once, 0 = all), their turns in order:
// turn t sends the whole history — the user messages so far and the assistant's earlier answers as the
// server returned them — and waits for its answer.
//
// Contract: run_multiturn() blocks until every conversation is done. `send` is called from several
// threads at once, with the chat messages of one turn; it returns the answer's text, or nullopt when the
// request failed (that conversation then stops: its later turns are not sent).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "text/tokenizer.h"

namespace gossamer::server {

struct MultiturnSpec {
  int num_conversations = 32;
  int num_turns = 10;
  int user_len = 128;       // tokens per user message
  int max_concurrency = 0;  // conversations in flight (0 = all)
  uint64_t seed = 0;
};

using MultiturnSend =
    std::function<std::optional<std::string>(const nlohmann::json& messages, int conversation, int turn)>;

void run_multiturn(const MultiturnSpec& spec, const text::Tokenizer& tokenizer, const MultiturnSend& send);

}  // namespace gossamer::server
