#!/usr/bin/env bash
# The session's one-call GPU validation (integrated main): carried, stripped binaries from the dev machine
# under carry/val (gossamer, gossamer_tokenizer_bench, gossamer_{kernels,model_gpu,engine_gpu,comm_gpu,server_gpu}_tests,
# gossamer_comm_gpu_worker, gossamer_tp_model_worker, gossamer_kernels_bench, libgossamer_kernel_trace.so, zstd,
# and lib/ with the chart library's shared objects — the device image has no libcairo — and CUPTI), and carry
# node_modules/tiktoken/encoders/o200k_base.json too (the tokenizer's ranks: the text benches and tests
# read them). `bash bench/pack_for_device.sh` packs them: carry/valfull (everything, ~25 MiB) for `tests` and
# `all`, carry/valz (lean, ~13 MiB: no test suites) for the benches, `headline` and a candidate's binaries
# (CANDIDATE_DIR); carry either (or both) with the tiktoken file. Tests and
# benches read their compiled-in paths under /work/main, so the checkout is linked there. Logs go to $OUT.
#   bash bench/run_validation_h200.sh [all|tests|verdict|followup|candidates|candidates-e2e|quick|headline|benches|
#                                      ab|profile|profile-moe|profile-mxfp4|source|timeline|mxfp4-steps|
#                                      variants|decode-variants|prep]
# tests: the kernel suite (seven shards) beside the model/engine/comm/server suites, all at once (correctness
# only, so they may share the GPU); verdict: the new defaults' tests, then candidates-e2e to a deadline (one call when
# the device is scarce); followup: the decode norm prologue's tests and model suite, then a short decode and prefill
# A/B; candidates: a candidate branch's tests and end-to-end A/B (CANDIDATE_DIR's binaries beside carry/val's);
# candidates-e2e: the recent changes' end-to-end A/B; variants: several branches' builds (carry/variants/<branch
# name>/) tested and timed beside main's (run_variants); mxfp4-steps: the suites but attention's, then the MXFP4
# decode-sized steps and prefill (run_mxfp4_steps); benches: prefill with its phase breakdown, the MoE and
# prefill GEMMs
# against cuBLASLt (both TMA tiles), attention prefill (every wgmma variant), the decode GEMV shapes, decode
# (mxfp4, and at long contexts) and the step breakdown; ab: the end-to-end A/B of the product's prefill
# choices, and 120b prefill; headline: the figures the open issues' targets name (prefill 20b / 120b, decode
# batch 1 and 8) and the batch-1 decode timeline; timeline: the real kernel timeline of graph decode steps
# (CUPTI); narrow-ab: the W4A16 narrow tiles' threshold A/B in decode (run_narrow_ab); decode-variants: the
# carry/variants builds' kernel tests and `bench decode` beside main's (run_decode_variants); source: Nsight Compute's
# per-instruction stall samples of the batch-1 decode's attention, MXFP4 and
# FP8 GEMVs, and of the prefill's MoE GEMM and attention; profile-moe: ncu's metrics and stall samples of the MoE's
# gate_up and down GEMMs in a 20b 8k prefill; profile-mxfp4: the same of 20b --weights mxfp4 prefills (W4A16 at 1k,
# W4A8 at 8k);
# profile: Nsight Compute on the prefill kernels (attention warpgroup variants, the MoE GEMMs), the batch-1 decode GEMVs'
# stall reasons, and every kernel's duration in a batch-1 decode step (profile, timeline and headline are not part
# of all). Each mode fits one 600 s call, alone on the GPU (the tokenizer against tiktoken:
# bench/text/run_tokenizer_vs_tiktoken.sh).
set -uo pipefail
mode=${1:-all}
cd "$(dirname "$0")/.."
root=$PWD
v=$root/carry/val
# The binaries travel packed to fit the carry limit (bench/pack_for_device.sh): carry/valfull (every binary) or
# carry/valz (the lean pack: gossamer, the kernels bench, the workers, the tracer, lib/; no test suites, so that a
# candidate's binaries fit beside it: CANDIDATE_DIR below), each with a zstd beside it; whichever were carried.
# A warm machine keeps carry/val (and build/tests) from its last call: unpack again whenever packs are carried that
# differ from the ones it was unpacked from (their checksums in carry/val/.packs); a call carrying none keeps it.
packs=$(for pack in carry/valz carry/valfull; do [ -f $pack/val.tar.zst ] && cksum $pack/val.tar.zst; done)
if [ -n "$packs" ] && [ "$(cat "$v/.packs" 2>/dev/null)" != "$packs" ]; then
  rm -rf "$v" build/tests
  for pack in carry/valz carry/valfull; do
    [ -f $pack/val.tar.zst ] && mkdir -p "$v" && $pack/zstd -q -dc $pack/val.tar.zst | tar xf - -C "$v"
  done
  [ -d "$v" ] && echo "$packs" > "$v/.packs"
fi
out=${OUT:-/tmp/gossamer-validation}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}:$v/lib NCCL_NVLS_ENABLE=0
[ -e /work/main ] || { mkdir -p /work; ln -s "$root" /work/main; }
mkdir -p build/tests build/bench/kernels build/models/tiny
# (The lean pack lacks the test suites and the tokenizer bench: those copies are skipped.)
for f in gossamer gossamer_tokenizer_bench; do [ -f $v/$f ] && cp $v/$f build/; done
for f in gossamer_kernels_tests gossamer_model_gpu_tests gossamer_engine_gpu_tests gossamer_comm_gpu_tests \
  gossamer_server_gpu_tests gossamer_comm_gpu_worker gossamer_tp_model_worker; do
  [ -f $v/$f ] && cp $v/$f build/tests/
