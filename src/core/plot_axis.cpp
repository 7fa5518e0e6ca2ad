#include "core/plot_axis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gossamer {

namespace {

constexpr double kMargin = 0.05;     // of the span, on each side
constexpr double kLogLimit = 305.0;  // keeps 10^lo and 10^hi normal doubles

std::string format(const char* pattern, int precision, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), pattern, precision, value);
  std::string text = buffer;
  // "-0", "-0.00": a rounding artefact, not a negative tick.
  if (text.size() > 1 && text[0] == '-' && text.find_first_not_of("-0.") == std::string::npos) text.erase(0, 1);
  return text;
}

// A tick that is a multiple of step = m × 10^exponent, on an axis whose largest |tick| is max_abs.
std::string linear_label(double value, int exponent, double max_abs) {
  const int decimals = std::max(0, -exponent);
  if (decimals <= 8 && max_abs < 1e9) return format("%.*f", decimals, value);
  const int digits = static_cast<int>(std::floor(std::log10(std::max(max_abs, 1e-300)))) - exponent + 1;
  return format("%.*g", std::clamp(digits, 1, 15), value);
}

// 1, 2 or 5 × 10^k with the tick count in [lo, hi] closest to 6 (ties: the larger step).
void add_linear_ticks(PlotAxis& axis) {
  const double span = axis.hi - axis.lo;
  const int base = static_cast<int>(std::floor(std::log10(span / 6.0)));
  double best_step = 0.0, best_score = 1e300;
  int best_exponent = 0;
  for (int exponent = base - 1; exponent <= base + 1; ++exponent) {
    for (double mantissa : {1.0, 2.0, 5.0}) {
      const double step = mantissa * std::pow(10.0, exponent);
      const double count = std::floor(axis.hi / step) - std::ceil(axis.lo / step) + 1.0;
      const double score = std::abs(count - 6.0);
      if (score < best_score || (score == best_score && step > best_step)) {
        best_score = score;
        best_step = step;
        best_exponent = exponent;
      }
    }
  }
  const double first = std::ceil(axis.lo / best_step), last = std::floor(axis.hi / best_step);
  for (double k = first; k <= last && axis.ticks.size() < 64; k += 1.0) {
    const double tick = k * best_step;
    if (tick >= axis.lo && tick <= axis.hi) axis.ticks.push_back(tick);
  }
  double max_abs = 0.0;
  for (double tick : axis.ticks) max_abs = std::max(max_abs, std::abs(tick));
  for (double tick : axis.ticks) axis.labels.push_back(linear_label(tick, best_exponent, max_abs));
}

PlotAxis make_linear_axis(const std::vector<double>& values) {
  PlotAxis axis;
  double lo = 0.0, hi = 1.0;
  if (!values.empty()) {
    const auto [min, max] = std::minmax_element(values.begin(), values.end());
    lo = *min;
    hi = *max;
  }
  if (hi - lo <= 1e-9 * std::max(std::abs(lo), std::abs(hi))) {  // one value, or too close to tell apart
    const double centre = lo / 2 + hi / 2, half = centre == 0.0 ? 1.0 : std::abs(centre) * 0.1;
    lo = centre - half;
    hi = centre + half;
  }
  const double margin = kMargin * (hi - lo);
  axis.lo = lo - margin;
  axis.hi = hi + margin;
  add_linear_ticks(axis);
  return axis;
}

// m × 10^d for every mantissa m in `mantissas` and decade d, within [lo, hi].
std::vector<std::pair<double, int>> decade_ticks(const PlotAxis& axis, const std::vector<double>& mantissas) {
  std::vector<std::pair<double, int>> ticks;
  const int first = static_cast<int>(std::floor(std::log10(axis.lo))),
            last = static_cast<int>(std::ceil(std::log10(axis.hi)));
  for (int decade = first; decade <= last; ++decade) {
    for (double mantissa : mantissas) {
      const double value = mantissa * std::pow(10.0, decade);
      if (value >= axis.lo && value <= axis.hi) ticks.emplace_back(value, decade);
    }
  }
  return ticks;
}

PlotAxis make_log_axis(const std::vector<double>& values) {
  const std::vector<double> digits = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  PlotAxis axis;
  axis.log = true;
  double lo = 0.0, hi = 1.0;  // log10
  if (!values.empty()) {
    const auto [min, max] = std::minmax_element(values.begin(), values.end());
    lo = std::log10(*min);
    hi = std::log10(*max);
  }
  if (hi - lo < 1e-9) {
    lo -= 0.5;
    hi += 0.5;
  }
  const double margin = kMargin * (hi - lo);
  lo = std::max(lo - margin, -kLogLimit);
  hi = std::min(hi + margin, kLogLimit);
  axis.lo = std::pow(10.0, lo);
  axis.hi = std::pow(10.0, hi);

  std::vector<std::pair<double, int>> ticks;
  bool decades_only = false;
  const std::vector<std::vector<double>> mantissa_sets = {{1}, {1, 2, 5}, {1, 2, 3, 5}, digits};
  for (size_t choice = 0; choice < mantissa_sets.size(); ++choice) {
    ticks = decade_ticks(axis, mantissa_sets[choice]);
    decades_only = choice == 0;
    if (ticks.size() >= 4) break;
  }
  if (ticks.size() < 3) {  // under about half a decade: ordinary ticks read better
    add_linear_ticks(axis);
  } else {
    if (decades_only && ticks.size() > 9) {  // many decades: label every k-th
      const int every = static_cast<int>((ticks.size() + 7) / 8);
      std::erase_if(ticks, [&](const auto& tick) { return ((tick.second % every) + every) % every != 0; });
    }
    for (const auto& [value, decade] : ticks) {
      axis.ticks.push_back(value);
      axis.labels.push_back(decade >= -6 && decade <= 6 ? format("%.*f", std::max(0, -decade), value)
                                                        : format("%.*e", 0, value));
    }
  }
  if (hi - lo <= 4.5) {
    for (const auto& [value, decade] : decade_ticks(axis, digits)) {
      const bool labelled = std::any_of(axis.ticks.begin(), axis.ticks.end(),
                                        [&](double tick) { return std::abs(tick - value) <= 1e-9 * value; });
      if (!labelled) axis.minor.push_back(value);
    }
  }
  return axis;
}

}  // namespace

double PlotAxis::position(double value) const {
  if (log) return (std::log10(value) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  return (value - lo) / (hi - lo);
}

PlotAxis make_axis(const std::vector<double>& values, bool log) {
  return log ? make_log_axis(values) : make_linear_axis(values);
}

}  // namespace gossamer
