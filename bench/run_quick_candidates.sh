#!/usr/bin/env bash
# A short form of `run_validation_h200.sh candidates` for a nearly spent device budget: the candidates' tests
# (150 s, in parallel), the end-to-end A/B and the fused router's timeline. Run after `... prep`.
set -uo pipefail
cd "$(dirname "$0")/.."
v=$PWD/carry/val
out=${OUT:-/tmp/gossamer-validation}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$v/lib:${LD_LIBRARY_PATH:-} NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader
i=0
for f in "GemvMxfp4Kernel.*" "MoeDecodeMxfp4Kernel.*:MoeRouterDecodeKernel.*" "AttentionDecodeKernel.*"; do
  i=$((i + 1))
  (timeout 150 build/tests/gossamer_kernels_tests --gtest_color=no --gtest_filter="$f" > "$out/quick_$i.log" 2>&1
  echo "quick $i exit $?" >> "$out/quick_exit.log") &
done
(timeout 150 build/tests/gossamer_model_gpu_tests --gtest_color=no --gtest_filter='CudaModelGpuTest.*:Weights/*' \
  > "$out/quick_model.log" 2>&1
echo "model_gpu exit $?" >> "$out/quick_exit.log") &
wait
cat "$out/quick_exit.log"
grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' "$out"/quick_*.log
for flags in "" "--decode-attention-prefetch-kv" "--moe-router-fused 1" "--moe-router-fused 2" ""; do
  echo "-- bench decode 20b $flags"
  timeout 60 build/gossamer bench decode --load-format dummy --preset 20b --device cuda --weights mxfp4+fp8 \
    --batch-sizes 1 8 --contexts 1024 8192 --steps 32 $flags | grep dummy
done
mkdir -p /tmp/timeline
CUDA_INJECTION64_PATH=$v/libgossamer_kernel_trace.so GOSSAMER_KERNEL_TRACE=/tmp/timeline/r.tsv \
  timeout 90 build/gossamer bench decode --load-format dummy --preset 20b --device cuda --weights mxfp4+fp8 \
  --batch-sizes 1 --contexts 1024 --steps 16 --moe-router-fused 1 2>&1 | grep -E "dummy|kernel_trace"
python3 bench/kernels/kernel_timeline.py /tmp/timeline/r.tsv --sequence 24 | head -45