done
[ -f $v/gossamer_kernels_bench ] && cp $v/gossamer_kernels_bench build/bench/kernels/
cp models/tiny/config.json build/models/tiny/
z=$(command -v zstd || ls $root/carry/val*/zstd | head -1)
$z -q -d -f models/tiny/model.safetensors.zst -o build/models/tiny/model.safetensors
# CANDIDATE_DIR (e.g. carry/cand): a branch's stripped, zstd binaries (<name>.zst) replace carry/val's of the same
# name for this run (a branch's build profiled or timed with the modes above).
for f in ${CANDIDATE_DIR:+$CANDIDATE_DIR/*.zst}; do
  name=$(basename "$f" .zst)
  case $name in
    gossamer | gossamer_tokenizer_bench) dst=build/$name ;;
    gossamer_kernels_bench) dst=build/bench/kernels/$name ;;
    *) dst=build/tests/$name ;;
  esac
  $z -q -d -f "$f" -o "$dst" && chmod +x "$dst" && echo "candidate binary: $dst"
done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
sec() { echo; echo "== $1 ($(date +%T))"; }
run_tests() {
  # The kernel suite in seven shards (its CPU references make it long; attention's took ~300 s on an H100 beside
  # the rest, so the wgmma prefill kernel's tests are two shards of their own), all at once beside the
  # model/engine/comm suites (correctness only: they may share the GPU and the 16 cores); each its own time
  # limit. server_gpu serves through the gossamer binary (build/gossamer), its replicas and ranks colocated on
  # GPU 0.
  local cand='AttentionPrefillWgmmaKernel.FixedMax*'
  shards=("-MoeKernel.*:MoeDecode*:Sampling*:TokenMask*:GemvMxfp4*:Mxfp4*:MoeStream*:Attention*"
    "MoeDecode*:Sampling*:TokenMask*:GemvMxfp4*:Mxfp4*" "MoeKernel.*" "MoeStream*"
    "Attention*:-AttentionPrefillWgmmaKernel.*" "AttentionPrefillWgmmaKernel.*:-$cand" "$cand")
  for i in 0 1 2 3 4 5 6; do
    (timeout $([ $i -ge 4 ] && echo 420 || echo 300) stdbuf -oL build/tests/gossamer_kernels_tests --gtest_color=no --gtest_filter="${shards[$i]}" \
      > "$out/kernels_$i.log" 2>&1
    echo "kernels shard $i exit $?" >> "$out/kernels_exit.log") &
  done
  (for suite in model_gpu engine_gpu comm_gpu server_gpu; do
    timeout 300 stdbuf -oL build/tests/gossamer_${suite}_tests --gtest_color=no > "$out/$suite.log" 2>&1
    echo "$suite exit $?" >> "$out/suites_exit.log"
  done) &
  wait
  for f in "$out"/kernels_exit.log "$out"/suites_exit.log; do cat "$f"; done
  for f in "$out"/kernels_?.log "$out"/model_gpu.log "$out"/engine_gpu.log "$out"/comm_gpu.log "$out"/server_gpu.log; do
    sec "$(basename "$f")"
    grep -E '^\[  (PASSED|FAILED) |^\[  FAILED  \]|tests ran' "$f" | head -20
  done
  print_failures "$out"/kernels_?.log "$out"/model_gpu.log "$out"/engine_gpu.log "$out"/comm_gpu.log \
    "$out"/server_gpu.log
}

# Each failing test log's failure messages on stdout (a call returns only a few of $out's files).
print_failures() {  # logs…
  local f
  for f in "$@"; do
    grep -q 'Failure\|FAILED  \]' "$f" 2>/dev/null || continue
    sec "failures in $(basename "$f")"
    grep -n -B2 -A12 -E 'Failure$|: Failure|exception with description' "$f" | head -60
  done
}

# The kernel suite once per filter beside the model suite's filter, all at once (correctness only: they may share the
# GPU), each under `limit` seconds; logs $out/<tag>_kernels_<i>.log and $out/<tag>_model.log; prints each exit, the
# pass / fail lines and the failures' messages.
parallel_tests() {  # tag, limit, model filter, kernel filters…
  local tag=$1 limit=$2 model=$3 i=0 f
  shift 3
  rm -f "$out/${tag}_exit.log"
  for f in "$@"; do
    (timeout $limit build/tests/gossamer_kernels_tests --gtest_color=no --gtest_filter="$f" \
      > "$out/${tag}_kernels_$i.log" 2>&1
      echo "kernels '$f' exit $?" >> "$out/${tag}_exit.log") &
    i=$((i + 1))
  done
  (timeout $limit build/tests/gossamer_model_gpu_tests --gtest_color=no --gtest_filter="$model" \
    > "$out/${tag}_model.log" 2>&1
    echo "model_gpu '$model' exit $?" >> "$out/${tag}_exit.log") &
  wait
  cat "$out/${tag}_exit.log"
  grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' "$out/${tag}"_kernels_*.log "$out/${tag}_model.log"
  print_failures "$out/${tag}"_kernels_*.log "$out/${tag}_model.log"
}

run_benches() {
  sec "bench prefill 20b, the defaults, with the phase breakdown (#13)"
  timeout 150 build/gossamer bench prefill --load-format dummy --preset 20b --device cuda --input-lens 8192 32768 \
    --repeats 3 --phases
  sec "MoE and prefill GEMMs vs cuBLASLt, attention prefill (#13)"
  timeout 120 build/bench/kernels/gossamer_kernels_bench moe
  timeout 120 build/bench/kernels/gossamer_kernels_bench gemm-large
  timeout 100 build/bench/kernels/gossamer_kernels_bench attention | grep -v decode
  sec "decode GEMV launch shapes (#15)"
  timeout 90 build/bench/kernels/gossamer_kernels_bench gemv-tune
  timeout 60 build/bench/kernels/gossamer_kernels_bench gemv-scaling  # time against expert count, M = 1
  timeout 90 build/bench/kernels/gossamer_kernels_bench mxfp4  # MXFP4 vs FP8 GEMVs, the MXFP4 MoE decode (#15)
  sec "bench decode 20b mxfp4 (#15)"
  timeout 90 build/gossamer bench decode --load-format dummy --preset 20b --device cuda --weights mxfp4 \
    --batch-sizes 1 8 64 --contexts 1024 --steps 32
  sec "bench decode 20b batch 1-2 at long contexts"
  timeout 90 build/gossamer bench decode --load-format dummy --preset 20b --device cuda --batch-sizes 1 2 \
    --contexts 8192 32768 --steps 32
  sec "bench step 20b"
  timeout 150 build/gossamer bench step --load-format dummy --preset 20b --device cuda --context 1024 --steps 10 \
    --batch-sizes 1 16 64 256 512 1024
}

run_ab() {
  # --weights fp8 throughout: the MoE tile is the FP8 experts' (as measured on 2026-12-05, when fp8 was the default).
  sec "end-to-end A/B against the product's choices (PERF.md 2026-12-05): 2-warpgroup attention, MoE 128x192 tile"
  for flags in "" "--prefill-attention-warpgroups 2" "--moe-gemm-tile 128x192tma2"; do
    echo "-- bench prefill 20b --weights fp8 $flags"
    timeout 60 build/gossamer bench prefill --load-format dummy --preset 20b --device cuda --weights fp8 \
      --input-lens 8192 32768 --repeats 3 $flags | grep dummy
  done
  sec "bench prefill 120b"
  timeout 120 build/gossamer bench prefill --load-format dummy --preset 120b --device cuda --input-lens 8192 32768 \
    --repeats 3 | grep dummy
}

run_headline() {
  # The figures the open issues' targets name (#13 prefill, #15 batch-1 decode), the product's defaults only.
  sec "bench prefill 20b 8,192 / 32,768 / 131,072 and 120b 8,192 / 32,768 tokens (#13)"
  timeout 120 build/gossamer bench prefill --load-format dummy --preset 20b --device cuda \
    --input-lens 8192 32768 131072 --repeats 3 | grep dummy
  timeout 150 build/gossamer bench prefill --load-format dummy --preset 120b --device cuda --input-lens 8192 32768 \
    --repeats 3 | grep dummy
  sec "bench prefill --weights mxfp4: 20b 2,048 / 8,192 / 32,768 and 120b 2,048 / 8,192 tokens (#15: within 10% of FP8)"
  timeout 100 build/gossamer bench prefill --load-format dummy --preset 20b --device cuda --weights mxfp4 \
    --input-lens 2048 8192 32768 --repeats 3 | grep dummy
  timeout 100 build/gossamer bench prefill --load-format dummy --preset 20b --device cuda --weights fp8 \
    --input-lens 2048 --repeats 3 | grep dummy
  timeout 100 build/gossamer bench prefill --load-format dummy --preset 120b --device cuda --weights mxfp4 \
    --input-lens 2048 8192 --repeats 3 | grep dummy
  sec "bench decode 20b and 120b mxfp4, batch 1 and 8, ctx 1,024 and 8,192 (#15)"
  timeout 90 build/gossamer bench decode --load-format dummy --preset 20b --device cuda --weights mxfp4 \
    --batch-sizes 1 8 --contexts 1024 8192 --steps 32 | grep dummy
  timeout 150 build/gossamer bench decode --load-format dummy --preset 120b --device cuda --weights mxfp4 \
    --batch-sizes 1 8 --contexts 1024 8192 --steps 32 | grep dummy
  sec "speculative decoding's verification step (1 + 3 tokens a sequence) against the plain step, 20b, ctx 1,024"
  timeout 90 build/gossamer bench decode --load-format dummy --preset 20b --device cuda --batch-sizes 1 4 16 \
    --contexts 1024 --steps 16 --speculative-tokens 3 | grep -E "dummy|speculative"
  sec "bench decode batch sweep, 20b and 120b, ctx 1,024, with the dummy routing's spread (#15's sweep)"
  timeout 90 build/gossamer bench decode --load-format dummy --preset 20b --device cuda --batch-sizes 1 8 16 32 64 128 \
    256 512 --contexts 1024 --steps 16 --routing-stats | grep -E "dummy|routing"
  timeout 150 build/gossamer bench decode --load-format dummy --preset 120b --device cuda --batch-sizes 1 8 16 32 64 \
    128 256 --contexts 1024 --steps 8 --routing-stats | grep -E "dummy|routing"
  sec "timeline of the batch-1 decode step (20b mxfp4, ctx 1,024)"
  local raw=/tmp/timeline
  mkdir -p $raw
  CUDA_INJECTION64_PATH=$v/libgossamer_kernel_trace.so GOSSAMER_KERNEL_TRACE=$raw/headline.tsv \
    timeout 90 build/gossamer bench decode --load-format dummy --preset 20b --device cuda --weights mxfp4 \
    --batch-sizes 1 --contexts 1024 --steps 16 2>&1 | grep -E "dummy|kernel_trace"
  python3 bench/kernels/kernel_timeline.py $raw/headline.tsv --sequence 30 | head -70
  sec "every kernel of one 20b prefill of 8,192 tokens (fp8; the launches of the last complete step)"
  CUDA_INJECTION64_PATH=$v/libgossamer_kernel_trace.so GOSSAMER_KERNEL_TRACE=$raw/prefill.tsv \
    timeout 90 build/gossamer bench prefill --load-format dummy --preset 20b --device cuda --weights fp8 \
    --input-lens 8192 --repeats 1 2>&1 | grep -E "dummy|kernel_trace"
  python3 bench/kernels/kernel_timeline.py $raw/prefill.tsv --eager | head -30
}

# Nsight Compute metrics (clocks as they run): stall reasons per issued instruction, pipe and issue activity;
# sets ncu_run and summarize. Only metrics this ncu knows (one unknown name fails the whole run).
ncu_setup() {
  local st="" r m
  for r in long_scoreboard short_scoreboard wait barrier math_pipe_throttle mio_throttle not_selected selected \
    dispatch_stall lg_throttle membar no_instruction branch_resolving; do
    st=$st,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio
  done
  m=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
  m=$m,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active
  m=$m,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active
  m=$m,dram__bytes.sum.per_second,lts__t_bytes.sum.per_second,sm__warps_active.avg.pct_of_peak_sustained_active
  m=$m,lts__t_sectors.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed
  m=$m,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed
  m=$m,launch__registers_per_thread,launch__grid_size,smsp__inst_executed.sum$st
  # Raw reports stay on the machine (/tmp/ncu); the summaries go to stdout and $out/profile_summary.txt.
  local raw=/tmp/ncu
  mkdir -p $raw
  # Only metrics this ncu knows (one unknown name fails the whole run); launch__ and gpu__time are always there.
  ncu --query-metrics --chip gh100 > $raw/metrics.txt 2>&1
  if grep -q "^sm__inst_executed " $raw/metrics.txt; then  # else the list's format is unknown: keep every name
    m=$(echo "$m" | tr ',' '\n' | while read -r x; do
      case $x in launch__* | gpu__time*) echo "$x" ;; *) grep -q "^${x%%.*} " $raw/metrics.txt && echo "$x" ;; esac
    done | paste -sd, -)
  fi
  echo "ncu metrics: $m" | tr ',' ' '
  ncu_run="timeout 150 ncu --clock-control none --metrics $m"
  summarize() { grep -E "_kernel|gemm_fp8_tma|pct|ratio|per_second|duration|register|grid_size|inst_executed" "$1" |
    grep -v "==PROF==" | sed 's/  */ /g' | head -60; }
}

