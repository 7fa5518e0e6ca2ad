#!/usr/bin/env bash
# On the GPU machine (Firecracker runtime: ncu reads counters there): the FP8 GEMM (8192×5120×2880), the
# W4A8 GEMM on MXFP4 experts (group profile-w4a8: the gate_up of an 8,192-token MoE block) and the prefill attention
# (1×8192 causal; the mma.sync and the wgmma kernel) under Nsight Compute: stall reasons per issued instruction, tensor
# pipe utilisation, issue activity. Usage: bench/ncu_profile.sh BIN_DIR_BENCH OUT_DIR
#   BIN_DIR_BENCH: the gossamer_kernels_bench binary (its group `profile` runs the two shapes).
bin=$1; out=$2
ncu --query-metrics --chip gh100 > $out/metrics.txt 2>&1
stalls=$(grep -oE '^smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active' $out/metrics.txt | sort -u | sed 's/$/.ratio/' | paste -sd, -)
pipes=$(grep -oE '^sm__pipe_tensor_op_[a-z_]+_cycles_active' $out/metrics.txt | sort -u | sed 's/$/.avg.pct_of_peak_sustained_active/' | paste -sd, -)
echo "stall metrics: $(echo $stalls | tr ',' '\n' | wc -l), pipe metrics: $pipes"
: > $out/ncu.txt
for kernel in gemm_fp8_kernel attention_prefill_kernel attention_prefill_wgmma_kernel; do  # the first launch of each
  ncu --clock-control none --metrics "$stalls,$pipes,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active" \
    -k regex:$kernel -c 1 $bin profile >> $out/ncu.txt 2>&1
  echo "ncu $kernel rc $?"
done
# The W4A8 GEMM on MXFP4 experts (the gate_up launch of an 8,192-token MoE block, E = 32).
ncu --clock-control none --metrics "$stalls,$pipes,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active" \
  -k regex:gemm_w4a8_kernel -c 1 $bin profile-w4a8 >> $out/ncu.txt 2>&1
echo "ncu gemm_w4a8_kernel rc $?"
grep -E "gemm_fp8_kernel|gemm_fp8_tma_kernel|attention_prefill|ERROR" $out/ncu.txt | cut -c1-120
awk '/gemm_fp8_kernel|gemm_fp8_tma_kernel|attention_prefill/ {print "## " substr($0,1,60)} $NF ~ /^[0-9.]+$/ && $NF+0 >= 0.05 {print "  " $1 " " $NF}' $out/ncu.txt | head -80
