#!/usr/bin/env bash
# attn_wg_gpu.sh - one GPU-machine call for the Hopper attention kernel work
# (cuda_attn_wg.c / cuda_attn_wg.cuh): after `scripts/gpu-check.sh --src TAR
# --build` (build in /tmp/ptc-gpu-build, tree in /tmp/ptc-gpu-src), runs
#  - test_cuda_attn --wg-cases (the wgmma kernel's GPU cases) with the
#    default shape and with each VAR=VALUE argument (e.g.
#    PTC_CUDA_ATTN_WG_CFG=2,128,3; several in one quoted argument, space
#    separated), so a shape is checked before it is timed;
#  - test_cuda_attn --bench-wg (bf16 b8 h16 s1024, d64 / d128, causal or
#    not, best of 3) for the default and each argument;
#  - with LENGTHS="512 1024 2048" (sequence lengths): the d64 row of
#    --bench-wg at b8 h16 and each length, for the default and each
#    argument (session 20's sweep found a length where a new default left
#    the wgmma kernel);
#  - torch's flash and cuDNN sdpa on the same shapes (the kernels to beat;
#    torch 2.11's default sdpa takes cuDNN's on an H100), ms;
#  - with --ncu: Nsight Compute on one d64 launch of the wgmma kernel, the
#    speed-of-light, warp-state (stall reasons) and instruction sections,
#    plus, where this ncu can print it, the source page (SASS lines with
#    their stall samples) as CSV, the 60 most stalled lines first; then
#    the pipes' busy shares (MUFU, tensor, FMA, ALU, issue slots) of the
#    d64 kernel and of the kernel torch's sdpa takes for the same call
#    (cuDNN's on torch 2.11), in one table each;
#  - with --probe: bench/wg_overlap_probe.cu built by nvcc and run (can a
#    warpgroup's ex2 / FMA work overlap another's wgmmas).
# Logs go to $OUT (at most 5 files: cases.txt, bench.txt, flash.txt,
# ncu.txt, probe.txt). Time limits per step: T_CASES (default 120 s), T_BENCH (60 s),
# T_NCU (150 s).
#
#   [LENGTHS="512 1024"] bash bench/attn_wg_gpu.sh [--ncu] [--probe] [VAR=VALUE ...]
set -uo pipefail
B=${BUILD:-/tmp/ptc-gpu-build}
O=${OUT:-/tmp/attn-wg-logs}
mkdir -p "$O"
NCU=0
PROBE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --ncu) NCU=1; shift ;;
    --probe) PROBE=1; shift ;;
    *) break ;;
  esac
done
eval "$(bash scripts/device-deps.sh env)"
cd /tmp/ptc-gpu-src || exit 1
export PTC_CACHE_DIR=${PTC_CACHE_DIR:-/tmp/ptc-gpu-cache}
PYT=${PY:-/opt/torch/.venv/bin/python3}
T=$B/tests/cuda/test_cuda_attn
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }

# each setting as an env assignment ("" = the defaults)
settings=("" "$@")
run_env() { # SETTING COMMAND...: the command with the setting (one or more
  # space-separated assignments) in its environment
  local v=$1; shift
  # shellcheck disable=SC2086 # the setting's words are separate assignments
  if [ -n "$v" ]; then env $v "$@"; else "$@"; fi
}

: >"$O/cases.txt"
for v in "${settings[@]}"; do
  echo "#### ${v:-default}" >>"$O/cases.txt"
  run_env "$v" timeout "${T_CASES:-120}" "$T" --wg-cases >>"$O/cases.txt" 2>&1
  echo "== wg-cases ${v:-default}: rc $? ($(el)): $(tail -n 1 "$O/cases.txt")"
done

: >"$O/bench.txt"
for v in "${settings[@]}"; do
  echo "#### ${v:-default}" >>"$O/bench.txt"
  run_env "$v" timeout "${T_BENCH:-60}" "$T" --bench-wg >>"$O/bench.txt" 2>&1
done
echo "== bench-wg ($(el))"; grep -E "^####|bench-wg" "$O/bench.txt"

if [ -n "${LENGTHS:-}" ]; then
  for L in $LENGTHS; do
    for v in "${settings[@]}"; do
      echo "#### ${v:-default} L=$L" >>"$O/bench.txt"
      run_env "$v" env PTC_TEST_WG_QUICK=1 PTC_TEST_WG_BHS="8,16,$L" timeout "${T_BENCH:-60}" "$T" --bench-wg \
        >>"$O/bench.txt" 2>&1
      echo "${v:-default}: $(grep bench-wg "$O/bench.txt" | tail -n 1)"
    done
  done
  echo "== lengths ($(el))"
fi

