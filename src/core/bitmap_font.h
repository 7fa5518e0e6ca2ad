// A bitmap font for printable ASCII (32–126), drawn for gossamer's own charts (core/plot.h): 5 columns, 7 rows
// from the top of a capital to the baseline (the x-height is 5 rows) and 2 descender rows below, so 5×9 cells.
//
// Contract: glyph_rows(c) returns the 9 rows of c's glyph, top row first; bit 4 of a row is the leftmost of the
// 5 columns (bits 5–7 are always 0). Characters outside 32–126 (including UTF-8 bytes) get '?'. Every glyph
// other than ' ' has ink, and no two glyphs are the same.
#pragma once

#include <array>
#include <cstdint>

namespace gossamer {

inline constexpr int kGlyphWidth = 5;
inline constexpr int kGlyphHeight = 9;  // rows
inline constexpr int kGlyphAscent = 7;  // rows above the baseline; the rest are descenders

using GlyphRows = std::array<uint8_t, kGlyphHeight>;

const GlyphRows& glyph_rows(char c);

}  // namespace gossamer
