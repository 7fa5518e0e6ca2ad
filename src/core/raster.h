// An 8-bit RGB raster with a few aliased drawing primitives, enough for gossamer's charts (core/plot.h).
//
// Contract: (0, 0) is the top-left pixel; x grows right, y down. Every primitive clips to the raster:
// drawing partly or wholly outside it (at any int coordinates) is never an error and never writes out of
// bounds. Text uses the 5×9 font of core/bitmap_font.h (7 rows above the baseline, 2 below) scaled by an
// integer `scale` (clamped to 1…64): each character takes a cell 6·scale wide (one blank column), 9·scale tall.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace gossamer {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  friend bool operator==(const Rgb&, const Rgb&) = default;
};

class Raster {
 public:
  // Throws gossamer::Error unless width and height are ≥ 1.
  Raster(int width, int height, Rgb background);

  int width() const { return width_; }
  int height() const { return height_; }
  // Row-major, top row first, 3 bytes per pixel: what core/png.h encodes.
  const std::vector<uint8_t>& pixels() const { return pixels_; }
  // The pixel at (x, y), which must lie inside the raster (asserted).
  Rgb at(int x, int y) const;

  void set(int x, int y, Rgb color);
  // Fills the rectangle with corners (x0, y0) and (x1, y1), both included, in any order.
  void fill_rect(int x0, int y0, int x1, int y1, Rgb color);
  // The 1-pixel outline of the same rectangle.
  void outline_rect(int x0, int y0, int x1, int y1, Rgb color);
  // Bresenham's line from (x0, y0) to (x1, y1), both ends included; `thickness` > 1 stamps a square brush
  // of that side centred on each pixel of the line.
  void line(int x0, int y0, int x1, int y1, Rgb color, int thickness = 1);
  // Text whose first cell has its top-left corner at (x, y), reading left to right.
  void text(int x, int y, std::string_view text, Rgb color, int scale = 1);
  // Text turned 90° counter-clockwise (reading bottom to top) whose box has its bottom-left corner at (x, y):
  // it covers x … x + text_height(scale) - 1 and y - text_width(…) + 1 … y.
  void text_up(int x, int y, std::string_view text, Rgb color, int scale = 1);

  // The width of the ink box of `text` (no trailing blank column); 0 for empty text.
  static int text_width(std::string_view text, int scale = 1);
  static int text_height(int scale = 1);  // the whole cell, descenders included
  static int text_ascent(int scale = 1);  // the part above the baseline (capitals, digits)

 private:
  void stamp(int x, int y, Rgb color, int thickness);
  void fill_block(long long x, long long y, int size, Rgb color);  // a size × size square, clipped
  int width_, height_;
  std::vector<uint8_t> pixels_;
};

}  // namespace gossamer
