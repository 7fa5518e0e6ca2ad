// The chart renderer (core/plot.h) and its parts: axes, font, raster.
#include "core/plot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>

#include "core/bitmap_font.h"
#include "core/error.h"
#include "core/plot_axis.h"
#include "core/raster.h"
#include "png_reference.h"

namespace gossamer {
namespace {

constexpr Rgb kWhite{255, 255, 255};

Rgb pixel(const std::vector<uint8_t>& rgb, int width, int x, int y) {
  const size_t i = 3 * (static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x));
  return {rgb[i], rgb[i + 1], rgb[i + 2]};
}

size_t count_color(const std::vector<uint8_t>& rgb, Rgb color) {
  size_t count = 0;
  for (size_t i = 0; i + 2 < rgb.size(); i += 3) count += Rgb{rgb[i], rgb[i + 1], rgb[i + 2]} == color;
  return count;
}

// The largest x of a pixel in `color`, or -1.
int rightmost(const std::vector<uint8_t>& rgb, int width, Rgb color) {
  int best = -1;
  for (size_t i = 0; i + 2 < rgb.size(); i += 3) {
    if (Rgb{rgb[i], rgb[i + 1], rgb[i + 2]} == color)
      best = std::max(best, static_cast<int>((i / 3) % static_cast<size_t>(width)));
  }
  return best;
}

// The decode bench's chart, with the numbers of PERF.md (2026-11-30, f0fd082).
PlotSpec decode_chart() {
  PlotSpec spec;
  spec.title = "decode: cost against speed";
  spec.x_label = "tokens/s per sequence";
  spec.y_label = "$ per 1M output tokens";
  spec.series.push_back({"context 8192",
                         {251.8, 202.4, 155.7, 118.0, 85.7, 56.2, 36.9, 21.8},
                         {3.310, 2.059, 1.338, 0.883, 0.607, 0.463, 0.352, 0.299},
                         {"1", "2", "4", "8", "16", "32", "64", "128"}});
  spec.series.push_back({"context 32768",
                         {233.9, 187.4, 140.7, 101.7, 71.0, 45.3, 26.4},
                         {3.562, 2.223, 1.481, 1.024, 0.734, 0.575, 0.494},
                         {"1", "2", "4", "8", "16", "32", "64"}});
  return spec;
}

void expect_valid_render(const PlotSpec& spec) {
  const std::vector<uint8_t> rgb = render_plot_rgb(spec);
  ASSERT_EQ(rgb.size(), 3 * static_cast<size_t>(spec.width) * static_cast<size_t>(spec.height));
  EXPECT_EQ(pixel(rgb, spec.width, 0, 0), kWhite);
  EXPECT_EQ(pixel(rgb, spec.width, spec.width - 1, spec.height - 1), kWhite);
  EXPECT_GT(count_color(rgb, kWhite), rgb.size() / 3 / 2);
}

TEST(PlotTest, RendersTwoSeriesInTheirColours) {
  const PlotSpec spec = decode_chart();
  const std::vector<uint8_t> rgb = render_plot_rgb(spec);
  ASSERT_EQ(rgb.size(), 900u * 600 * 3);
  for (auto [x, y] : {std::pair{0, 0}, std::pair{899, 0}, std::pair{0, 599}, std::pair{899, 599}}) {
    EXPECT_EQ(pixel(rgb, 900, x, y), kWhite) << x << "," << y;
  }
  EXPECT_GT(count_color(rgb, kWhite), 900u * 600 * 7 / 10);  // mostly paper
  const Rgb first = plot_series_color(0), second = plot_series_color(1);
  EXPECT_NE(first, second);
  EXPECT_GT(count_color(rgb, first), 1000u);  // lines, 9×9 markers, labels, legend sample
  EXPECT_GT(count_color(rgb, second), 1000u);
  EXPECT_GT(count_color(rgb, Rgb{25, 25, 25}), 1000u);  // frame, ticks and text in ink
}

TEST(PlotTest, PointsGoWhereTheirValuesSay) {
  PlotSpec spec;
  spec.series.push_back({"", {0, 10, 100}, {0, 1, 2}, {}});
  spec.series.push_back({"", {0, 50}, {0, 1}, {}});
  const std::vector<uint8_t> rgb = render_plot_rgb(spec);
  const int far = rightmost(rgb, spec.width, plot_series_color(0)),
            near = rightmost(rgb, spec.width, plot_series_color(1));
  ASSERT_GT(far, 0);
  ASSERT_GT(near, 0);
  EXPECT_GT(far, near + spec.width / 4);  // x = 100 against x = 50 on an axis from about 0 to 100
}

TEST(PlotTest, SeriesColoursAreDistinctAndVisible) {
  std::set<std::tuple<int, int, int>> seen;
  for (size_t i = 0; i < 8; ++i) {
    const Rgb color = plot_series_color(i);
    seen.insert({color.r, color.g, color.b});
    EXPECT_LT(color.r + color.g + color.b, 3 * 235) << i;  // not paper
    EXPECT_GT(color.r + color.g + color.b, 3 * 50) << i;   // not ink
  }
  EXPECT_EQ(seen.size(), 8u);
  EXPECT_EQ(plot_series_color(8), plot_series_color(0));
}

TEST(PlotTest, LogScaleMovesThePoints) {
  PlotSpec spec = decode_chart();
  const std::vector<uint8_t> linear = render_plot_rgb(spec);
  spec.log_y = true;
  const std::vector<uint8_t> log = render_plot_rgb(spec);
  EXPECT_NE(linear, log);
  expect_valid_render(spec);
}

TEST(PlotTest, DegenerateSpecsDrawWithoutCrashing) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<std::pair<std::string, PlotSpec>> cases;
  cases.push_back({"nothing", PlotSpec{}});
  PlotSpec spec;
  spec.series = {{"empty", {}, {}, {}}, {"", {}, {}, {}}};
  cases.push_back({"empty series", spec});
  spec.series = {{"one", {3}, {4}, {"only"}}};
  cases.push_back({"single point", spec});
  spec.series = {{"flat", {5, 5, 5}, {7, 7, 7}, {"a", "b", "c"}}, {"zero", {0, 0}, {0, 0}, {}}};
  cases.push_back({"all equal", spec});
  spec.series = {{"bad", {nan, 1, inf, 2, -inf}, {1, nan, 2, 3, 4}, {"", "", "", "", ""}}};
  cases.push_back({"non-finite", spec});
  spec.series = {{"all bad", {nan}, {inf}, {}}};
  cases.push_back({"nothing finite", spec});
  spec.series = {{"huge", {-1e300, 0, 1e300, 1e308}, {-1e300, 1e-300, 1e300, -1e308}, {}}};
  cases.push_back({"huge", spec});
  spec.series = {{"tiny span", {1, 1 + 1e-12}, {1e-9, 1e-9 + 1e-20}, {}}};
  cases.push_back({"tiny span", spec});
  spec.series.clear();
  for (int i = 0; i < 20; ++i) spec.series.push_back({std::to_string(i), {0, 1.0 * i}, {1.0 * i, 0}, {"x", "y"}});
  cases.push_back({"20 series", spec});
  spec = PlotSpec{};
  spec.width = 160;
  spec.height = 120;
  spec.title = std::string(200, 'T') + " \xc3\xa9\t\n";
  spec.x_label = std::string(100, 'x');
  spec.y_label = std::string(100, 'y');
  spec.series = {{std::string(80, 'n'), {1e-7, 2e-7}, {123456789, 123456790}, {std::string(50, 'l'), ""}}};
  cases.push_back({"small with long text", spec});
  for (auto [log, label] : {std::pair{false, "linear"}, std::pair{true, "log"}}) {
    for (auto [name, spec_case] : cases) {
      SCOPED_TRACE(name + " " + label);
      spec_case.log_y = log;
      expect_valid_render(spec_case);
    }
  }
  PlotSpec log_spec;  // log scale with nothing above zero
  log_spec.log_y = true;
  log_spec.series = {{"non-positive", {1, 2, 3}, {0, -1, -2}, {"a", "b", "c"}}};
  expect_valid_render(log_spec);
  log_spec.width = 8192;
  log_spec.height = 120;
  expect_valid_render(log_spec);
}

