#include "bench/chart.h"

#include <cairo-svg.h>
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/error.h"

namespace gossamer::bench {

namespace {

constexpr double kLeft = 84, kRight = 24, kTop = 48, kBottom = 58;  // plot area margins

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  std::vector<double> ticks;
  double map(double v, double from, double to) const {
    const double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    return from + t * (to - from);
  }
};

bool drawable(double x, double y, bool log_y) {
  return std::isfinite(x) && std::isfinite(y) && (!log_y || y > 0);
}

// 1, 2 or 5 × 10^k, the smallest not below `raw`.
double nice_step(double raw) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10.0 * magnitude;
}

Axis make_axis(double lo, double hi, bool log) {
  Axis axis;
  axis.log = log;
  if (!(lo <= hi)) lo = hi = log ? 1.0 : 0.0;  // no drawable point
  if (log) {
    double e0 = std::floor(std::log10(lo)), e1 = std::ceil(std::log10(hi));
    if (e1 <= e0) e1 = e0 + 1;
    axis.lo = std::pow(10.0, e0);
    axis.hi = std::pow(10.0, e1);
    for (double e = e0; e <= e1; ++e) {
      for (double m : {1.0, 2.0, 5.0}) {
        const double v = m * std::pow(10.0, e);
        if (v <= axis.hi && (m == 1.0 || e1 - e0 <= 2)) axis.ticks.push_back(v);
      }
    }
    return axis;
  }
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) {
    lo -= std::max(1.0, std::fabs(lo) * 0.1);
    hi += std::max(1.0, std::fabs(hi) * 0.1);
  }
  const double step = nice_step((hi - lo) / 5.0);
  axis.lo = std::floor(lo / step) * step;
  axis.hi = std::ceil(hi / step) * step;
  for (double v = axis.lo; v <= axis.hi + step * 1e-9; v += step)
    axis.ticks.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return axis;
}

std::string tick_text(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", v);
  return text;
}

void text_at(cairo_t* cr, const std::string& text, double x, double y, double align_x, double align_y) {
  cairo_text_extents_t extents;
  cairo_text_extents(cr, text.c_str(), &extents);
  cairo_move_to(cr, x - extents.x_bearing - align_x * extents.width, y - extents.y_bearing - align_y * extents.height);
  cairo_show_text(cr, text.c_str());
}

void draw(cairo_t* cr, const ChartSpec& spec) {
  const double w = spec.width, h = spec.height, x0 = kLeft, x1 = w - kRight, y0 = h - kBottom, y1 = kTop;
  double min_x = INFINITY, max_x = -INFINITY, min_y = INFINITY, max_y = -INFINITY;
  for (const ChartSeries& s : spec.series) {
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!drawable(s.x[i], s.y[i], spec.log_y)) continue;
      min_x = std::min(min_x, s.x[i]), max_x = std::max(max_x, s.x[i]);
      min_y = std::min(min_y, s.y[i]), max_y = std::max(max_y, s.y[i]);
    }
  }
  const Axis ax = make_axis(min_x, max_x, false), ay = make_axis(min_y, max_y, spec.log_y);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  // ---- grid, ticks and tick labels ----
  cairo_set_font_size(cr, 12);
  cairo_set_line_width(cr, 1);
  for (double v : ax.ticks) {
    const double px = std::round(ax.map(v, x0, x1)) + 0.5;
    cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
    cairo_move_to(cr, px, y0), cairo_line_to(cr, px, y1), cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    text_at(cr, tick_text(v), px, y0 + 6, 0.5, 0.0);
  }
  for (double v : ay.ticks) {
    const double py = std::round(ay.map(v, y0, y1)) + 0.5;
    cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
    cairo_move_to(cr, x0, py), cairo_line_to(cr, x1, py), cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    text_at(cr, tick_text(v), x0 - 6, py, 1.0, 0.5);
  }
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_rectangle(cr, x0 + 0.5, y1 + 0.5, x1 - x0, y0 - y1);
  cairo_stroke(cr);
  // ---- title and axis labels ----
  cairo_set_font_size(cr, 16);
  text_at(cr, spec.title, w / 2, 14, 0.5, 0.0);
  cairo_set_font_size(cr, 13);
  text_at(cr, spec.x_label, (x0 + x1) / 2, h - 8, 0.5, 1.0);
  cairo_save(cr);
  cairo_translate(cr, 16, (y0 + y1) / 2);
  cairo_rotate(cr, -M_PI / 2);
  text_at(cr, spec.y_label, 0, 0, 0.5, 0.0);
  cairo_restore(cr);
  // ---- series: lines (broken at undrawable points), square markers, point labels ----
  cairo_rectangle(cr, x0, y1, x1 - x0, y0 - y1);
  cairo_clip(cr);
  cairo_set_font_size(cr, 11);
  for (size_t index = 0; index < spec.series.size(); ++index) {
    const ChartSeries& s = spec.series[index];
    const auto [r, g, b] = chart_series_color(index);
    cairo_set_source_rgb(cr, r, g, b);
    cairo_set_line_width(cr, std::max(1.5, w / 600.0));
    bool pen_down = false;
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!drawable(s.x[i], s.y[i], spec.log_y)) {
        pen_down = false;
        continue;
      }
      const double px = ax.map(s.x[i], x0, x1), py = ay.map(s.y[i], y0, y1);
      pen_down ? cairo_line_to(cr, px, py) : cairo_move_to(cr, px, py);
      pen_down = true;
    }
    cairo_stroke(cr);
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!drawable(s.x[i], s.y[i], spec.log_y)) continue;
      const double px = ax.map(s.x[i], x0, x1), py = ay.map(s.y[i], y0, y1);
      cairo_rectangle(cr, px - 3.5, py - 3.5, 7, 7);
      cairo_fill(cr);
      if (!s.labels.empty()) text_at(cr, s.labels[i], px + 6, py - 6, 0.0, 1.0);
    }
  }
  cairo_reset_clip(cr);
  // ---- legend (top right, inside the plot) ----
  cairo_set_font_size(cr, 12);
  double ly = y1 + 10;
  for (size_t index = 0; index < spec.series.size(); ++index) {
    if (spec.series[index].name.empty()) continue;
    const auto [r, g, b] = chart_series_color(index);
    cairo_text_extents_t extents;
    cairo_text_extents(cr, spec.series[index].name.c_str(), &extents);
    const double lx = x1 - 12 - extents.width;
    cairo_set_source_rgb(cr, r, g, b);
    cairo_rectangle(cr, lx - 20, ly + 2, 12, 12);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    text_at(cr, spec.series[index].name, lx, ly + 8, 0.0, 0.5);
    ly += 18;
  }
}

}  // namespace

