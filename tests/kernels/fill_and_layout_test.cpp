// Random weight fills (random_fill.h) and the tile-major FP8 relayout (fp8_tiled.h): CPU properties, and
// the GPU kernels against their CPU references, bit for bit.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

#include "kernel_test_utils.h"
#include "kernels/fp8_tiled.h"
#include "kernels/random_fill.h"

namespace gossamer::kernels {
namespace {

using namespace test;

template <typename T>
std::vector<T> fill_cpu(RandomFillParams p) {
  std::vector<T> out(static_cast<size_t>(p.count));
  p.out = out.data();
  random_fill_cpu(p);
  return out;
}

RandomFillParams params(RandomFillType type, RandomDist dist, float a, float b, int64_t count, uint64_t seed,
                        float inv_scale = 1.0f) {
  RandomFillParams p;
  p.type = type;
  p.dist = dist;
  p.a = a;
  p.b = b;
  p.count = count;
  p.seed = seed;
  p.inv_scale = inv_scale;
  return p;
}

// The fill's elements [first, first + count): a vocab-parallel rank's embedding rows.
RandomFillParams sliced(RandomFillParams p, int64_t first) {
  p.first = first;
  return p;
}

// CPU only: the normal fill has the asked mean and spread, the uniform one stays in range, fp8 codes
// are never NaN, and the seed decides everything.
TEST(RandomFill, DistributionsAndSeeds) {
  const int64_t n = 1 << 20;
  const auto normal = fill_cpu<uint16_t>(params(RandomFillType::kBf16, RandomDist::kNormal, 1.0f, 0.1f, n, 7));
  double sum = 0, sq = 0;
  for (const uint16_t v : normal) {
    const double x = bf16_to_float(v);
    sum += x;
    sq += x * x;
  }
  const double mean = sum / n, std = std::sqrt(sq / n - mean * mean);
  EXPECT_NEAR(mean, 1.0, 1e-3);
  EXPECT_NEAR(std, 0.1, 3e-3);
  const auto uniform = fill_cpu<float>(params(RandomFillType::kF32, RandomDist::kUniform, -2.0f, 4.0f, n, 8));
  EXPECT_GE(*std::min_element(uniform.begin(), uniform.end()), -2.0f);
  EXPECT_LT(*std::max_element(uniform.begin(), uniform.end()), 4.0f);
  EXPECT_LT(*std::min_element(uniform.begin(), uniform.end()), -1.99f);
  const auto codes = fill_cpu<uint8_t>(params(RandomFillType::kFp8E4M3, RandomDist::kNormal, 0.0f, 1.0f, n, 9, 400.0f));
  EXPECT_EQ(std::count_if(codes.begin(), codes.end(), [](uint8_t c) { return (c & 0x7F) == 0x7F; }), 0);
  EXPECT_GT(std::count(codes.begin(), codes.end(), uint8_t{0x7E}), 0);  // saturates at 448 (|v| > 1.12 σ·400)
  EXPECT_EQ(fill_cpu<uint16_t>(params(RandomFillType::kBf16, RandomDist::kNormal, 1.0f, 0.1f, n, 7)), normal);
  EXPECT_NE(fill_cpu<uint16_t>(params(RandomFillType::kBf16, RandomDist::kNormal, 1.0f, 0.1f, n, 70)), normal);
}

// CPU only: kU8 over [0, 256) gives every byte value about equally often, so both nibbles read as MXFP4 codes are
// zero-mean e2m1 values (the dummy experts' codes); the bytes of a uniform fp8 fill are not (their low nibble's sign
// is the fp8 exponent's low bit: mean ≈ −0.28, which made the dummy models' routing collapse).
TEST(RandomFill, UniformBytesAreZeroMeanMxfp4Codes) {
  const int64_t n = 1 << 20;
  const auto bytes = fill_cpu<uint8_t>(params(RandomFillType::kU8, RandomDist::kUniform, 0.0f, 256.0f, n, 21));
  std::vector<int64_t> histogram(256, 0);
  for (const uint8_t b : bytes) ++histogram[b];
  EXPECT_GT(*std::min_element(histogram.begin(), histogram.end()), n / 256 * 9 / 10);
  EXPECT_LT(*std::max_element(histogram.begin(), histogram.end()), n / 256 * 11 / 10);
  constexpr float kE2m1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  auto nibble_mean = [&](const std::vector<uint8_t>& codes, int shift) {
    double sum = 0;
    for (const uint8_t b : codes) {
      const int c = (b >> shift) & 15;
      sum += (c & 8 ? -1.0 : 1.0) * kE2m1[c & 7];
    }
    return sum / static_cast<double>(codes.size());
  };
  EXPECT_NEAR(nibble_mean(bytes, 0), 0.0, 0.02);
  EXPECT_NEAR(nibble_mean(bytes, 4), 0.0, 0.02);
  const auto fp8 = fill_cpu<uint8_t>(params(RandomFillType::kFp8E4M3, RandomDist::kUniform, -448.0f, 448.0f, n, 22));
  EXPECT_LT(nibble_mean(fp8, 0), -0.2) << "the old dummy codes' bias";
}

// CPU only: a fill started at element `first` (a vocab-parallel rank's embedding rows) has exactly the
// bits of those elements of the whole fill, for every type and distribution.
TEST(RandomFill, SliceHasTheWholeFillsBits) {
  const int64_t n = 10007, first = 2880 * 3 + 5, count = 1234;
  for (const auto& p : {params(RandomFillType::kBf16, RandomDist::kNormal, 0.0f, 1.0f, n, 11),
                        params(RandomFillType::kF32, RandomDist::kUniform, -2.0f, 4.0f, n, 12),
                        params(RandomFillType::kFp8E4M3, RandomDist::kNormal, 0.0f, 0.02f, n, 13, 5000.0f),
                        params(RandomFillType::kU8, RandomDist::kUniform, 0.0f, 256.0f, n, 14)}) {
    const size_t size = p.type == RandomFillType::kF32 ? 4 : p.type == RandomFillType::kBf16 ? 2 : 1;
    std::vector<uint8_t> all(static_cast<size_t>(n) * size), part(static_cast<size_t>(count) * size);
    RandomFillParams q = p;  // elements [0, n), then [first, first + count) of the same fill
    q.out = all.data();
    random_fill_cpu(q);
    q.out = part.data();
    q.count = count;
    q.first = first;
    random_fill_cpu(q);
    EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin() + first * static_cast<int64_t>(size)))
        << "type " << static_cast<int>(p.type);
  }
}

