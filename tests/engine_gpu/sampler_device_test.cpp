// One sampling semantics (issue #12 §2), on the device: for the same logits, settings and seed the host
// sampler (engine::sample_request_token) and the device sampler (the engine's device row settings through
// kernels::launch_sampling, as model::Model::forward_sample runs them) draw the same token on thousands of
// rows (tests/engine/sampler_rows.h; tests/engine/sampler_rule_test.cpp checks the host side on the same
// rows against the kernel's CPU reference). The kernel sums in fp32 and the host in fp64
// (kernels/sampling.h): a row may differ only where the draw lies within rounding of a boundary, which
// draws_within_rounding says; a few such rows are allowed.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/cuda/device_buffer.h"
#include "engine/sampler.h"
#include "engine/sampler_rows.h"  // tests/engine/
#include "gpu_test_util.h"
#include "kernels/sampling.h"
#include "kernels/sampling_boundaries.h"  // tests/kernels/
#include "model/host_sampling_batch.h"

namespace gossamer::engine {
namespace {

using cuda::DeviceArray;

// A device copy of `host` (none for an empty vector).
template <typename T>
DeviceArray<T> on_device(const std::vector<T>& host) {
  return host.empty() ? DeviceArray<T>() : DeviceArray<T>(host);
}

// kernels::SamplingParams over device copies of a host batch (one launch); `logprobs` and `tokens` come back.
struct DeviceSampling {
  explicit DeviceSampling(const model::HostSamplingBatch& batch, const std::vector<float>& logits)
      : logits(on_device(logits)),
        temperature(on_device(batch.temperature)),
        top_p(on_device(batch.top_p)),
        presence(on_device(batch.presence)),
        frequency(on_device(batch.frequency)),
        repetition(on_device(batch.repetition)),
        penalized(batch.penalized.size()),
        out_logprobs(batch.out_logprobs.size()),
        top_logprobs(batch.top_logprobs.size()),
        top_k(on_device(batch.top_k)),
        num_top(on_device(batch.num_top)),
        offsets(on_device(batch.penalty_offsets)),
        penalty_tokens(on_device(batch.penalty_tokens)),
        penalty_counts(on_device(batch.penalty_counts)),
        tokens(batch.tokens.size()),
        top_tokens(batch.top_tokens.size()),
        seeds(on_device(batch.seeds)) {
    tokens.poison();
    p.logits = this->logits.get();
    p.out_tokens = tokens.get();
    p.temperature = temperature.get();
    p.top_k = top_k.get();
    p.top_p = top_p.get();
    p.seeds = seeds.get();
    p.num_rows = batch.num_rows;
    p.vocab = batch.vocab;
    if (!batch.penalty_tokens.empty()) {  // all null: no penalties
      p.penalty_offsets = offsets.get();
      p.penalty_tokens = penalty_tokens.get();
      p.penalty_counts = penalty_counts.get();
      p.presence = presence.get();
      p.frequency = frequency.get();
      p.repetition = repetition.get();
      p.penalized = penalized.get();
    }
    p.out_logprobs = out_logprobs.get();
    p.num_top = num_top.get();
    p.out_top_tokens = top_tokens.get();
    p.out_top_logprobs = top_logprobs.get();
  }
  DeviceArray<float> logits, temperature, top_p, presence, frequency, repetition, penalized, out_logprobs, top_logprobs;
  DeviceArray<int32_t> top_k, num_top, offsets, penalty_tokens, penalty_counts, tokens, top_tokens;
  DeviceArray<uint64_t> seeds;
  kernels::SamplingParams p;
};

TEST(SamplerDevice, HostAndDeviceDrawTheSameTokenOnThousandsOfRows) {
  if (!test::have_gpu()) GTEST_SKIP() << "SKIPPED (needs a GPU): no CUDA device for the device sampler";
  constexpr double kRounding = 1e-4;  // relative error of the kernel's fp32 sums allowed at a boundary
  const std::vector<testing::SamplerRow> rows = testing::sampler_rows(4000);
  int seeded = 0, mismatches = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    const std::vector<float>& logits = rows[r].logits;
    Request host = rows[r].request;
    const TokenId host_token = sample_request_token(logits, host);
    Request device = rows[r].request;
    const model::RowSampling row = device_row_sampling(device);  // the production device row (penalties, logprobs)
    model::HostSamplingBatch batch({&row, 1}, static_cast<int32_t>(logits.size()));
    DeviceSampling on_device(batch, logits);
    kernels::launch_sampling(on_device.p, nullptr);
    const int32_t device_token = on_device.tokens.download()[0];
    EXPECT_EQ(device.rng_state, host.rng_state) << "row " << r;
    seeded += row.temperature > 0.0f;
    if (device_token != host_token) {
      // Where the draw lies: the row as the rule saw it (the reference's penalized copy) and the tokens that
      // sums off by kRounding could draw.
      kernels::sampling_cpu(batch.params(logits.data()));
      const std::vector<float>& x = batch.penalized.empty() ? logits : batch.penalized;
      const std::vector<int32_t> near =
          kernels::test::draws_within_rounding(x, row.temperature, row.top_k, row.top_p, row.seed, kRounding);
      ++mismatches;
      std::printf("[sampler device] row %zu (vocab %zu, temperature %.3f, top_k %d, top_p %.3f): host %d, device %d\n",
                  r, logits.size(), row.temperature, row.top_k, row.top_p, host_token, device_token);
      EXPECT_TRUE(std::find(near.begin(), near.end(), device_token) != near.end())
          << "row " << r << ": the device drew " << device_token << ", not within rounding of the host's "
          << host_token;
      continue;
    }
    if (row.num_top_logprobs < 0) continue;
    ASSERT_TRUE(!host.pending_logprobs.empty()) << r;
    EXPECT_NEAR(on_device.out_logprobs.download()[0], host.pending_logprobs.back().logprob, 2e-3) << "row " << r;
    const std::vector<int32_t> top_tokens = on_device.top_tokens.download();
    for (size_t j = 0; j < host.pending_logprobs.back().top.size(); ++j) {
      EXPECT_EQ(top_tokens[j], host.pending_logprobs.back().top[j].token) << "row " << r << " rank " << j;
    }
  }
  std::printf("[sampler device] %d of %zu rows (%d seeded) differ, each within rounding of a boundary\n", mismatches,
              rows.size(), seeded);
  EXPECT_GT(seeded, 3000);
  EXPECT_LE(mismatches, seeded / 50) << "more than 2% of the seeded draws differ";
}

}  // namespace
}  // namespace gossamer::engine