TEST(PlotTest, RejectsBadSpecs) {
  PlotSpec spec;
  spec.width = 100;
  EXPECT_THROW(render_plot_rgb(spec), Error);
  spec = PlotSpec{};
  spec.height = 9000;
  EXPECT_THROW(render_plot_rgb(spec), Error);
  spec = PlotSpec{};
  spec.series = {{"uneven", {1, 2}, {1}, {}}};
  EXPECT_THROW(render_plot_rgb(spec), Error);
  spec.series = {{"labels", {1, 2}, {1, 2}, {"only one"}}};
  EXPECT_THROW(render_plot_rgb(spec), Error);
}

TEST(PlotTest, WritePlotPngWritesAPng) {
  testing::ScratchDir dir;
  const PlotSpec spec = decode_chart();
  const std::string path = dir.file("decode.png");
  write_plot_png(spec, path);
  const std::vector<uint8_t> bytes = testing::read_bytes(path);
  const std::vector<uint8_t> signature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  ASSERT_GT(bytes.size(), 900u * 600 * 3);  // stored blocks: no compression
  EXPECT_TRUE(std::equal(signature.begin(), signature.end(), bytes.begin()));
  EXPECT_THROW(write_plot_png(spec, dir.file("missing/decode.png")), Error);
}

TEST(PlotTest, NodeDecodesTheWrittenPlot) {
  GOSSAMER_REQUIRE_NODE();
  testing::ScratchDir dir;
  PlotSpec spec = decode_chart();
  spec.log_y = true;
  const std::string path = dir.file("decode.png");
  write_plot_png(spec, path);
  const testing::DecodedPng decoded = testing::decode_png_with_node(path);
  EXPECT_TRUE(decoded.report.value("ok", false)) << decoded.report.dump();
  EXPECT_TRUE(decoded.pixels == render_plot_rgb(spec));
}