TEST(RandomFillKernel, MatchesReferenceBitExactly) {
  GOSSAMER_REQUIRE_GPU();
  const int64_t n = 1000003;
  for (const auto& p :
       {params(RandomFillType::kF32, RandomDist::kUniform, -2.0f, 4.0f, n, 1),
        params(RandomFillType::kF32, RandomDist::kNormal, 0.5f, 3.0f, n, 2),
        params(RandomFillType::kBf16, RandomDist::kNormal, 0.0f, 0.02f, n, 3),
        params(RandomFillType::kFp8E4M3, RandomDist::kNormal, 0.0f, 0.0186f, n, 4, 1.0f / (4 * 0.0186f / 448)),
        params(RandomFillType::kFp8E4M3, RandomDist::kUniform, -1e-6f, 1e-6f, n, 5, 1000.0f),
        params(RandomFillType::kU8, RandomDist::kUniform, 0.0f, 256.0f, n, 7),
        sliced(params(RandomFillType::kBf16, RandomDist::kNormal, 0.0f, 1.0f, n, 6), 2880 * 100544)}) {
    const size_t bytes = static_cast<size_t>(n) * (p.type == RandomFillType::kF32    ? 4
                                                   : p.type == RandomFillType::kBf16 ? 2
                                                                                     : 1);
    DeviceBuffer<uint8_t> device(bytes);
    device.poison();
    RandomFillParams q = p;
    q.out = device.get();
    launch_random_fill(q, nullptr);
    std::vector<uint8_t> want(bytes);
    q.out = want.data();
    random_fill_cpu(q);
    EXPECT_EQ(device.download(), want) << "type " << static_cast<int>(p.type) << " dist " << static_cast<int>(p.dist)
                                       << " first " << p.first;
  }
}

TEST(Fp8TiledKernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(31);
  for (const auto& [groups, n, k] : {std::tuple{1, 64, 64}, std::tuple{3, 200, 80}, std::tuple{2, 136, 272},
                                     std::tuple{4, 5760, 2880}, std::tuple{1, 8, 16}}) {
    std::vector<uint8_t> w(size_t(groups) * n * k);
    for (auto& b : w) b = static_cast<uint8_t>(rng());
    const auto want = tiled(w, groups, n, k);
    DeviceBuffer<uint8_t> src(w), dst(want.size());
    dst.poison();
    launch_fp8_to_tiled(src.get(), dst.get(), groups, n, k, nullptr);
    EXPECT_EQ(dst.download(), want) << groups << "x" << n << "x" << k;
    // And back: the row-major copy cuBLASLt reads.
    DeviceBuffer<uint8_t> back(w.size());
    back.poison();
    launch_fp8_from_tiled(dst.get(), back.get(), groups, n, k, nullptr);
    EXPECT_EQ(back.download(), w) << "from tiled " << groups << "x" << n << "x" << k;
  }
}

}  // namespace
}  // namespace gossamer::kernels
