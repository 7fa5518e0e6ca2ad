#include "kernels/gemv_bf16.h"
#include "kernels/moe.h"
#include "kernels/rmsnorm.h"
#include "kernels/rmsnorm_router.h"

namespace gossamer::kernels {

void rmsnorm_router_cpu(const RmsNormRouterParams& p) {
  RmsNormParams norm;
  norm.x = p.x;
  norm.residual = p.residual;
  norm.weight = p.norm_weight;
  norm.out = p.normed;
  norm.num_tokens = p.num_tokens;
  norm.hidden = p.hidden;
  norm.eps = p.eps;
  rmsnorm_cpu(norm);
  GemvBf16Params router;
  router.x = p.normed;
  router.ldx = p.hidden;
  router.w = p.router_w;
  router.bias = p.router_bias;
  router.out = p.logits;
  router.ldc = p.num_experts;
  router.M = p.num_tokens;
  router.N = p.num_experts;
  router.K = p.hidden;
  gemv_bf16_cpu(router);
  moe_route_cpu({p.logits, p.topk_ids, p.topk_weights, p.num_tokens, p.num_experts});
}

}  // namespace gossamer::kernels