TEST(PlotAxisTest, LinearTicksAreNiceAndCoverTheValues) {
  const PlotAxis axis = make_axis({21.8, 251.8, 100}, false);
  EXPECT_LT(axis.lo, 21.8);
  EXPECT_GT(axis.hi, 251.8);
  EXPECT_EQ(axis.ticks, (std::vector<double>{50, 100, 150, 200, 250}));
  EXPECT_EQ(axis.labels, (std::vector<std::string>{"50", "100", "150", "200", "250"}));
  const PlotAxis small = make_axis({0.299, 3.562}, false);
  EXPECT_EQ(small.labels, (std::vector<std::string>{"0.5", "1.0", "1.5", "2.0", "2.5", "3.0", "3.5"}));
  EXPECT_DOUBLE_EQ(small.position(small.lo), 0.0);
  EXPECT_DOUBLE_EQ(small.position(small.hi), 1.0);
  const PlotAxis negative = make_axis({-0.03, 0.01}, false);
  for (const std::string& label : negative.labels) EXPECT_NE(label, "-0.00");
  EXPECT_NE(std::find(negative.labels.begin(), negative.labels.end(), "0.00"), negative.labels.end());
}

TEST(PlotAxisTest, LogTicksFollowTheSpan) {
  const PlotAxis cost = make_axis({0.299, 3.562}, true);  // the decode bench's $ per 1M tokens
  EXPECT_EQ(cost.labels, (std::vector<std::string>{"0.3", "0.5", "1", "2", "3"}));
  EXPECT_FALSE(cost.minor.empty());
  EXPECT_GT(cost.position(1.0), 0.0);
  EXPECT_LT(cost.position(1.0), 1.0);
  const PlotAxis wide = make_axis({1e-3, 1e4}, true);
  EXPECT_EQ(wide.labels, (std::vector<std::string>{"0.001", "0.01", "0.1", "1", "10", "100", "1000", "10000"}));
  const PlotAxis huge = make_axis({1e-200, 1e200}, true);
  EXPECT_LE(huge.ticks.size(), 10u);
  EXPECT_GE(huge.ticks.size(), 4u);
  const PlotAxis narrow = make_axis({0.51, 0.52}, true);  // under a decade's fraction: linear ticks
  EXPECT_GE(narrow.ticks.size(), 4u);
}

TEST(PlotAxisTest, DegenerateValuesGiveAUsableRange) {
  for (bool log : {false, true}) {
    for (const std::vector<double>& values :
         std::vector<std::vector<double>>{{}, {5}, {5, 5, 5}, {1e-300}, {1e300}, {0}}) {
      if (log && !values.empty() && values[0] <= 0) continue;
      const PlotAxis axis = make_axis(values, log);
      SCOPED_TRACE((log ? "log " : "linear ") + std::to_string(values.size()));
      EXPECT_TRUE(std::isfinite(axis.lo) && std::isfinite(axis.hi));
      EXPECT_LT(axis.lo, axis.hi);
      EXPECT_GE(axis.ticks.size(), 2u);
      EXPECT_EQ(axis.ticks.size(), axis.labels.size());
      for (double value : values) {
        EXPECT_GE(value, axis.lo);
        EXPECT_LE(value, axis.hi);
      }
      for (double tick : axis.ticks) {
        EXPECT_GE(tick, axis.lo);
        EXPECT_LE(tick, axis.hi);
      }
    }
  }
}