std::array<double, 3> chart_series_color(size_t index) {
  static constexpr std::array<std::array<double, 3>, 8> kColors = {{{0.12, 0.47, 0.71},
                                                                    {0.84, 0.15, 0.16},
                                                                    {0.17, 0.63, 0.17},
                                                                    {1.00, 0.50, 0.05},
                                                                    {0.58, 0.40, 0.74},
                                                                    {0.55, 0.34, 0.29},
                                                                    {0.89, 0.47, 0.76},
                                                                    {0.09, 0.75, 0.81}}};
  return kColors[index % kColors.size()];
}

void write_chart(const ChartSpec& spec, const std::string& path) {
  GOSSAMER_CHECK(spec.width >= 160 && spec.width <= 8192 && spec.height >= 120 && spec.height <= 8192, "chart: size ",
                 spec.width, "x", spec.height, " outside 160..8192 x 120..8192");
  for (const ChartSeries& s : spec.series) {
    GOSSAMER_CHECK(s.x.size() == s.y.size(), "chart: series '", s.name, "' has ", s.x.size(), " x and ", s.y.size(),
                   " y values");
    GOSSAMER_CHECK(s.labels.empty() || s.labels.size() == s.x.size(), "chart: series '", s.name, "' has ",
                   s.labels.size(), " labels for ", s.x.size(), " points");
  }
  const bool svg = path.size() >= 4 && path.compare(path.size() - 4, 4, ".svg") == 0;
  cairo_surface_t* surface = svg ? cairo_svg_surface_create(path.c_str(), spec.width, spec.height)
                                 : cairo_image_surface_create(CAIRO_FORMAT_RGB24, spec.width, spec.height);
  const std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> owner(surface, cairo_surface_destroy);
  GOSSAMER_CHECK(cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS, "chart: cannot write ", path, ": ",
                 cairo_status_to_string(cairo_surface_status(surface)));
  cairo_t* cr = cairo_create(surface);
  draw(cr, spec);
  const cairo_status_t drawn = cairo_status(cr);
  cairo_destroy(cr);
  GOSSAMER_CHECK(drawn == CAIRO_STATUS_SUCCESS, "chart: drawing failed: ", cairo_status_to_string(drawn));
  cairo_surface_flush(surface);
  const cairo_status_t written = svg ? (cairo_surface_finish(surface), cairo_surface_status(surface))
                                     : cairo_surface_write_to_png(surface, path.c_str());
  GOSSAMER_CHECK(written == CAIRO_STATUS_SUCCESS, "chart: cannot write ", path, ": ", cairo_status_to_string(written));
}

}  // namespace gossamer::bench
