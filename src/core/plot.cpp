#include "core/plot.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/error.h"
#include "core/plot_axis.h"
#include "core/png.h"

namespace gossamer {

namespace {

constexpr Rgb kWhite{255, 255, 255}, kInk{25, 25, 25}, kGrid{215, 215, 215}, kMinorGrid{238, 238, 238},
    kLegendBorder{150, 150, 150};

// Chosen to stay apart from each other, from the white paper and from the black ink.
constexpr std::array<Rgb, 8> kPalette = {{{31, 99, 196},
                                          {232, 118, 14},
                                          {36, 150, 64},
                                          {204, 37, 51},
                                          {128, 78, 190},
                                          {134, 90, 52},
                                          {214, 72, 166},
                                          {18, 160, 172}}};

struct Box {
  int x0, y0, x1, y1;  // inclusive
  bool overlaps(const Box& other) const { return x0 <= other.x1 && other.x0 <= x1 && y0 <= other.y1 && other.y0 <= y1; }
  bool inside(const Box& other) const { return x0 >= other.x0 && x1 <= other.x1 && y0 >= other.y0 && y1 <= other.y1; }
};

bool drawable(double value, bool log) {
  return std::isfinite(value) && std::abs(value) <= 1e300 && (!log || value >= 1e-300);
}

void validate(const PlotSpec& spec) {
  GOSSAMER_CHECK(spec.width >= 160 && spec.width <= 8192 && spec.height >= 120 && spec.height <= 8192, "plot size ",
                 spec.width, "x", spec.height, " is invalid: width must be 160…8192 and height 120…8192");
  for (const PlotSeries& series : spec.series) {
    GOSSAMER_CHECK(series.x.size() == series.y.size(), "plot series '", series.name, "' has ", series.x.size(),
                   " x values but ", series.y.size(), " y values");
    GOSSAMER_CHECK(series.labels.empty() || series.labels.size() == series.x.size(), "plot series '", series.name,
                   "' has ", series.labels.size(), " labels for ", series.x.size(), " points");
  }
}

// Pixel geometry shared by the drawing steps.
struct Layout {
  int scale = 1;         // text scale
  int pad = 5;           // general spacing
  int tick = 3;          // tick mark length
  int marker = 3;        // half the side of a marker square
  Box plot{0, 0, 0, 0};  // the data area, frame included
  PlotAxis x_axis, y_axis;
  int px(double x) const {
    return plot.x0 + static_cast<int>(std::lround(std::clamp(x_axis.position(x), 0.0, 1.0) * (plot.x1 - plot.x0)));
  }
  int py(double y) const {
    return plot.y1 - static_cast<int>(std::lround(std::clamp(y_axis.position(y), 0.0, 1.0) * (plot.y1 - plot.y0)));
  }
};

Layout make_layout(const PlotSpec& spec) {
  Layout layout;
  std::vector<double> xs, ys;
  for (const PlotSeries& series : spec.series) {
    for (size_t i = 0; i < series.x.size(); ++i) {
      if (!drawable(series.x[i], false) || !drawable(series.y[i], spec.log_y)) continue;
      xs.push_back(series.x[i]);
      ys.push_back(series.y[i]);
    }
  }
  layout.x_axis = make_axis(xs, false);
  layout.y_axis = make_axis(ys, spec.log_y);
  const int s = std::clamp(std::min(spec.width / 450, spec.height / 300), 1, 4);
  layout.scale = s;
  layout.pad = 5 * s;
  layout.tick = 3 * s;
  layout.marker = s + 2;
  const int text_h = Raster::text_height(s);
  int y_label_w = 0;
  for (const std::string& label : layout.y_axis.labels) y_label_w = std::max(y_label_w, Raster::text_width(label, s));
  const int last_x_label_w = layout.x_axis.labels.empty() ? 0 : Raster::text_width(layout.x_axis.labels.back(), s);

  Box& plot = layout.plot;
  plot.x0 = layout.pad + (spec.y_label.empty() ? 0 : text_h + layout.pad) + y_label_w + layout.pad / 2 + layout.tick;
  plot.y0 = layout.pad + (spec.title.empty() ? text_h / 2 : text_h + layout.pad);
  plot.x1 = spec.width - 1 - std::max(2 * layout.pad, last_x_label_w / 2 + layout.pad);
  plot.y1 = spec.height - 1 -
            (layout.tick + layout.pad / 2 + text_h + layout.pad + (spec.x_label.empty() ? 0 : text_h + layout.pad));
  // Very long tick labels on a small chart: keep at least half the width for the data.
  plot.x0 = std::min(plot.x0, spec.width / 2);
  return layout;
}

void draw_grid(Raster& image, const Layout& layout) {
  const Box& plot = layout.plot;
  for (double value : layout.y_axis.minor) image.line(plot.x0, layout.py(value), plot.x1, layout.py(value), kMinorGrid);
  for (double value : layout.x_axis.ticks) image.line(layout.px(value), plot.y0, layout.px(value), plot.y1, kGrid);
  for (double value : layout.y_axis.ticks) image.line(plot.x0, layout.py(value), plot.x1, layout.py(value), kGrid);
}

void draw_axes(Raster& image, const PlotSpec& spec, const Layout& layout) {
  const Box& plot = layout.plot;
  const int s = layout.scale, text_h = Raster::text_height(s), ascent = Raster::text_ascent(s);
  image.outline_rect(plot.x0, plot.y0, plot.x1, plot.y1, kInk);
  int previous_right = -1 << 30;
  for (size_t i = 0; i < layout.x_axis.ticks.size(); ++i) {
    const int x = layout.px(layout.x_axis.ticks[i]);
    image.line(x, plot.y1 + 1, x, plot.y1 + layout.tick, kInk);
    const int width = Raster::text_width(layout.x_axis.labels[i], s);
    const int left = x - width / 2;
    if (left <= previous_right + 2 * s * 3) continue;  // would touch the previous label
    image.text(left, plot.y1 + layout.tick + layout.pad / 2, layout.x_axis.labels[i], kInk, s);
    previous_right = left + width;
  }
  int previous_top = 1 << 30;
  for (size_t i = 0; i < layout.y_axis.ticks.size(); ++i) {
    const int y = layout.py(layout.y_axis.ticks[i]);
    image.line(plot.x0 - layout.tick, y, plot.x0 - 1, y, kInk);
    const int top = y - ascent / 2;
    if (top + ascent + 3 * s > previous_top) continue;  // would touch the label above the previous tick
    image.text(plot.x0 - layout.tick - layout.pad / 2 - Raster::text_width(layout.y_axis.labels[i], s), top,
               layout.y_axis.labels[i], kInk, s);
    previous_top = top;
  }
  const int title_w = Raster::text_width(spec.title, s);
  image.text(std::max(layout.pad, (spec.width - title_w) / 2), layout.pad, spec.title, kInk, s);
  const int x_label_w = Raster::text_width(spec.x_label, s);
  image.text(std::max(0, (plot.x0 + plot.x1 - x_label_w) / 2),
             plot.y1 + layout.tick + layout.pad / 2 + text_h + layout.pad, spec.x_label, kInk, s);
  const int y_label_w = Raster::text_width(spec.y_label, s);
  image.text_up(layout.pad, std::min(spec.height - 1, (plot.y0 + plot.y1 + y_label_w) / 2), spec.y_label, kInk, s);
}

void draw_marker(Raster& image, int x, int y, int half, Rgb color) {
  image.fill_rect(x - half, y - half, x + half, y + half, color);
}

void draw_series(Raster& image, const PlotSpec& spec, const Layout& layout) {
  for (size_t index = 0; index < spec.series.size(); ++index) {
    const PlotSeries& series = spec.series[index];
    const Rgb color = plot_series_color(index);
    bool have_previous = false;
    int previous_x = 0, previous_y = 0;
    for (size_t i = 0; i < series.x.size(); ++i) {
      if (!drawable(series.x[i], false) || !drawable(series.y[i], spec.log_y)) {
        have_previous = false;  // the line breaks at a point that cannot be drawn
        continue;
      }
      const int x = layout.px(series.x[i]), y = layout.py(series.y[i]);
      if (have_previous) image.line(previous_x, previous_y, x, y, color, layout.scale);
      have_previous = true;
      previous_x = x;
      previous_y = y;
    }
    for (size_t i = 0; i < series.x.size(); ++i) {
      if (drawable(series.x[i], false) && drawable(series.y[i], spec.log_y)) {
        draw_marker(image, layout.px(series.x[i]), layout.py(series.y[i]), layout.marker, color);
      }
    }
  }
}

// The legend goes to the corner of the data area that hides the fewest points and line samples.
Box place_legend(const PlotSpec& spec, const Layout& layout, int width, int height) {
  const Box& plot = layout.plot;
  const int margin = layout.pad;
  const std::array<Box, 4> corners = {
      {{plot.x1 - margin - width, plot.y0 + margin, plot.x1 - margin, plot.y0 + margin + height},
       {plot.x0 + margin, plot.y0 + margin, plot.x0 + margin + width, plot.y0 + margin + height},
       {plot.x1 - margin - width, plot.y1 - margin - height, plot.x1 - margin, plot.y1 - margin},
       {plot.x0 + margin, plot.y1 - margin - height, plot.x0 + margin + width, plot.y1 - margin}}};
  std::array<int, 4> hidden{};
  for (const PlotSeries& series : spec.series) {
    for (size_t i = 0; i < series.x.size(); ++i) {
      if (!drawable(series.x[i], false) || !drawable(series.y[i], spec.log_y)) continue;
      const int x = layout.px(series.x[i]), y = layout.py(series.y[i]);
      const bool joined =
          i + 1 < series.x.size() && drawable(series.x[i + 1], false) && drawable(series.y[i + 1], spec.log_y);
      const int next_x = joined ? layout.px(series.x[i + 1]) : x, next_y = joined ? layout.py(series.y[i + 1]) : y;
      for (int sample = 0; sample <= (joined ? 16 : 0); ++sample) {
        const int sx = x + (next_x - x) * sample / 16, sy = y + (next_y - y) * sample / 16;
        const Box dot{sx - layout.marker, sy - layout.marker, sx + layout.marker, sy + layout.marker};
        for (size_t c = 0; c < corners.size(); ++c) hidden[c] += dot.overlaps(corners[c]) ? (sample == 0 ? 16 : 1) : 0;
      }
    }
  }
  size_t best = 0;
  for (size_t c = 1; c < corners.size(); ++c) {
    if (hidden[c] < hidden[best]) best = c;
  }
  return corners[best];
}

// Returns the legend's box (none without named series).
std::vector<Box> draw_legend(Raster& image, const PlotSpec& spec, const Layout& layout) {
  std::vector<size_t> entries;
  for (size_t i = 0; i < spec.series.size(); ++i) {
    if (!spec.series[i].name.empty()) entries.push_back(i);
  }
  if (entries.empty()) return {};
  const int s = layout.scale, text_h = Raster::text_height(s), pad = layout.pad;
  const int sample_w = 8 * s + 2 * layout.marker, row_h = std::max(text_h, 2 * layout.marker + 1) + 2 * s;
  int name_w = 0;
  for (size_t i : entries) name_w = std::max(name_w, Raster::text_width(spec.series[i].name, s));
  const int width = pad + sample_w + pad + name_w + pad;
  const int height = pad + static_cast<int>(entries.size()) * row_h - 2 * s + pad;
  const Box box = place_legend(spec, layout, width, height);
  image.fill_rect(box.x0, box.y0, box.x1, box.y1, kWhite);
  image.outline_rect(box.x0, box.y0, box.x1, box.y1, kLegendBorder);
  for (size_t row = 0; row < entries.size(); ++row) {
    const Rgb color = plot_series_color(entries[row]);
    const int top = box.y0 + pad + static_cast<int>(row) * row_h, middle = top + (row_h - 2 * s) / 2;
    const int sample_x = box.x0 + pad;
    image.line(sample_x, middle, sample_x + sample_w, middle, color, s);
    draw_marker(image, sample_x + sample_w / 2, middle, layout.marker, color);
    image.text(sample_x + sample_w + pad, middle - Raster::text_ascent(s) / 2, spec.series[entries[row]].name, kInk, s);
  }
  return {box};
}

// Boxes that labels must not cover: the markers and the lines of every series.
std::vector<Box> ink_boxes(const PlotSpec& spec, const Layout& layout) {
  std::vector<Box> boxes;
  const int half = layout.scale;
  for (const PlotSeries& series : spec.series) {
    for (size_t i = 0; i < series.x.size(); ++i) {
      if (!drawable(series.x[i], false) || !drawable(series.y[i], spec.log_y)) continue;
      const int x = layout.px(series.x[i]), y = layout.py(series.y[i]);
      boxes.push_back({x - layout.marker, y - layout.marker, x + layout.marker, y + layout.marker});
      if (i + 1 >= series.x.size() || !drawable(series.x[i + 1], false) || !drawable(series.y[i + 1], spec.log_y))
        continue;
      const int next_x = layout.px(series.x[i + 1]), next_y = layout.py(series.y[i + 1]);
      const int samples = std::max(std::abs(next_x - x), std::abs(next_y - y)) / std::max(1, half) + 1;
      for (int k = 1; k < samples; ++k) {
        const int sx = x + (next_x - x) * k / samples, sy = y + (next_y - y) * k / samples;
        boxes.push_back({sx - half, sy - half, sx + half, sy + half});
      }
    }
  }
  return boxes;
}

// Each label goes to the first spot around its point, inside the data area, that covers no marker, line,
// legend or earlier label; with none free, to the first spot (above right).
void draw_point_labels(Raster& image, const PlotSpec& spec, const Layout& layout, std::vector<Box> occupied) {
  const int s = layout.scale, ascent = Raster::text_ascent(s), near = layout.marker + s;
  const std::vector<Box> ink = ink_boxes(spec, layout);
  occupied.insert(occupied.end(), ink.begin(), ink.end());
  for (size_t index = 0; index < spec.series.size(); ++index) {
    const PlotSeries& series = spec.series[index];
    for (size_t i = 0; i < series.labels.size(); ++i) {
      if (series.labels[i].empty() || !drawable(series.x[i], false) || !drawable(series.y[i], spec.log_y)) continue;
      const int x = layout.px(series.x[i]), y = layout.py(series.y[i]);
      const int w = Raster::text_width(series.labels[i], s);
      const int above = y - near - ascent, below = y + near, middle = y - ascent / 2;
      const std::array<Box, 8> spots = {{{x + near, above, x + near + w, above + ascent},
                                         {x + near, below, x + near + w, below + ascent},
                                         {x - near - w, above, x - near, above + ascent},
                                         {x - near - w, below, x - near, below + ascent},
                                         {x + near + s, middle, x + near + s + w, middle + ascent},
                                         {x - near - s - w, middle, x - near - s, middle + ascent},
                                         {x - w / 2, above - s, x - w / 2 + w, above - s + ascent},
                                         {x - w / 2, below + s, x - w / 2 + w, below + s + ascent}}};
      Box chosen = spots[0];
      for (const Box& spot : spots) {
        const Box padded{spot.x0 - 1, spot.y0 - 1, spot.x1 + 1, spot.y1 + 1};
        const bool free =
            spot.inside(layout.plot) &&
            std::none_of(occupied.begin(), occupied.end(), [&](const Box& taken) { return taken.overlaps(padded); });
        if (free) {
          chosen = spot;
          break;
        }
      }
      occupied.push_back(chosen);
      image.text(chosen.x0, chosen.y0, series.labels[i], plot_series_color(index), s);
    }
  }
}

}  // namespace

Rgb plot_series_color(size_t index) {
  return kPalette[index % kPalette.size()];
}

std::vector<uint8_t> render_plot_rgb(const PlotSpec& spec) {
  validate(spec);
  const Layout layout = make_layout(spec);
  Raster image(spec.width, spec.height, kWhite);
  draw_grid(image, layout);
  draw_series(image, spec, layout);
  const std::vector<Box> legend = draw_legend(image, spec, layout);
  draw_point_labels(image, spec, layout, legend);
  draw_axes(image, spec, layout);
  return image.pixels();
}

void write_plot_png(const PlotSpec& spec, const std::string& path) {
  write_png_rgb(path, spec.width, spec.height, render_plot_rgb(spec));
}

}  // namespace gossamer
