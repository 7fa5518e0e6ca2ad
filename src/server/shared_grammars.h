// The compiled grammars of structured output, shared by the requests that give the same schema: one Grammar
// object per schema text (and one for json_object), so that its token-mask cache
// (text/grammar/token_mask_cache.h) serves all of them, and a pattern's token lists are built once.
//
// Contract: thread-safe. shared_schema_grammar() throws what compile_json_schema throws (then nothing is
// kept). At most kMaxSharedGrammars schemas are kept, the least recently used dropped first (a request
// holds its own reference, so a dropped grammar lives on until its requests finish).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "text/grammar/grammar.h"

namespace gossamer::server {

inline constexpr size_t kMaxSharedGrammars = 64;

// schema_text: the schema as JSON text (requests giving the same text share the grammar).
std::shared_ptr<const text::grammar::Grammar> shared_schema_grammar(const std::string& schema_text);
std::shared_ptr<const text::grammar::Grammar> shared_json_object_grammar();

}  // namespace gossamer::server
