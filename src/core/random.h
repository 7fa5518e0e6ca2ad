// Deterministic, platform-independent random numbers (SplitMix64 + Box–Muller in double precision).
// Used for dummy checkpoints and tests; std::normal_distribution is implementation-defined, so we avoid it.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <string_view>

namespace gossamer {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  // Jumps over n draws of next() (the generator is a counter, so chunks of one stream can be made in parallel).
  void skip(uint64_t n) { state_ += n * 0x9E3779B97F4A7C15ull; }
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double low, double high) { return low + (high - low) * uniform(); }
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  uint64_t state_;
};

// FNV-1a, to derive per-tensor seeds from names.
inline uint64_t fnv1a(std::string_view text) {
  uint64_t hash = 0xCBF29CE484222325ull;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001B3ull;
  return hash;
}

}  // namespace gossamer
