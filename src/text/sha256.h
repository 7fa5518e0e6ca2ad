// SHA-256 (FIPS 180-4), used to verify the tokenizer's rank data. Streaming: update() any number of times,
// then hex_digest() once.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace gossamer::text {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  // Finishes the hash and returns 64 lowercase hex digits. The object must not be updated afterwards.
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

}  // namespace gossamer::text
