// The benchmark charts (bench/chart.h): PNG and SVG files of the asked size, input errors, odd data.
#include "bench/chart.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>

#include "core/error.h"

namespace gossamer::bench {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

uint32_t big_endian(const std::string& bytes, size_t offset) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(bytes[offset + i]);
  return v;
}

class ChartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gossamer-chart-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

ChartSpec decode_chart() {
  ChartSpec spec;
  spec.title = "gossamer bench decode: dummy-20b (cuda)";
  spec.x_label = "tokens/s per sequence";
  spec.y_label = "$ per 1M output tokens";
  spec.log_y = true;
  spec.series.push_back({"context 8192", {210, 190, 150, 90}, {4.0, 2.2, 0.7, 0.1}, {"1", "2", "8", "64"}});
  spec.series.push_back({"context 32768", {180, 120}, {4.6, 1.0}, {}});
  return spec;
}

TEST_F(ChartTest, WritesPngOfTheAskedSize) {
  ChartSpec spec = decode_chart();
  spec.width = 640;
  spec.height = 480;
  write_chart(spec, path("chart.png"));
  const std::string png = read_file(path("chart.png"));
  ASSERT_GT(png.size(), 24u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png.substr(12, 4), "IHDR");
  EXPECT_EQ(big_endian(png, 16), 640u);
  EXPECT_EQ(big_endian(png, 20), 480u);
  // The data is drawn: the same axes without series compress to a different image.
  ChartSpec empty = spec;
  empty.series.clear();
  write_chart(empty, path("empty.png"));
  EXPECT_NE(read_file(path("empty.png")), png);
}

TEST_F(ChartTest, WritesSvgForSvgPaths) {
  write_chart(decode_chart(), path("chart.svg"));
  const std::string svg = read_file(path("chart.svg"));
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("900"), std::string::npos);
}

TEST_F(ChartTest, OddDataStillDrawsAxes) {
  ChartSpec spec;
  spec.log_y = true;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  spec.series.push_back({"breaks", {1, 2, 3, 4}, {1, nan, -5, 0}, {}});  // only the first point is drawable
  spec.series.push_back({"", {}, {}, {}});
  spec.series.push_back({"flat", {5, 5}, {3, 3}, {"a", "b"}});
  EXPECT_NO_THROW(write_chart(spec, path("odd.png")));
  EXPECT_NO_THROW(write_chart(ChartSpec{}, path("nothing.png")));
}

TEST_F(ChartTest, RejectsBadInputWithAClearError) {
  ChartSpec spec = decode_chart();
  spec.width = 100;
  EXPECT_THROW(write_chart(spec, path("small.png")), Error);
  spec = decode_chart();
  spec.series[0].y.pop_back();
  EXPECT_THROW(write_chart(spec, path("mismatch.png")), Error);
  spec = decode_chart();
  spec.series[0].labels.pop_back();
  EXPECT_THROW(write_chart(spec, path("labels.png")), Error);
  try {
    write_chart(decode_chart(), path("no/such/dir/chart.png"));
    FAIL() << "an unwritable path must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no/such/dir/chart.png"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gossamer::bench
