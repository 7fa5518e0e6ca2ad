// PNG encoding of 8-bit RGB images without zlib: every row uses filter type 0 (None) and the zlib stream is
// made of stored (uncompressed) deflate blocks of at most 65,535 bytes, so files are ~3 bytes per pixel.
//
// Contract: `rgb` holds width × height pixels, row-major, top row first, 3 bytes (R, G, B) each. A width or
// height below 1, or an `rgb` of any other size, throws gossamer::Error; so does a file that cannot be
// opened or written (the message names the path). The output is a complete PNG: signature, IHDR (bit depth
// 8, colour type 2, no interlace), one or more IDAT chunks, IEND, each chunk with its CRC-32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gossamer {

// The PNG file's bytes.
std::vector<uint8_t> encode_png_rgb(int width, int height, const std::vector<uint8_t>& rgb);

// Encodes and writes `path` (created or truncated).
void write_png_rgb(const std::string& path, int width, int height, const std::vector<uint8_t>& rgb);

// CRC-32 as PNG and zlib's gzip use it (reflected polynomial 0xEDB88320, initial and final XOR 0xFFFFFFFF).
// `crc` continues an earlier call: crc32_ieee(b, nb, crc32_ieee(a, na)) == crc32_ieee(a‖b).
uint32_t crc32_ieee(const uint8_t* data, size_t size, uint32_t crc = 0);

// Adler-32 as in a zlib stream's trailer; `adler` continues an earlier call (start: 1).
uint32_t adler32(const uint8_t* data, size_t size, uint32_t adler = 1);

}  // namespace gossamer
