#include "core/png.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.h"

namespace gossamer {

namespace {

constexpr size_t kMaxStoredBlock = 65535;   // LEN is 16 bits
constexpr size_t kMaxIdatChunk = 1u << 20;  // any size up to 2^31 - 1 is legal; 1 MiB keeps chunks modest

constexpr std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t n = 0; n < 256; ++n) {
    uint32_t c = n;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[n] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = make_crc_table();

void put_u32_be(std::vector<uint8_t>& out, uint32_t value) {
  out.push_back(static_cast<uint8_t>(value >> 24));
  out.push_back(static_cast<uint8_t>(value >> 16));
  out.push_back(static_cast<uint8_t>(value >> 8));
  out.push_back(static_cast<uint8_t>(value));
}

void put_u16_le(std::vector<uint8_t>& out, uint16_t value) {
  out.push_back(static_cast<uint8_t>(value));
  out.push_back(static_cast<uint8_t>(value >> 8));
}

// length, type, data, CRC-32 of type + data.
void put_chunk(std::vector<uint8_t>& out, const char (&type)[5], const uint8_t* data, size_t size) {
  GOSSAMER_ASSERT(size <= 0x7FFFFFFFu, "PNG chunk of ", size, " bytes");
  put_u32_be(out, static_cast<uint32_t>(size));
  const size_t type_at = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data, data + size);
  put_u32_be(out, crc32_ieee(out.data() + type_at, 4 + size));
}

// The filtered image: each row is filter byte 0 followed by the row's 3 × width bytes.
std::vector<uint8_t> filtered_rows(size_t width, size_t height, const std::vector<uint8_t>& rgb) {
  const size_t row_bytes = 3 * width;
  std::vector<uint8_t> raw;
  raw.reserve((row_bytes + 1) * height);
  for (size_t y = 0; y < height; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), rgb.begin() + static_cast<ptrdiff_t>(y * row_bytes),
               rgb.begin() + static_cast<ptrdiff_t>((y + 1) * row_bytes));
  }
  return raw;
}

// A zlib stream (RFC 1950) holding `raw` in stored deflate blocks (RFC 1951 §3.2.4).
std::vector<uint8_t> zlib_stored(const std::vector<uint8_t>& raw) {
  std::vector<uint8_t> out;
  const size_t blocks = std::max<size_t>(1, (raw.size() + kMaxStoredBlock - 1) / kMaxStoredBlock);
  out.reserve(2 + raw.size() + 5 * blocks + 4);
  out.push_back(0x78);  // CMF: deflate, 32 KiB window
  out.push_back(0x01);  // FLG: no dictionary, "fastest"; 0x7801 is a multiple of 31
  size_t offset = 0;
  for (size_t block = 0; block < blocks; ++block) {
    const size_t size = std::min(kMaxStoredBlock, raw.size() - offset);
    const bool final = block + 1 == blocks;
    out.push_back(final ? 0x01 : 0x00);  // BFINAL, BTYPE = 00; the other 5 bits pad to the byte boundary
    put_u16_le(out, static_cast<uint16_t>(size));
    put_u16_le(out, static_cast<uint16_t>(~size));
    out.insert(out.end(), raw.begin() + static_cast<ptrdiff_t>(offset),
               raw.begin() + static_cast<ptrdiff_t>(offset + size));
    offset += size;
  }
  put_u32_be(out, adler32(raw.data(), raw.size()));
  return out;
}

}  // namespace

uint32_t crc32_ieee(const uint8_t* data, size_t size, uint32_t crc) {
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = kCrcTable[(crc ^ data[i]) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

uint32_t adler32(const uint8_t* data, size_t size, uint32_t adler) {
  constexpr uint32_t kModulus = 65521;
  constexpr size_t kRun = 5552;  // the longest run whose sums cannot overflow 32 bits before the modulo
  uint32_t a = adler & 0xFFFFu, b = adler >> 16;
  while (size > 0) {
    const size_t run = std::min(size, kRun);
    for (size_t i = 0; i < run; ++i) {
      a += data[i];
      b += a;
    }
    a %= kModulus;
    b %= kModulus;
    data += run;
    size -= run;
  }
  return (b << 16) | a;
}

std::vector<uint8_t> encode_png_rgb(int width, int height, const std::vector<uint8_t>& rgb) {
  GOSSAMER_CHECK(width >= 1 && height >= 1, "PNG size ", width, "x", height,
                 " is invalid: width and height must be at least 1");
  const uint64_t expected = 3ull * static_cast<uint64_t>(width) * static_cast<uint64_t>(height);
  GOSSAMER_CHECK(rgb.size() == expected, "PNG of ", width, "x", height, " needs ", expected, " RGB bytes, got ",
                 rgb.size());
  const std::vector<uint8_t> stream =
      zlib_stored(filtered_rows(static_cast<size_t>(width), static_cast<size_t>(height), rgb));

  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  png.reserve(8 + 25 + stream.size() + 12 * (stream.size() / kMaxIdatChunk + 1) + 12);
  std::vector<uint8_t> header;
  put_u32_be(header, static_cast<uint32_t>(width));
  put_u32_be(header, static_cast<uint32_t>(height));
  header.insert(header.end(), {8, 2, 0, 0, 0});  // bit depth 8, RGB, deflate, adaptive filtering, no interlace
  put_chunk(png, "IHDR", header.data(), header.size());
  for (size_t offset = 0; offset < stream.size(); offset += kMaxIdatChunk) {
    put_chunk(png, "IDAT", stream.data() + offset, std::min(kMaxIdatChunk, stream.size() - offset));
  }
  put_chunk(png, "IEND", nullptr, 0);
  return png;
}

void write_png_rgb(const std::string& path, int width, int height, const std::vector<uint8_t>& rgb) {
  const std::vector<uint8_t> png = encode_png_rgb(width, height, rgb);
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
  GOSSAMER_CHECK(file != nullptr, "cannot write PNG '", path, "': ", std::strerror(errno));
  const size_t written = std::fwrite(png.data(), 1, png.size(), file.get());
  GOSSAMER_CHECK(written == png.size(), "failed writing PNG '", path, "': ", std::strerror(errno));
  const int closed = std::fclose(file.release());
  GOSSAMER_CHECK(closed == 0, "failed writing PNG '", path, "': ", std::strerror(errno));
}

}  // namespace gossamer