timeout 60 "$PYT" - >"$O/flash.txt" 2>&1 <<'PYEOF'
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
for d in (64, 128):
    for causal in (False, True):
        q, k, v = (torch.randn(8, 16, 1024, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        for be in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
          with sdpa_kernel(be):
              for _ in range(5): F.scaled_dot_product_attention(q, k, v, is_causal=causal)
              torch.cuda.synchronize()
              best = None
              for _ in range(3):
                  e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                  e0.record()
                  for _ in range(8): F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                  e1.record(); torch.cuda.synchronize()
                  ms = e0.elapsed_time(e1) / 8
                  best = ms if best is None else min(best, ms)
          flops = 4.0 * 8 * 16 * 1024 * 1024 * d / (2 if causal else 1)
          print(f"{be.name.split('_')[0].lower()} bf16 b8 h16 s1024 d{d}{' causal' if causal else ''}: {best:.4f} ms "
                f"({flops / (best * 1e-3) / 1e12:.0f} TFLOP/s)")
PYEOF
echo "== torch flash ($(el))"; cat "$O/flash.txt"

if [ "$NCU" = 1 ]; then
  NCUB=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
  rep=/tmp/attn-wg-ncu
  {
    echo "#### ncu: $NCUB"
    # one launch of the d64 kernel (the first --bench-wg row is d64, not causal)
    timeout "${T_NCU:-150}" "$NCUB" --clock-control none --import-source yes -f -o "$rep" \
      --section SpeedOfLight --section WarpStateStats --section InstructionStats \
      --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy \
      --section SourceCounters -k regex:ptc_attn_wg -c 1 "$T" --bench-wg
    echo "#### details"
    "$NCUB" -i "$rep.ncu-rep" --page details
    echo "#### source (SASS, the 60 lines with the most stall samples)"
    # the CSV to a file, ncu's messages into this log
    { "$NCUB" -i "$rep.ncu-rep" --page source --csv --print-source sass >"$rep.csv"; } 2>&1 ||
      echo "(this ncu cannot print the source page)"
    if [ -s "$rep.csv" ]; then
      "$PYT" - "$rep.csv" <<'PYEOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
head = next((i for i, r in enumerate(rows) if any("Source" == c or "Address" in c for c in r)), None)
if head is None:
    print("source page: no header found"); sys.exit(0)
cols = rows[head]
key = next((i for i, c in enumerate(cols) if "Warp Stall Sampling (All" in c), None)
src = next((i for i, c in enumerate(cols) if c == "Source"), None)
if key is None or src is None:
    print("source page columns:", cols[:20]); sys.exit(0)
def num(x):
    try: return float(x.replace(",", ""))
    except ValueError: return 0.0
body = [r for r in rows[head + 1:] if len(r) > max(key, src)]
total = sum(num(r[key]) for r in body) or 1.0
for r in sorted(body, key=lambda r: -num(r[key]))[:60]:
    print(f"{100 * num(r[key]) / total:5.1f}%  {r[src]}")
PYEOF
    fi
    echo "#### pipes (busy shares), ptc's d64 kernel, then torch's sdpa kernel on the same call"
    M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__issue_active.avg.pct_of_peak_sustained_active
    M=$M,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active
    M=$M,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.sum,smsp__inst_executed.sum
    M=$M,sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.avg.pct_of_peak_sustained_active
    timeout "${T_NCU:-150}" "$NCUB" --clock-control none --metrics "$M" -k regex:ptc_attn_wg -c 1 "$T" --bench-wg |
      grep -E "^  [a-z_]|^    [a-z]"
    timeout "${T_NCU:-150}" "$NCUB" --clock-control none --metrics "$M" -k regex:"flash|fmha|attn|sdpa" -c 1 \
      "$PYT" -c "import torch, torch.nn.functional as F
q, k, v = (torch.randn(8, 16, 1024, 64, device='cuda', dtype=torch.bfloat16) for _ in range(3))
F.scaled_dot_product_attention(q, k, v); torch.cuda.synchronize()" | grep -E "^  [a-z_]|^    [a-z]"
  } >"$O/ncu.txt" 2>&1
  echo "== ncu ($(el))"; grep -E "^####|==ERR|==WARN|Stall|stall" "$O/ncu.txt" | head -40
fi

if [ "$PROBE" = 1 ]; then
  NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null | head -n 1)
  {
    if [ -z "$NVCC" ]; then
      echo "no nvcc on this machine"
    elif "$NVCC" -gencode arch=compute_90a,code=sm_90a -O3 -o /tmp/wg_overlap_probe bench/wg_overlap_probe.cu; then
      timeout 60 /tmp/wg_overlap_probe
    fi
  } >"$O/probe.txt" 2>&1
  echo "== probe ($(el))"; cat "$O/probe.txt"
fi