TEST(PlotFontTest, EveryPrintableGlyphIsInkedAndDistinct) {
  std::set<GlyphRows> seen;
  for (int c = 32; c <= 126; ++c) {
    const GlyphRows& rows = glyph_rows(static_cast<char>(c));
    int ink = 0;
    for (uint8_t row : rows) {
      EXPECT_EQ(row & ~0x1Fu, 0u) << "glyph " << c << " is wider than 5 columns";
      ink += std::popcount(row);
    }
    if (c == ' ') {
      EXPECT_EQ(ink, 0);
    } else {
      EXPECT_GT(ink, 0) << static_cast<char>(c);
    }
    EXPECT_TRUE(seen.insert(rows).second) << "glyph '" << static_cast<char>(c) << "' repeats another";
  }
  EXPECT_EQ(seen.size(), 95u);
  EXPECT_EQ(glyph_rows('\n'), glyph_rows('?'));
  EXPECT_EQ(glyph_rows('\x7f'), glyph_rows('?'));
  EXPECT_EQ(glyph_rows('\xc3'), glyph_rows('?'));
  for (char c : std::string("ACEHMTZ0189"))
    EXPECT_EQ(glyph_rows(c)[7] | glyph_rows(c)[8], 0) << c << " has a descender";
  for (char c : std::string("gjpqy")) EXPECT_NE(glyph_rows(c)[7] | glyph_rows(c)[8], 0) << c << " has no descender";
}

TEST(PlotRasterTest, LinesIncludeBothEndsAndClip) {
  const Rgb red{255, 0, 0};
  Raster image(20, 10, kWhite);
  image.line(2, 3, 17, 8, red);
  EXPECT_EQ(image.at(2, 3), red);
  EXPECT_EQ(image.at(17, 8), red);
  EXPECT_EQ(count_color(image.pixels(), red), 16u);  // one pixel per column of a shallow line
  Raster clipped(20, 10, kWhite);
  clipped.line(std::numeric_limits<int>::min(), 5, std::numeric_limits<int>::max(), 5, red, 3);  // returns at once
  EXPECT_EQ(count_color(clipped.pixels(), red), 3u * 20);
  clipped.line(-100, -100, -50, -50, Rgb{0, 0, 255});
  EXPECT_EQ(count_color(clipped.pixels(), Rgb{0, 0, 255}), 0u);
  EXPECT_THROW(Raster(0, 5, kWhite), Error);
}

TEST(PlotRasterTest, TextCoversItsBox) {
  const Rgb ink{0, 0, 0};
  EXPECT_EQ(Raster::text_width("", 2), 0);
  EXPECT_EQ(Raster::text_width("AB", 2), 2 * 6 * 2 - 2);
  EXPECT_EQ(Raster::text_height(3), 27);
  EXPECT_EQ(Raster::text_ascent(3), 21);
  Raster image(40, 40, kWhite);
  image.text(1, 2, "H", ink, 2);  // H: full-height columns at the left and right edge
  EXPECT_EQ(image.at(1, 2), ink);
  EXPECT_EQ(image.at(1 + 4 * 2 + 1, 2 + 6 * 2 + 1), ink);
  EXPECT_EQ(image.at(1 + 2, 2), kWhite);
  Raster up(40, 40, kWhite);
  up.text_up(5, 30, "H", ink, 2);  // turned: the H's left column is now its bottom row
  EXPECT_EQ(up.at(5, 30), ink);
  EXPECT_EQ(up.at(5 + 6 * 2 + 1, 30 - 4 * 2 - 1), ink);
  EXPECT_EQ(up.at(5, 30 - 2), kWhite);
  Raster edge(10, 10, kWhite);
  edge.text(-1000, -1000, std::string(1000, 'W'), ink, 64);  // clipped, never out of bounds
  edge.text_up(std::numeric_limits<int>::max(), std::numeric_limits<int>::min(), "W", ink, 64);
  edge.text(5, 5, "\xff\x01", ink, 1);
}

}  // namespace
}  // namespace gossamer
