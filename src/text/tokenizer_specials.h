// The Harmony special tokens of o200k_harmony (as openai-harmony and tools/tiktoken_reference.mjs list them), ids
// 199998..201087.
#pragma once

#include <string>
#include <string_view>

#include "text/tokenizer.h"

namespace gossamer::text {

inline constexpr TokenId kFirstSpecialToken = kNumOrdinaryTokens;  // 199998

// The string of special token `id` (kFirstSpecialToken <= id < kVocabSize): the named ones
// (<|startoftext|>, <|endoftext|>, <|return|>, <|constrain|>, <|channel|>, <|start|>, <|end|>, <|message|>,
// <|call|>) or <|reserved_N|> with N = id.
std::string special_token_string(TokenId id);

// o200k_base's <|endofprompt|> = 200018, which tiktoken's o200k_harmony keeps. Encoding recognises it as an
// alias; decoding 200018 gives <|reserved_200018|>, as the harmony crate does.
inline constexpr std::string_view kEndOfPromptString = "<|endofprompt|>";
inline constexpr TokenId kEndOfPromptId = 200018;

}  // namespace gossamer::text
