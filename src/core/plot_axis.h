// Axis ranges and "nice" ticks for the charts of core/plot.h.
//
// Contract: make_axis takes the values the axis must show, already filtered by the caller (finite, magnitude
// ≤ 1e300, and for log axes ≥ 1e-300); it may be empty (the range is then 0…1, or 1…10 on a log axis).
// The resulting range [lo, hi] holds every value with a margin of 5% of the span (in log10 space on log
// axes); a single value or all-equal values get a range around them. Ticks are ascending, lie in [lo, hi]
// and come with one label each: on linear axes multiples of 1, 2 or 5 × 10^k (about 4 to 8 of them), on log
// axes 1 × 10^k, then 1-2-5, 1-2-3-5 or every digit × 10^k as the span requires (plain linear ticks when it
// is under about half a decade). Log axes of at most 4 decades also get minor grid values 1…9 × 10^k.
#pragma once

#include <string>
#include <vector>

namespace gossamer {

struct PlotAxis {
  double lo = 0.0, hi = 1.0;
  bool log = false;
  std::vector<double> ticks;
  std::vector<std::string> labels;  // one per tick
  std::vector<double> minor;        // extra grid values, not labelled
  // Where `value` sits between lo (0) and hi (1), in log10 space on log axes.
  double position(double value) const;
};

PlotAxis make_axis(const std::vector<double>& values, bool log);

}  // namespace gossamer