# ncu on kernel $1 (regex) in a batch-1 decode (20b mxfp4, graph nodes), once per further argument (flags).
profile_decode_gemvs() {
  local k=$1 flags raw=/tmp/ncu
  shift
  mkdir -p $raw
  [ -n "${ncu_run:-}" ] || ncu_setup
  for flags in "$@"; do
    $ncu_run -k regex:$k -c 2 build/gossamer bench decode --load-format dummy --preset 20b --device cuda \
      --weights mxfp4 --batch-sizes 1 --contexts 1024 --steps 2 $flags > "$raw/$k$flags.txt" 2>&1
    echo "-- $k $flags"; summarize "$raw/$k$flags.txt"
  done
}

# ncu's source page (SASS) of one launch of kernel $1 (regex; $2 launches of it skipped) in a batch-1 decode step
# (20b mxfp4, ctx 1,024), or in the gossamer command given after them: warp-stall samples every 32 cycles; the
# instructions with the most samples, with their stall reasons, and the samples per reason.
profile_source() {
  local k=$1 skip=$2 raw=/tmp/ncu name="src_$1$2${PROFILE_TAG:-}"  # PROFILE_TAG: a suffix for the files
  shift 2
  [ $# -gt 0 ] || set -- bench decode --load-format dummy --preset 20b --device cuda --weights mxfp4 \
    --batch-sizes 1 --contexts 1024 --steps 2
  mkdir -p $raw
  timeout 150 ncu --clock-control none --section SourceCounters --section WarpStateStats --warp-sampling-interval 0 \
    -k regex:$k -s "$skip" -c 1 -f -o "$raw/$name" "${PROFILE_GOSSAMER:-build/gossamer}" "$@" > "$raw/$name.log" 2>&1
  ncu --import "$raw/$name.ncu-rep" --page source --csv --print-source sass > "$raw/$name.csv" 2>&1
  echo "-- $k (launch $skip): $(grep -c . "$raw/$name.csv") source lines"
  cp "$raw/$name.csv" "$out/" 2>/dev/null
  python3 bench/kernels/ncu_source_top.py "$raw/$name.csv" 40 || tail -5 "$raw/$name.log"
}

run_source() {
  sec "ncu source (SASS) stall samples, batch-1 decode: attention (sliding, full), MXFP4 gate_up / down, FP8 QKV / O"
  profile_source attention_decode_kernel 0
  profile_source attention_decode_kernel 1
  profile_source gemv_mxfp4_kernel 0
  profile_source gemv_mxfp4_kernel 1
  profile_source gemv_fp8_kernel 0
  profile_source gemv_fp8_kernel 1
  # The MoE's gate_up / down GEMM of the 8k step's layer 0 (qkv and o go to cuBLASLt), then the first two full
  # layers' attention (the sliding layers run mma.sync): bench prefill's 2,048-token warm-up runs first
  # (kPrefillWarmupTmaGemms and 12 wgmma attentions).
  sec "ncu source (SASS) stall samples: 20b fp8 prefill of 8,192 tokens, MoE gate_up and down, full-layer attention"
  local prefill=(bench prefill --load-format dummy --preset 20b --device cuda --weights fp8 --input-lens 8192
    --repeats 1)
  profile_source gemm_fp8_tma $kPrefillWarmupTmaGemms "${prefill[@]}"
  profile_source gemm_fp8_tma $((kPrefillWarmupTmaGemms + 1)) "${prefill[@]}"
  profile_source attention_prefill_wgmma 12 "${prefill[@]}"
  profile_source attention_prefill_wgmma 13 "${prefill[@]}"
}

# TMA GEMM launches of bench prefill's warm-up (2,048 tokens of 20b --weights fp8: a gate_up and a down per layer)
# before the measured step's; ncu skips them.
kPrefillWarmupTmaGemms=48

# ncu on the MoE gate_up and down TMA GEMMs of a 20b --weights fp8 8k prefill's layer 0 (after the warm-up's): the
# metrics of ncu_setup, then (with "source") their warp-stall samples by instruction.
profile_moe_gemms() {
  local raw=/tmp/ncu
  local prefill=(bench prefill --load-format dummy --preset 20b --device cuda --weights fp8 --input-lens 8192
    --repeats 1)
  [ -n "${ncu_run:-}" ] || ncu_setup
  sec "ncu: the FP8 MoE's TMA GEMMs at 8k tokens (gate_up, down) (#13)"
  $ncu_run -k regex:gemm_fp8_tma -s $kPrefillWarmupTmaGemms -c 2 build/gossamer "${prefill[@]}" \
    > "$raw/moe_gemm.txt" 2>&1
  summarize "$raw/moe_gemm.txt"
  [ "${1:-}" = source ] || return 0
  sec "ncu source (SASS) stall samples: the FP8 MoE gate_up and down of a 20b 8k prefill's layer 0"
  profile_source gemm_fp8_tma $kPrefillWarmupTmaGemms "${prefill[@]}"
  profile_source gemm_fp8_tma $((kPrefillWarmupTmaGemms + 1)) "${prefill[@]}"
}

profile_mxfp4_gemms() {
  # The MoE's GEMMs on MXFP4 experts (--weights mxfp4, 20b; the warm-up's layer 0 gate_up and down): W4A16's narrow
  # 32-token tiles at 64 and 256 tokens (8 and 32 rows per expert, the decode-at-load sizes), its wide tiles at 1,024 (128 rows,
  # CudaModel::kMxfp4W4A8MinRowsPerExpert) and W4A8 at 8,192: ncu's metrics, then the
  # per-instruction stall samples. PROFILE_GOSSAMER: another build's gossamer (a variant's; the mode start copies
  # carry/val's over build/gossamer).
  local raw=/tmp/ncu kernel tokens prefill
  [ -n "${ncu_run:-}" ] || ncu_setup
  for kernel in gemm_w4a16:64 gemm_w4a16:256 gemm_w4a16:1024 gemm_w4a8:8192; do
    tokens=${kernel#*:}
    kernel=${kernel%:*}
    prefill=(bench prefill --load-format dummy --preset 20b --device cuda --weights mxfp4 --input-lens $tokens
      --repeats 1)
    sec "ncu: the MoE's GEMMs on MXFP4 experts, $kernel, $tokens tokens (gate_up, down) (#15)"
    $ncu_run -k regex:$kernel -c 2 "${PROFILE_GOSSAMER:-build/gossamer}" "${prefill[@]}" > "$raw/moe_${kernel}_$tokens.txt" 2>&1
    summarize "$raw/moe_${kernel}_$tokens.txt"
    PROFILE_TAG=_$tokens profile_source $kernel 0 "${prefill[@]}"
    PROFILE_TAG=_$tokens profile_source $kernel 1 "${prefill[@]}"
  done
}

run_profile() {
  ncu_setup
  local raw=/tmp/ncu
  sec "ncu: attention 1x8192 causal, two and three (lazy softmax) warpgroups (#13)"
  for v in ILb0ELi2ELb0E ILb0ELi3ELb0E; do  # (kv fp8, consumer warpgroups, fixed max), as the bench launches them
    $ncu_run --kernel-name-base mangled -k regex:attention_prefill_wgmma_kernel$v -c 1 \
      build/bench/kernels/gossamer_kernels_bench profile > "$raw/attention_$v.txt" 2>&1
    echo "-- $v"; summarize "$raw/attention_$v.txt"
  done
  profile_moe_gemms
  sec "ncu: the decode GEMVs of a batch-1 step (20b mxfp4, graph nodes): MXFP4 gate_up + down, FP8 qkv + o (#15)"
  profile_decode_gemvs gemv_mxfp4_kernel ""
  profile_decode_gemvs gemv_fp8_kernel ""
  sec "ncu: every kernel's duration in a batch-1 decode step (20b mxfp4, ctx 128)"
  timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
    build/gossamer bench decode --load-format dummy --preset 20b --device cuda --weights mxfp4 --batch-sizes 1 \
    --contexts 128 --steps 1 > "$raw/decode_step.csv" 2> "$raw/decode_step.err"
  python3 - "$raw/decode_step.csv" <<'PY'
import csv, collections, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows:
    sys.exit("no ncu rows")
head, rows = rows[0], rows[1:]
name, value = head.index("Kernel Name"), head.index("Metric Value")
runs = [(r[name].split("(")[0].split("<")[0], float(r[value].replace(",", ""))) for r in rows]
# One step: from after the previous launch of the last kernel's name to the end.
prev = max((i for i in range(len(runs) - 1) if runs[i][0] == runs[-1][0]), default=len(runs) - 301)
step = runs[prev + 1:]
total = collections.defaultdict(lambda: [0, 0.0])
for k, ns in step:
    total[k][0] += 1
    total[k][1] += ns
print(f"one step: {len(step)} launches, {sum(ns for _, ns in step) / 1e3:.1f} us of kernels (each run alone)")
for k, (n, ns) in sorted(total.items(), key=lambda kv: -kv[1][1]):
    print(f"{ns / 1e3:9.1f} us {n:5d} x {ns / n / 1e3:7.2f} us  {k}")
PY
}

run_candidates() {
  # A candidate branch's binaries (CANDIDATE_DIR, e.g. carry/cand) beside the base (carry/base/gossamer.zst if
  # carried, else carry/val's build), steered by (defaults: the FP8 GEMM's tests, the model suite, the binaries
  # alone at 8k / 32k / 131k):
  #   CANDIDATE_SMOKE        kernel tests run first and alone (the call stops there if they fail or hang)
  #   CANDIDATE_TESTS        kernel tests, beside CANDIDATE_MODEL_TESTS (model_gpu), all at once
  #   CANDIDATE_BENCH        kernels-bench sections, the base's bench then the candidate's (empty: none)
  #   CANDIDATE_FLAG         the candidate's flag in the prefill A/B (empty: the binaries only)
  #   CANDIDATE_LENS         the prefill A/B's input lengths (20b)
  local smoke=${CANDIDATE_SMOKE-GemmFp8Kernel.MatchesReference}
  local tests=${CANDIDATE_TESTS-GemmFp8Kernel.*}
  local model=${CANDIDATE_MODEL_TESTS-CudaModelGpuTest.*}
  local bench=${CANDIDATE_BENCH-} flag=${CANDIDATE_FLAG-} lens=${CANDIDATE_LENS-8192 32768 131072}
  sec "the candidate's kernel tests first (stop here if they fail or hang): $smoke"
  timeout 120 build/tests/gossamer_kernels_tests --gtest_color=no --gtest_filter="$smoke" \
    > "$out/candidates_smoke.log" 2>&1
  local status=$?
  tail -4 "$out/candidates_smoke.log"
  print_failures "$out/candidates_smoke.log"
  [ $status -eq 0 ] || { echo "smoke test exit $status: stopping"; return; }
  sec "the candidate's tests: kernels $tests, model_gpu $model"
  parallel_tests candidates 240 "$model" "$tests"
  local section
  for section in $bench; do
    sec "kernels bench $section: base, then the candidate"
    timeout 150 $v/gossamer_kernels_bench "$section" 2>&1 | grep -E '^[|]'
    timeout 150 build/bench/kernels/gossamer_kernels_bench "$section" 2>&1 | grep -E '^[|]'
  done
  local base run
  base_binary
  for run in "$base|" "build/gossamer|" ${flag:+"build/gossamer|$flag"}; do
    ab_prefill "$run" "$lens"
  done
  python3 bench/summarize_ab.py "$out/candidates_summary.txt"
}

# The A/B runs' pieces: base_binary sets $base (the carried base binary, else empty: those runs are skipped);
# ab_prefill and ab_decode bench one "binary|flags" run (titles that bench/summarize_ab.py reads).
base_binary() {
  base=""  # none carried: the runs named "$base|" are skipped (they would repeat the defaults')
  if [ -f carry/base/gossamer.zst ]; then
    $z -q -d -f carry/base/gossamer.zst -o build/gossamer_base && chmod +x build/gossamer_base && base=build/gossamer_base
  elif [ -n "${CANDIDATE_DIR:-}" ] && [ -f "$CANDIDATE_DIR/gossamer.zst" ] && [ -f "$v/gossamer" ]; then
    base=$v/gossamer  # a candidate's binary replaced build/gossamer: carry/val's build is its base
  fi
}
ab_prefill() {  # run, input lengths[, preset (20b)]
  [ -n "${1%%|*}" ] || return 0
  sec "${1%%|*} bench prefill ${3:-20b} $2 ${1#*|}"
  timeout 100 ${1%%|*} bench prefill --load-format dummy --preset ${3:-20b} --device cuda --input-lens $2 --repeats 2 \
    ${1#*|} | grep dummy
}
ab_decode() {  # run
  [ -n "${1%%|*}" ] || return 0
  sec "${1%%|*} bench decode 20b mxfp4, batch 1 and 8, ctx 1,024 / 8,192 ${1#*|}"
  timeout 90 ${1%%|*} bench decode --load-format dummy --preset 20b --device cuda --weights mxfp4 \
    --batch-sizes 1 8 --contexts 1024 8192 --steps 32 ${1#*|} | grep dummy
}

run_candidates_e2e() {
  # The recent changes' end-to-end A/B: bench prefill and bench decode, two rounds, the base binary first; the
  # defaults against their A/B flags and the candidates. No run starts past E2E_DEADLINE seconds of this script (the
  # verdict mode's share of one call). Each round: prefill, then decode.
  local base run round deadline=${E2E_DEADLINE:-100000}
  base_binary
  for round in 1 2; do
    for run in "$base|" "build/gossamer|" "build/gossamer|--no-moe-quantize-tokens-once" \
      "build/gossamer|--no-prefill-attention-fixed-max"; do
      [ $SECONDS -lt $deadline ] || { echo "(deadline: prefill ${run} round $round not run)"; continue; }
      # 131,072 tokens only where attention may change (the MoE flag scales with the tokens).
      case "${run#*|}" in
        --no-moe-quantize-tokens-once) ab_prefill "$run" "8192 32768" ;;
        *) ab_prefill "$run" "8192 32768 131072" ;;
      esac
    done
    for run in "$base|" "build/gossamer|"; do
      [ $SECONDS -lt $deadline ] || { echo "(deadline: decode ${run} round $round not run)"; continue; }
      ab_decode "$run"
    done
  done
}

run_verdict() {
  # One call for a scarce device: the new defaults' tests (shards at once, 200 s), then the end-to-end A/B until
  # 560 s (each round prefill then decode; whatever the deadline leaves out is named in the log).
  sec "the new defaults' GPU tests (kernel shards and the model's, at once)"
  parallel_tests verdict 200 'CudaModelGpuTest.*:Weights/*' 'QuantizeFp8Kernel.*:RmsNormKernel.*:GemmFp8Kernel.*' \
    'MoePlanKernel.*:MoeStream*:GemvBf16*:GemmBf16*:GemvFp8*' 'MoeKernel.*' 'MoeDecode*' \
    'AttentionPrefillWgmmaKernel.MatchesReference:AttentionPrefillWgmmaKernel.ThreeWarpgroups*:AttentionDecode*'
  E2E_DEADLINE=560 run_candidates_e2e
  python3 bench/summarize_ab.py "$out/verdict_summary.txt"
}

run_followup() {
  # A short call: the decode kernels' tests and the model suite (goldens, every fusion toggled; shards at once), then
  # decode A/B (base, defaults, the candidates of FOLLOWUP_DECODE_FLAGS: one run per entry, entries separated by ";")
  # and prefill A/B (base, defaults, FOLLOWUP_PREFILL_FLAGS the same way; by default the wgmma attention kernel on
  # the sliding layers too, which the mma.sync kernel beat there on 2026-12-01), the defaults' batch-1 timeline, then
  # a second round of the A/B. No run starts past FOLLOWUP_DEADLINE seconds (default 430); the tests stop at
  # FOLLOWUP_TEST_LIMIT seconds (default 150).
  local base run round deadline=${FOLLOWUP_DEADLINE:-430} test_limit=${FOLLOWUP_TEST_LIMIT:-150}
  sec "the decode kernels' tests and the model suite (shards at once, ${test_limit} s)"
  parallel_tests followup $test_limit 'CudaModelGpuTest.*:Weights/*:CudaPhase*' 'GemvFp8Kernel.*:GemvBf16*:RmsNormKernel.*' \
    'AttentionDecode*'
  local runs prefill_runs flags
  base_binary
  runs=("$base|" "build/gossamer|")
  IFS=';' read -ra flags <<< "${FOLLOWUP_DECODE_FLAGS:-}"
  for run in "${flags[@]}"; do runs+=("build/gossamer|$run"); done
  prefill_runs=("$base|" "build/gossamer|")
  IFS=';' read -ra flags <<< "${FOLLOWUP_PREFILL_FLAGS---prefill-attention wgmma}"
  for run in "${flags[@]}"; do prefill_runs+=("build/gossamer|$run"); done
  for round in 1 2; do
    for run in "${runs[@]}"; do
      [ $SECONDS -lt $deadline ] || { echo "(deadline: decode ${run} round $round not run)"; continue; }
      ab_decode "$run"
    done
    for run in "${prefill_runs[@]}"; do
      [ $SECONDS -lt $deadline ] || { echo "(deadline: prefill ${run} round $round not run)"; continue; }
      ab_prefill "$run" "8192 32768 131072"
    done
    [ $round -eq 1 ] || continue
    # Where the defaults' batch-1 step goes (the timeline of run_timeline).
    mkdir -p /tmp/timeline
    sec "timeline: bench decode 20b mxfp4, batch 1, ctx 1,024"
    CUDA_INJECTION64_PATH=$v/libgossamer_kernel_trace.so GOSSAMER_KERNEL_TRACE=/tmp/timeline/followup.tsv \
      timeout 60 build/gossamer bench decode --load-format dummy --preset 20b --device cuda --weights mxfp4 \
      --batch-sizes 1 --contexts 1024 --steps 16 2>&1 |
      grep -E "dummy|kernel_trace"
    python3 bench/kernels/kernel_timeline.py /tmp/timeline/followup.tsv --sequence 0 | head -30
  done
  python3 bench/summarize_ab.py "$out/followup_summary.txt"
}

run_quick() {
  # A short form of candidates for a nearly spent device budget: the candidates' tests (150 s, in parallel),
  # the end-to-end A/B and the default's timeline.
  local flags
  parallel_tests quick 150 'CudaModelGpuTest.*:Weights/*' "GemvMxfp4Kernel.*" "MoeDecodeMxfp4Kernel.*:RmsNorm*:GemvBf16*" \
    "AttentionDecodeKernel.*"
  for flags in "" "--no-decode-attention-prefetch-kv" ""; do
    echo "-- bench decode 20b $flags"
    timeout 60 build/gossamer bench decode --load-format dummy --preset 20b --device cuda --weights mxfp4 \
      --batch-sizes 1 8 --contexts 1024 8192 --steps 32 $flags | grep dummy
  done
  mkdir -p /tmp/timeline
  CUDA_INJECTION64_PATH=$v/libgossamer_kernel_trace.so GOSSAMER_KERNEL_TRACE=/tmp/timeline/quick.tsv \
    timeout 90 build/gossamer bench decode --load-format dummy --preset 20b --device cuda --weights mxfp4 \
    --batch-sizes 1 --contexts 1024 --steps 16 2>&1 | grep -E "dummy|kernel_trace"
  python3 bench/kernels/kernel_timeline.py /tmp/timeline/quick.tsv --sequence 24 | head -45
}

run_mxfp4_steps() {
  # The kernel suite except attention (in four filters) beside the model suite, then the MXFP4 decode-sized steps
  # (bench decode --weights mxfp4 at batch 1–256: the default, where 33+ tokens take the W4A16 GEMMs, against
  # --moe-decode stream, the default's path before 2026-12-07) and the mxfp4 prefill headline against fp8 weights and
  # against W4A16 at every size (--no-moe-mxfp4-w4a8), 20b and 120b.
  parallel_tests mxfp4 "${TEST_LIMIT:-240}" '*' \
    "-MoeKernel.*:MoeDecode*:Sampling*:TokenMask*:GemvMxfp4*:Mxfp4*:MoeStream*:Attention*" \
    "MoeDecode*:Sampling*:TokenMask*:GemvMxfp4*:Mxfp4*" "MoeKernel.*" "MoeStream*"
  local f
  sec "bench decode 20b --weights mxfp4, ctx 1,024: the default, then --moe-decode stream"
  for f in "" "--moe-decode stream"; do
    timeout 60 build/gossamer bench decode --load-format dummy --preset 20b --device cuda --weights mxfp4 \
      --batch-sizes 1 16 32 64 128 256 --contexts 1024 --steps 16 $f | grep dummy
  done
  ab_prefill "build/gossamer|--weights fp8" "2048 4096 8192 16384"
  ab_prefill "build/gossamer|--weights mxfp4" "2048 4096 8192 16384"
  ab_prefill "build/gossamer|--weights mxfp4 --no-moe-mxfp4-w4a8" "2048 4096 8192 16384"
  ab_prefill "build/gossamer|--weights mxfp4" "2048 4096 8192" 120b
  ab_prefill "build/gossamer|--weights mxfp4 --no-moe-mxfp4-w4a8" "2048 4096 8192" 120b
}

run_variants() {
  # Several branches' builds at once (VARIANTS_DIR, default carry/variants: one folder per variant holding its
  # stripped, zstd gossamer, gossamer_kernels_bench and gossamer_kernels_tests — any may be left out — built with
  # the checkout at /work/<name>, which is linked here). For each variant in turn: its kernel tests (VARIANT_TESTS),
  # then main's and each variant's kernels-bench section (VARIANT_BENCH, the rows matching VARIANT_ROWS; a variant's
  # files `section`, `rows` and `envs` — one run per line of environment settings, an experiment's switches — take
  # their place for it: bench/pack_variant.sh copies them from the branch's bench/variant/), then main's and each
  # variant's 20b `bench prefill` (ab_prefill: VARIANT_PREFILL_FLAGS at VARIANT_LENS), main first and last.
  local dir=${VARIANTS_DIR:-carry/variants}
  local section=${VARIANT_BENCH:-moe-mxfp4} rows=${VARIANT_ROWS:-w4a} d name b
  local flags=${VARIANT_PREFILL_FLAGS:---weights mxfp4} lens=${VARIANT_LENS:-2048 4096 8192}
  local names=()
  unpack_variants "$dir" || return
  test_variants
  local v_section v_rows envs env
  for name in main "${names[@]}"; do
    b=build/variants/$name/gossamer_kernels_bench d=$dir/$name
    [ "$name" = main ] && b=build/bench/kernels/gossamer_kernels_bench
    [ -x "$b" ] || { echo "($b not carried)"; continue; }
    # A variant's own section, rows and environments (one run per line: an experiment's switches), if it has them.
    v_section=$(cat "$d/section" 2>/dev/null || echo "$section")
    v_rows=$(cat "$d/rows" 2>/dev/null || echo "$rows")
    envs=$(cat "$d/envs" 2>/dev/null || echo "")
    while IFS= read -r env; do
      sec "$b $v_section ($v_rows) $env"
      env $env timeout 120 "$b" "$v_section" 2>&1 | grep -E '^[|]' | grep -E "$v_rows"
    done <<< "$envs"
  done
  for b in build/gossamer "${names[@]}" build/gossamer; do
    [ "$b" = build/gossamer ] || b=build/variants/$b/gossamer
    [ -x "$b" ] || { echo "($b not carried)"; continue; }
    ab_prefill "$b|$flags" "$lens"
  done
}

# The variants under $1 (one folder each, as run_variants says) unpacked into build/variants/<name>/; sets names.
unpack_variants() {  # dir
  local d name f
  names=()
  for d in "$1"/*/; do
    [ -d "$d" ] || continue
    name=$(basename "$d")
    names+=("$name")
    mkdir -p "build/variants/$name"
    for f in "$d"*.zst; do $z -q -d -f "$f" -o "build/variants/$name/$(basename "$f" .zst)"; done
    chmod +x build/variants/$name/*
    [ -e "/work/$name" ] || ln -s "$root" "/work/$name"
  done
  [ ${#names[@]} -gt 0 ] || { echo "no variants under $1"; return 1; }
}

# Each variant's kernel tests (VARIANT_TESTS), each alone.
test_variants() {
  local tests=${VARIANT_TESTS:-GemmW4A16Kernel.*:MoeKernel.Mxfp4*} name
  for name in "${names[@]}"; do
    [ -x "build/variants/$name/gossamer_kernels_tests" ] || { echo "($name: no kernel tests carried)"; continue; }
    sec "$name: kernel tests $tests"
    timeout 150 build/variants/$name/gossamer_kernels_tests --gtest_color=no --gtest_filter="$tests" \
      > "$out/variant_${name}_tests.log" 2>&1
    echo "exit $?"
    grep -E '^\[  (PASSED|FAILED) ' "$out/variant_${name}_tests.log"
    print_failures "$out/variant_${name}_tests.log"
  done
}

run_decode_variants() {
  # The decode MoE's candidates (VARIANTS_DIR, default carry/variants, as run_variants) against the carried main
  # (carry/valz or carry/valfull) end to end: each variant's kernel tests, then `bench decode` of main and every
  # variant in turn at ctx 1,024 — 20b at DECODE_BATCHES_20B, 120b at DECODE_BATCHES_120B — twice for 20b, main
  # first; a variant's file `decode_flags` (one run per line: flags, e.g. a path switch) adds runs of it at
  # DECODE_FLAG_BATCHES_20B / _120B. DECODE_GUARD: seconds into the mode after which no new run starts (the device
  # call's limit), so that what ran comes back.
  local dir=${VARIANTS_DIR:-carry/variants} b name round line
  local b20=${DECODE_BATCHES_20B:-8 16 32 64 128 256} b120=${DECODE_BATCHES_120B:-64 256}
  local f20=${DECODE_FLAG_BATCHES_20B:-12 16 24} f120=${DECODE_FLAG_BATCHES_120B:-16 32}
  local names=() start=$SECONDS
  unpack_variants "$dir" || return
  test_variants
  guard() { [ $((SECONDS - start)) -lt ${DECODE_GUARD:-100000} ] || { echo "== guard: stopping at $((SECONDS - start)) s"; return 1; }; }
  decode_run() {  # binary, preset, batches, steps, flags…
    local binary=$1 preset=$2 batches=$3 steps=$4
    shift 4
    guard || return 1
    sec "$binary bench decode $preset batch $batches $*"
    timeout 120 "$binary" bench decode --load-format dummy --preset "$preset" --device cuda --batch-sizes $batches \
      --contexts 1024 --steps "$steps" "$@" 2>&1 | grep -E "dummy-|rror"
    return 0  # (only the guard stops the mode; a failed run shows its error)
  }
  for round in 1 2; do
    for b in build/gossamer "${names[@]}"; do
      [ "$b" = build/gossamer ] || b=build/variants/$b/gossamer
      decode_run "$b" 20b "$b20" 16 || return 0
      [ $round -eq 2 ] || decode_run "$b" 120b "$b120" 8 || return 0
    done
  done
  for name in "${names[@]}"; do
    [ -f "$dir/$name/decode_flags" ] || continue
    while IFS= read -r line; do
      decode_run build/variants/$name/gossamer 20b "$f20" 16 $line || return 0
      decode_run build/variants/$name/gossamer 120b "$f120" 8 $line || return 0
    done < "$dir/$name/decode_flags"
  done
}

run_narrow_ab() {
  # The W4A16 GEMMs' 32-token tiles against 128-token ones in decode-sized steps (--moe-w4a16-narrow-max-rows: 0 wide
  # everywhere, 16 the default, 64 the first build's threshold), 20b batch 64 / 128 / 256, in one call; then the
  # sub-tile candidate's (if carried) and their kernel tests.
  local r
  for r in 0 16 64 0; do
    sec "bench decode 20b, --moe-w4a16-narrow-max-rows $r"
    timeout 30 build/gossamer bench decode --load-format dummy --preset 20b --device cuda --batch-sizes 64 128 256 \
      --contexts 1024 --steps 16 --moe-w4a16-narrow-max-rows $r 2>&1 | grep -E "dummy-|rror"
  done
  # candidate/w4a16-subtiles, if carried (carry/variants/subtiles): 128-token tiles of 32-token sub-tiles where the
  # narrow tiles would run, at the same thresholds.
  local cand=carry/variants/subtiles b
  if [ -d $cand ]; then
    mkdir -p build/variants/subtiles
    for b in $cand/*.zst; do $z -q -d -f "$b" -o "build/variants/subtiles/$(basename "$b" .zst)"; done
    chmod +x build/variants/subtiles/*
    for r in 16 64; do
      sec "subtiles: bench decode 20b, --moe-w4a16-sub-tiles --moe-w4a16-narrow-max-rows $r"
      timeout 30 build/variants/subtiles/gossamer bench decode --load-format dummy --preset 20b --device cuda \
        --batch-sizes 64 128 256 --contexts 1024 --steps 16 --moe-w4a16-sub-tiles --moe-w4a16-narrow-max-rows $r 2>&1 |
        grep -E "dummy-|rror"
    done
  fi
  local t
  for t in build/tests/gossamer_kernels_tests build/variants/subtiles/gossamer_kernels_tests; do
    [ -x $t ] || continue
    sec "$t GemmW4A16Kernel.*:MoeKernel.Mxfp4*"
    timeout 60 $t --gtest_color=no --gtest_filter='GemmW4A16Kernel.*:MoeKernel.Mxfp4*' > "$out/narrow_kernels.log" 2>&1
    echo "exit $?"
    grep -E '^\[  (PASSED|FAILED) ' "$out/narrow_kernels.log"
    print_failures "$out/narrow_kernels.log"
  done
}

run_timeline() {
  # The real timeline of CUDA-graph decode steps (kernels overlapped through PDL, as the product runs them):
  # CUPTI concurrent-kernel records through the injection library, summarised per kernel by what each adds to
  # the step (bench/kernels/kernel_timeline.py). The device has no nsys, and ncu serialises kernels. Batch 1 and 8
  # (#15's latency) and the at-load batches 16, 64 and 256 (8–32 rows an expert: the throughput lever).
  local raw=/tmp/timeline
  mkdir -p $raw
  sec "timeline: bench decode 20b (default weights), batch 1 8 16 64 256, ctx 1,024"
  CUDA_INJECTION64_PATH=$v/libgossamer_kernel_trace.so GOSSAMER_KERNEL_TRACE=$raw/trace_20b.tsv \
    timeout 120 build/gossamer bench decode --load-format dummy --preset 20b --device cuda \
    --batch-sizes 1 8 16 64 256 --contexts 1024 --steps 16 2>&1 | grep -E "dummy|kernel_trace"
  python3 bench/kernels/kernel_timeline.py $raw/trace_20b.tsv | grep -v '^ *0\.[0-9] ' | head -120
  sec "timeline: bench decode 120b (default weights), batch 64 and 256, ctx 1,024"
  CUDA_INJECTION64_PATH=$v/libgossamer_kernel_trace.so GOSSAMER_KERNEL_TRACE=$raw/trace_120b.tsv \
    timeout 150 build/gossamer bench decode --load-format dummy --preset 120b --device cuda \
    --batch-sizes 64 256 --contexts 1024 --steps 8 2>&1 | grep -E "dummy|kernel_trace"
  python3 bench/kernels/kernel_timeline.py $raw/trace_120b.tsv | grep -v '^ *0\.[0-9] ' | head -60
}

case $mode in
  tests) run_tests ;;
  benches) run_benches ;;
  ab) run_ab ;;
  headline) run_headline 2>&1 | tee "$out/headline_summary.txt" ;;
  candidates) run_candidates 2>&1 | tee "$out/candidates_summary.txt" ;;
  candidates-e2e)
    run_candidates_e2e 2>&1 | tee "$out/candidates_e2e_summary.txt"
    python3 bench/summarize_ab.py "$out/candidates_e2e_summary.txt" | tee "$out/candidates_e2e_table.txt" ;;
  verdict) run_verdict 2>&1 | tee "$out/verdict_summary.txt" ;;
  followup) run_followup 2>&1 | tee "$out/followup_summary.txt" ;;
  quick) run_quick 2>&1 | tee "$out/quick_summary.txt" ;;
  timeline) run_timeline 2>&1 | tee "$out/timeline_summary.txt" ;;
  narrow-ab) run_narrow_ab 2>&1 | tee "$out/narrow_ab_summary.txt" ;;
  decode-variants) run_decode_variants 2>&1 | tee "$out/decode_variants_summary.txt" ;;
  mxfp4-steps) run_mxfp4_steps 2>&1 | tee "$out/mxfp4_steps_summary.txt" ;;
  variants) run_variants 2>&1 | tee "$out/variants_summary.txt" ;;
  profile) run_profile 2>&1 | tee "$out/profile_summary.txt" ;;
  source) run_source 2>&1 | tee "$out/source_summary.txt" ;;
  profile-moe) profile_moe_gemms source 2>&1 | tee "$out/profile_moe_summary.txt" ;;
  profile-mxfp4) profile_mxfp4_gemms 2>&1 | tee "$out/profile_mxfp4_summary.txt" ;;
  prep) ;;  # binaries and checkpoint in place only
  *) run_tests; run_benches; run_ab ;;
esac
# A call returns only 8 of $OUT's files: the mode's logs and CSVs go back as one archive beside the summaries.
if [ "$mode" != prep ]; then
  (cd "$out" && ls -- *.log *.csv 2>/dev/null | tar cf - -T - 2>/dev/null | $z -q -19 -f -o "logs_$mode.tar.zst" &&
    rm -f -- *.log *.csv)
fi
sec done
