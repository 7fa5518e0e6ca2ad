// A tiny raster line chart (lines + square markers, axes with "nice" ticks, a legend, point labels), written
// as PNG without any image library: what `gossamer bench decode --plot` draws (cost against speed).
//
// Contract:
// - Series i is drawn in plot_series_color(i): distinct colours for the first 8 series, then they repeat.
//   Each series joins its points in the given order with 1-pixel-wide aliased lines (wider on big charts)
//   and marks each point with a filled square; labels[i], when `labels` is not empty, is written next to
//   point i. The legend lists every series that has a name, or, with no names at all, none.
// - A point whose x or y is not finite or has a magnitude above 1e300, or, with log_y, whose y is below
//   1e-300 (zero and negatives included), is not drawn, and the series' line breaks there. Empty specs, empty series, a
//   single point and all-equal values draw valid axes.
// - Throws gossamer::Error when width is outside 160…8192 or height outside 120…8192, when a series has
//   x.size() != y.size(), or when its labels are neither empty nor one per point.
// - Text is ASCII (core/bitmap_font.h); other bytes are drawn as '?'. Nothing is drawn outside the image.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/raster.h"

namespace gossamer {

struct PlotSeries {
  std::string name;
  std::vector<double> x, y;
  std::vector<std::string> labels;  // empty, or one per point
};

struct PlotSpec {
  std::string title, x_label, y_label;
  std::vector<PlotSeries> series;
  int width = 900, height = 600;
  bool log_y = false;  // base-10 logarithmic y axis
};

Rgb plot_series_color(size_t index);

// width × height × 3 bytes: row-major, top row first, as core/png.h takes them. White background.
std::vector<uint8_t> render_plot_rgb(const PlotSpec& spec);

// Renders and writes a PNG to `path`; an unwritable path throws gossamer::Error naming it.
void write_plot_png(const PlotSpec& spec, const std::string& path);

}  // namespace gossamer
