#!/usr/bin/env bash
# Nsight Compute profile of batch-1 decode forwards (eager, so every kernel is its own launch):
# per kernel its time and DRAM throughput as a fraction of peak, summed by kernel name.
# Usage on the GPU machine: gpu_profile.sh CKPT_DIR (writes $OUT/ncu-decode.csv and a summary).
# NCU_FLAGS adds ncu options, e.g. "--clock-control none --cache-control none" for the clocks and
# warm caches of a real run (ncu locks base clocks and flushes caches by default).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-logs}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.deps/rt:${LD_LIBRARY_PATH:-}
ckpt=$1
# Skip the model load's and the warm-ups' launches; profile about one forward's kernels.
DRIFT_CUDA_GRAPHS=0 ncu --csv --page raw ${NCU_FLAGS:-} --launch-skip ${NCU_SKIP:-1200} --launch-count ${NCU_COUNT:-450} \
  --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum \
  ./build/apps/drift bench --model "$ckpt" --backend cuda --sweep --sweep-only decode --sweep-max-context 512 \
  --sweep-repeats 3 > "$out/ncu-decode.csv" 2> "$out/ncu.err"
python3 - "$out/ncu-decode.csv" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head, units, data = rows[0], rows[1], rows[2:]
name, t, bw, rd = (head.index(c) for c in ("Kernel Name", "gpu__time_duration.sum",
                   "dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum"))
num = lambda s: float(s.replace(",", ""))  # ncu writes thousands separators
agg = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
for r in data:
    k = r[name].split("(")[0][:60]
    a = agg[k]; a[0] += 1; a[1] += num(r[t]); a[2] += num(r[bw]) * num(r[t]); a[3] += num(r[rd])
total = sum(a[1] for a in agg.values())
print(f"profiled {len(data)} kernels, {total/1e6:.3f} ms of GPU time ({units[t]})")
print("| kernel | launches | time share | time | DRAM throughput (time-weighted % of peak) |")
for k, a in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    print(f"| {k} | {a[0]} | {100*a[1]/total:.1f}% | {a[1]/1e3:.1f} us | {a[2]/a[1]:.1f}% |")
PY
