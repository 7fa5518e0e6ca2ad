// Model constants are read from the config, not assumed: the CPU backend's SwiGLU takes the checkpoint's
// swiglu_limit and swiglu_alpha (kernels::swiglu_clamped_cpu), so changing them changes the logits.
#include <gtest/gtest.h>

#include <cmath>

#include "model/dummy_checkpoint.h"
#include "model/sequence_runner.h"

namespace gossamer::model {
namespace {

std::vector<float> tiny_logits(float swiglu_limit, float swiglu_alpha) {
  GptOssConfig config = preset_config("tiny");
  config.swiglu_limit = swiglu_limit;
  config.swiglu_alpha = swiglu_alpha;
  auto model = make_dummy_cpu_model(config, 0);
  return prefill_logits(*model, {{1, 17, 424, 99, 7}});
}

double relative_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

TEST(ConfigConstants, CpuSwigluFollowsTheConfig) {
  const auto published = tiny_logits(7.0f, 1.702f);
  EXPECT_EQ(tiny_logits(7.0f, 1.702f), published);  // deterministic
  EXPECT_GT(relative_l2(tiny_logits(0.05f, 1.702f), published), 1e-4) << "swiglu_limit is ignored";
  EXPECT_GT(relative_l2(tiny_logits(7.0f, 0.5f), published), 1e-4) << "swiglu_alpha is ignored";
}

}  // namespace
}  // namespace gossamer::model
