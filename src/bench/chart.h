// Line charts for the benchmark commands (`gossamer bench decode --plot FILE`), drawn with cairo: PNG, or
// SVG when the path ends in ".svg"; text in the system's sans-serif font (fontconfig).
//
// Contract:
// - Each series joins its points in the given order with a line and marks each point with a filled
//   square; labels[i], when `labels` is not empty, is written next to point i. Series i is drawn in
//   chart_series_color(i) (8 distinct colours, then they repeat). The legend lists the series that have a
//   name.
// - A point whose x or y is not finite, or, with log_y, whose y is not positive, is not drawn, and its
//   series' line breaks there. Empty specs, empty series, one point and all-equal values draw valid axes
//   ("nice" ticks: 1, 2, 5 × 10^k; decades on a log axis).
// - Throws gossamer::Error when width is outside 160…8192 or height outside 120…8192, when a series has
//   x.size() != y.size(), when its labels are neither empty nor one per point, or when the file cannot be
//   written (the message names the path).
#pragma once

#include <array>
#include <string>
#include <vector>

namespace gossamer::bench {

struct ChartSeries {
  std::string name;
  std::vector<double> x, y;
  std::vector<std::string> labels;  // empty, or one per point
};

struct ChartSpec {
  std::string title, x_label, y_label;
  std::vector<ChartSeries> series;
  int width = 900, height = 600;  // pixels (PNG) or points (SVG)
  bool log_y = false;             // base-10 logarithmic y axis
};

std::array<double, 3> chart_series_color(size_t index);  // RGB in [0, 1]

void write_chart(const ChartSpec& spec, const std::string& path);

}  // namespace gossamer::bench
