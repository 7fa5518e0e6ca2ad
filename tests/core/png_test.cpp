// PNG encoder: structure by hand, content against node's built-in zlib (tests/core/png_reference.mjs).
#include "core/png.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string_view>

#include "core/error.h"
#include "core/random.h"
#include "png_reference.h"

namespace gossamer {
namespace {

using testing::decode_png_with_node;
using testing::ScratchDir;

std::vector<uint8_t> random_pixels(int width, int height, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<uint8_t> rgb(3 * static_cast<size_t>(width) * static_cast<size_t>(height));
  for (uint8_t& byte : rgb) byte = static_cast<uint8_t>(rng.next() >> 56);
  return rgb;
}

uint32_t read_u32_be(const std::vector<uint8_t>& bytes, size_t at) {
  return (uint32_t{bytes[at]} << 24) | (uint32_t{bytes[at + 1]} << 16) | (uint32_t{bytes[at + 2]} << 8) | bytes[at + 3];
}

const uint8_t* text_bytes(std::string_view text) {
  return reinterpret_cast<const uint8_t*>(text.data());
}

// Writes the image, has node decode it, and checks the report and the pixels; returns the report.
nlohmann::json expect_node_round_trip(const ScratchDir& dir, int width, int height, const std::vector<uint8_t>& rgb) {
  const std::string path = dir.file("image.png");
  write_png_rgb(path, width, height, rgb);
  const testing::DecodedPng decoded = decode_png_with_node(path);
  EXPECT_TRUE(decoded.report.value("ok", false)) << decoded.report.dump();
  EXPECT_EQ(decoded.report.value("width", -1), width);
  EXPECT_EQ(decoded.report.value("height", -1), height);
  EXPECT_LE(decoded.report.value("largest_block", 1 << 20), 65535);
  EXPECT_TRUE(decoded.pixels == rgb) << "node's zlib inflated other pixels (" << decoded.pixels.size() << " bytes vs "
                                     << rgb.size() << ")";
  return decoded.report;
}

TEST(PngTest, ChecksumsMatchPublishedCheckValues) {
  EXPECT_EQ(crc32_ieee(text_bytes("123456789"), 9), 0xCBF43926u);  // the CRC-32 "check" value
  EXPECT_EQ(crc32_ieee(nullptr, 0), 0u);
  EXPECT_EQ(crc32_ieee(text_bytes("IEND"), 4), 0xAE426082u);  // every PNG ends with it
  EXPECT_EQ(adler32(text_bytes("Wikipedia"), 9), 0x11E60398u);
  EXPECT_EQ(adler32(nullptr, 0), 1u);
}

TEST(PngTest, ChecksumsContinueAcrossCalls) {
  const std::vector<uint8_t> bytes = random_pixels(100, 100, 7);  // 30,000 bytes: several Adler-32 runs
  for (size_t split : {size_t{0}, size_t{1}, size_t{5552}, size_t{12345}, bytes.size()}) {
    EXPECT_EQ(crc32_ieee(bytes.data() + split, bytes.size() - split, crc32_ieee(bytes.data(), split)),
              crc32_ieee(bytes.data(), bytes.size()));
    EXPECT_EQ(adler32(bytes.data() + split, bytes.size() - split, adler32(bytes.data(), split)),
              adler32(bytes.data(), bytes.size()));
  }
  const std::vector<uint8_t> ones(100000, 0xFF);  // the largest sums: the modulo must keep up
  EXPECT_EQ(adler32(ones.data(), ones.size()), adler32(ones.data() + 1, ones.size() - 1, adler32(ones.data(), 1)));
}

TEST(PngTest, LayoutOfSignatureHeaderAndEnd) {
  const int width = 3, height = 2;
  const std::vector<uint8_t> rgb = random_pixels(width, height, 1);
  const std::vector<uint8_t> png = encode_png_rgb(width, height, rgb);
  const std::vector<uint8_t> signature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  ASSERT_GT(png.size(), 8u + 25 + 12);
  EXPECT_TRUE(std::equal(signature.begin(), signature.end(), png.begin()));
  EXPECT_EQ(read_u32_be(png, 8), 13u);
  EXPECT_EQ(std::memcmp(png.data() + 12, "IHDR", 4), 0);
  EXPECT_EQ(read_u32_be(png, 16), 3u);
  EXPECT_EQ(read_u32_be(png, 20), 2u);
  EXPECT_EQ(std::vector<uint8_t>(png.begin() + 24, png.begin() + 29), (std::vector<uint8_t>{8, 2, 0, 0, 0}));
  EXPECT_EQ(read_u32_be(png, 29), crc32_ieee(png.data() + 12, 17));
  // One IDAT: zlib header (2) + one stored block (5 + 2 rows of 1 + 9 bytes) + Adler-32 (4).
  EXPECT_EQ(read_u32_be(png, 33), 2u + 5 + 20 + 4);
  EXPECT_EQ(std::memcmp(png.data() + 37, "IDAT", 4), 0);
  EXPECT_EQ(png[41], 0x78);
  EXPECT_EQ((png[41] * 256 + png[42]) % 31, 0);
  EXPECT_EQ(png[43], 0x01);  // final, stored
  const std::vector<uint8_t> end = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82};
  EXPECT_TRUE(std::equal(end.begin(), end.end(), png.end() - 12));
  EXPECT_EQ(png.size(), 8u + 25 + (12 + 31) + 12);
}

TEST(PngTest, WriteStoresTheEncodedBytes) {
  ScratchDir dir;
  const std::vector<uint8_t> rgb = random_pixels(17, 5, 2);
  write_png_rgb(dir.file("a.png"), 17, 5, rgb);
  EXPECT_EQ(testing::read_bytes(dir.file("a.png")), encode_png_rgb(17, 5, rgb));
  write_png_rgb(dir.file("a.png"), 1, 1, {1, 2, 3});  // truncates
  EXPECT_EQ(testing::read_bytes(dir.file("a.png")), encode_png_rgb(1, 1, {1, 2, 3}));
}

TEST(PngTest, RejectsBadSizes) {
  EXPECT_THROW(encode_png_rgb(0, 1, {}), Error);
  EXPECT_THROW(encode_png_rgb(1, 0, {}), Error);
  EXPECT_THROW(encode_png_rgb(-2, -3, std::vector<uint8_t>(18)), Error);
  EXPECT_THROW(encode_png_rgb(2, 2, std::vector<uint8_t>(11)), Error);
  EXPECT_THROW(encode_png_rgb(2, 2, std::vector<uint8_t>(13)), Error);
  EXPECT_THROW(encode_png_rgb(1 << 30, 1 << 30, std::vector<uint8_t>(12)), Error);  // no overflow to a match
  try {
    encode_png_rgb(4, 3, std::vector<uint8_t>(35));
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("needs 36 RGB bytes, got 35"), std::string::npos) << error.what();
  }
}

