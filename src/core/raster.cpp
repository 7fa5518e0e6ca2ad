#include "core/raster.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/bitmap_font.h"
#include "core/error.h"

namespace gossamer {

namespace {

int clamp_scale(int scale) {
  return std::clamp(scale, 1, 64);
}

// Liang–Barsky: shortens the segment to the part inside [lo_x, hi_x] × [lo_y, hi_y]; false when none is.
bool clip_segment(double& x0, double& y0, double& x1, double& y1, double lo_x, double lo_y, double hi_x, double hi_y) {
  double t0 = 0.0, t1 = 1.0;
  const double dx = x1 - x0, dy = y1 - y0;
  const double p[4] = {-dx, dx, -dy, dy};
  const double q[4] = {x0 - lo_x, hi_x - x0, y0 - lo_y, hi_y - y0};
  for (int i = 0; i < 4; ++i) {
    if (p[i] == 0.0) {
      if (q[i] < 0.0) return false;
      continue;
    }
    const double t = q[i] / p[i];
    if (p[i] < 0.0) {
      t0 = std::max(t0, t);
    } else {
      t1 = std::min(t1, t);
    }
    if (t0 > t1) return false;
  }
  const double sx = x0, sy = y0;
  x0 = sx + t0 * dx;
  y0 = sy + t0 * dy;
  x1 = sx + t1 * dx;
  y1 = sy + t1 * dy;
  return true;
}

}  // namespace

Raster::Raster(int width, int height, Rgb background) : width_(width), height_(height) {
  GOSSAMER_CHECK(width >= 1 && height >= 1, "raster size ", width, "x", height,
                 " is invalid: width and height must be at least 1");
  pixels_.resize(3 * static_cast<size_t>(width) * static_cast<size_t>(height));
  for (size_t i = 0; i < pixels_.size(); i += 3) {
    pixels_[i] = background.r;
    pixels_[i + 1] = background.g;
    pixels_[i + 2] = background.b;
  }
}

Rgb Raster::at(int x, int y) const {
  GOSSAMER_ASSERT(x >= 0 && x < width_ && y >= 0 && y < height_, "pixel (", x, ", ", y, ") outside ", width_, "x",
                  height_);
  const size_t i = 3 * (static_cast<size_t>(y) * static_cast<size_t>(width_) + static_cast<size_t>(x));
  return {pixels_[i], pixels_[i + 1], pixels_[i + 2]};
}

void Raster::set(int x, int y, Rgb color) {
  if (x < 0 || x >= width_ || y < 0 || y >= height_) return;
  const size_t i = 3 * (static_cast<size_t>(y) * static_cast<size_t>(width_) + static_cast<size_t>(x));
  pixels_[i] = color.r;
  pixels_[i + 1] = color.g;
  pixels_[i + 2] = color.b;
}

void Raster::fill_rect(int x0, int y0, int x1, int y1, Rgb color) {
  if (x0 > x1) std::swap(x0, x1);
  if (y0 > y1) std::swap(y0, y1);
  x0 = std::max(x0, 0);
  y0 = std::max(y0, 0);
  x1 = std::min(x1, width_ - 1);
  y1 = std::min(y1, height_ - 1);
  for (int y = y0; y <= y1; ++y) {
    for (int x = x0; x <= x1; ++x) set(x, y, color);
  }
}

void Raster::outline_rect(int x0, int y0, int x1, int y1, Rgb color) {
  fill_rect(x0, y0, x1, y0, color);
  fill_rect(x0, y1, x1, y1, color);
  fill_rect(x0, y0, x0, y1, color);
  fill_rect(x1, y0, x1, y1, color);
}

void Raster::stamp(int x, int y, Rgb color, int thickness) {
  if (thickness <= 1) {
    set(x, y, color);
    return;
  }
  fill_rect(x - (thickness - 1) / 2, y - (thickness - 1) / 2, x + thickness / 2, y + thickness / 2, color);
}

void Raster::line(int x0, int y0, int x1, int y1, Rgb color, int thickness) {
  thickness = clamp_scale(thickness);
  // Clip first (with the brush's reach as margin) so that far-away ends cost nothing and cannot overflow.
  double fx0 = x0, fy0 = y0, fx1 = x1, fy1 = y1;
  if (!clip_segment(fx0, fy0, fx1, fy1, -thickness, -thickness, width_ - 1 + thickness, height_ - 1 + thickness))
    return;
  int ax = static_cast<int>(std::lround(fx0)), ay = static_cast<int>(std::lround(fy0));
  const int bx = static_cast<int>(std::lround(fx1)), by = static_cast<int>(std::lround(fy1));
  const int dx = std::abs(bx - ax), dy = -std::abs(by - ay);
  const int step_x = ax < bx ? 1 : -1, step_y = ay < by ? 1 : -1;
  int error = dx + dy;
  while (true) {
    stamp(ax, ay, color, thickness);
    if (ax == bx && ay == by) break;
    const int twice = 2 * error;
    if (twice >= dy) {
      error += dy;
      ax += step_x;
    }
    if (twice <= dx) {
      error += dx;
      ay += step_y;
    }
  }
}

void Raster::fill_block(long long x, long long y, int size, Rgb color) {
  if (x >= width_ || y >= height_ || x + size <= 0 || y + size <= 0) return;
  const int left = static_cast<int>(std::max(x, 0ll)), top = static_cast<int>(std::max(y, 0ll));
  fill_rect(left, top, static_cast<int>(std::min<long long>(x + size - 1, width_ - 1)),
            static_cast<int>(std::min<long long>(y + size - 1, height_ - 1)), color);
}

void Raster::text(int x, int y, std::string_view text, Rgb color, int scale) {
  scale = clamp_scale(scale);
  for (size_t i = 0; i < text.size(); ++i) {
    const long long cell_x = x + static_cast<long long>(i) * (kGlyphWidth + 1) * scale;
    if (cell_x >= width_) break;
    if (cell_x + kGlyphWidth * scale < 0) continue;
    const GlyphRows& rows = glyph_rows(text[i]);
    for (int row = 0; row < kGlyphHeight; ++row) {
      for (int column = 0; column < kGlyphWidth; ++column) {
        if (((rows[static_cast<size_t>(row)] >> (kGlyphWidth - 1 - column)) & 1u) == 0) continue;
        fill_block(cell_x + column * scale, static_cast<long long>(y) + row * scale, scale, color);
      }
    }
  }
}

void Raster::text_up(int x, int y, std::string_view text, Rgb color, int scale) {
  scale = clamp_scale(scale);
  for (size_t i = 0; i < text.size(); ++i) {
    const long long cell_y = y - static_cast<long long>(i) * (kGlyphWidth + 1) * scale;  // the cell's bottom
    if (cell_y < 0) break;
    if (cell_y - kGlyphWidth * scale >= height_) continue;
    const GlyphRows& rows = glyph_rows(text[i]);
    for (int row = 0; row < kGlyphHeight; ++row) {
      for (int column = 0; column < kGlyphWidth; ++column) {
        if (((rows[static_cast<size_t>(row)] >> (kGlyphWidth - 1 - column)) & 1u) == 0) continue;
        fill_block(static_cast<long long>(x) + row * scale, cell_y - (column + 1) * scale + 1, scale, color);
      }
    }
  }
}

int Raster::text_width(std::string_view text, int scale) {
  if (text.empty()) return 0;
  scale = clamp_scale(scale);
  const long long width = static_cast<long long>(text.size()) * (kGlyphWidth + 1) * scale - scale;
  return static_cast<int>(std::min<long long>(width, 1 << 30));
}

int Raster::text_height(int scale) {
  return kGlyphHeight * clamp_scale(scale);
}

int Raster::text_ascent(int scale) {
  return kGlyphAscent * clamp_scale(scale);
}

}  // namespace gossamer
