// Repair of the malformed Harmony headers gpt-oss is known to emit (lenient parsing, issue #11 §3):
//  - a recipient carrying a channel marker, `to=functions.get_weather<|channel|>commentary`;
//  - a second `<|channel|>` (the first value wins);
//  - the recipient or content type in an unexpected place (`<|constrain|>json to=functions.x`);
//  - a role glued to its channel (`assistantcommentary`), or a bare channel word without the marker;
//  - leftover words (`to=` repeated, stray markup) that would otherwise fail the header.
// The result never holds markup (`<|…|>`) in the recipient or channel.
//
// Contract: total (never throws); pure.
#pragma once

#include <optional>
#include <string_view>

#include "text/harmony_parser.h"

namespace gossamer::text::harmony {

// True when a strictly parsed header leaked markup into a field, took a channel word for the recipient
// (`assistant final`) or a glued role for a tool name (`assistantcommentary`).
bool header_needs_repair(const ParsedHeader& header);

// The header's fields, recovered word by word (see above). `role_hint`: the role when the stream began
// inside this header; otherwise the first word names the role (or a tool, `functions.x`).
ParsedHeader repair_harmony_header(std::string_view header, std::optional<Role> role_hint);

}  // namespace gossamer::text::harmony