TEST(PngTest, UnwritablePathThrowsNamingIt) {
  ScratchDir dir;
  const std::string missing = dir.file("no-such-directory/plot.png");
  try {
    write_png_rgb(missing, 1, 1, {0, 0, 0});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(missing), std::string::npos) << error.what();
  }
  std::filesystem::create_directories(dir.file("a-directory"));
  EXPECT_THROW(write_png_rgb(dir.file("a-directory"), 1, 1, {0, 0, 0}), Error);
  if (std::filesystem::exists("/dev/full")) {  // opens, then every write fails: ENOSPC
    EXPECT_THROW(write_png_rgb("/dev/full", 64, 64, random_pixels(64, 64, 3)), Error);
  }
}

TEST(PngTest, NodeZlibAgreesOnChecksums) {
  GOSSAMER_REQUIRE_NODE();
  ScratchDir dir;
  for (const auto& [size, seed] : std::vector<std::pair<int, uint64_t>>{{1, 1}, {1000, 2}, {300000, 3}}) {
    const std::vector<uint8_t> bytes = random_pixels(size, 1, seed);
    testing::write_bytes(dir.file("bytes"), bytes);
    const nlohmann::json reference = testing::run_png_reference("checksums '" + dir.file("bytes") + "'");
    ASSERT_TRUE(reference.is_object());
    EXPECT_EQ(reference.value("crc32", 0u), crc32_ieee(bytes.data(), bytes.size())) << 3 * size << " bytes";
    EXPECT_EQ(reference.value("adler32", 0u), adler32(bytes.data(), bytes.size())) << 3 * size << " bytes";
    if (seed == 1) {
      std::printf("[ reference ] node %s, CRC-32 from %s\n", reference.value("node", "?").c_str(),
                  reference.value("crc_source", "?").c_str());
    }
  }
}

TEST(PngTest, NodeDecodesSmallImages) {
  GOSSAMER_REQUIRE_NODE();
  ScratchDir dir;
  const nlohmann::json report = expect_node_round_trip(dir, 1, 1, {255, 0, 128});
  EXPECT_EQ(report["chunks"], nlohmann::json({"IHDR", "IDAT", "IEND"}));
  EXPECT_EQ(report.value("blocks", 0), 1);
  expect_node_round_trip(dir, 3, 2, {1, 2, 3, 4, 5, 6, 7, 8, 9, 250, 251, 252, 0, 0, 0, 255, 255, 255});
  expect_node_round_trip(dir, 1, 40, random_pixels(1, 40, 4));
  expect_node_round_trip(dir, 40, 1, random_pixels(40, 1, 5));
}

TEST(PngTest, NodeDecodesAcrossStoredBlockBoundaries) {
  GOSSAMER_REQUIRE_NODE();
  ScratchDir dir;
  // (3 × width + 1) × height filtered bytes: 65,535 (one full block), 65,536, 65,534, 131,070 (two full
  // blocks) and 192,374.
  struct Case {
    int width, height, blocks;
  };
  for (const Case& c : {Case{28, 771, 1}, Case{85, 256, 2}, Case{2, 9362, 1}, Case{3, 13107, 2}, Case{30, 2114, 3}}) {
    SCOPED_TRACE(std::to_string(c.width) + "x" + std::to_string(c.height));
    const nlohmann::json report = expect_node_round_trip(dir, c.width, c.height, random_pixels(c.width, c.height, 6));
    EXPECT_EQ(report.value("blocks", 0), c.blocks);
  }
}

TEST(PngTest, NodeDecodesALargeImageInSeveralIdatChunks) {
  GOSSAMER_REQUIRE_NODE();
  ScratchDir dir;
  const int width = 900, height = 600;  // 1,620,600 filtered bytes: 25 blocks, 2 IDAT chunks
  const nlohmann::json report = expect_node_round_trip(dir, width, height, random_pixels(width, height, 8));
  EXPECT_EQ(report.value("blocks", 0), 25);
  EXPECT_EQ(report["chunks"], nlohmann::json({"IHDR", "IDAT", "IDAT", "IEND"}));
}

}  // namespace
}  // namespace gossamer
