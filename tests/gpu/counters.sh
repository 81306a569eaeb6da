#!/bin/bash
# tests/gpu/counters.sh — GPU checks and the benchmark of hardware counters (issue 7), on the GPU
# machine, from the repo root. Usage: tests/gpu/counters.sh BUILD_DIR. Prints PASS/FAIL/SKIP
# lines (tests/gpu/run.sh collects them through tests/counters/gpu_tests.sh); logs and the
# measured numbers go to $OUT (default /tmp/omniprof-counters-gpu): counters-perf.txt and
# counters-logs.tgz (the work files are kept in $COUNTERS_WORK, default /tmp/omniprof-counters-work).
#  counters.saxpy_bytes   saxpy over N floats reads 2*N*4 bytes of DRAM (2%), per dispatch
#  counters.vs_ncu        dram__bytes_read.sum, sm__cycles_elapsed.max agree with ncu (2%) per kernel
#  counters.multipass     an 8-pass set (sm__throughput) works with kernel replay
#  counters.batch         (experimental) OMNIPROF_PMC_BATCH=16 gives the same values, faster
#  counters.derived       derived metrics equal their expression over the base values
#  counters.device        device counting: a window over two saxpy reads 2 x 2*N*4 bytes
#  counters.omniprof_run  `omniprof run --pmc ...` gives per-kernel values that match ncu
#  counters.perf          counting cost per kernel, 1-pass and 8-pass sets, next to ncu
set -u
B=$(cd "${1:-gpu-build}" && pwd)
OUT=${OUT:-/tmp/omniprof-counters-gpu}
mkdir -p "$OUT"
W=${COUNTERS_WORK:-/tmp/omniprof-counters-work}
rm -rf "$W"; mkdir -p "$W"
export LD_LIBRARY_PATH=$B/lib:$B/runtime-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
APP=$B/bin/omniprof-counters-app
TOOL=$B/lib/libomniprof-counters-gpu-tool.so
CHECK="python3 tests/gpu/counters_check.py"
N=16777216
verdict() { # NAME RC MESSAGE
  if [ "$2" = 0 ]; then echo "PASS $1: $3"; elif [ "$2" = 77 ]; then echo "SKIP $1: $3"; else echo "FAIL $1: $3"; fi
}
if ! nvidia-smi -L >/dev/null 2>&1; then verdict counters.gpu 77 "no NVIDIA GPU"; exit 0; fi
if [ ! -x "$APP" ] || [ ! -f "$TOOL" ]; then verdict counters.build 1 "$APP or $TOOL missing"; exit 1; fi
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)
M1="dram__bytes_read.sum sm__cycles_elapsed.max gpu__time_duration.sum"
M8="sm__throughput.avg.pct_of_peak_sustained_elapsed dram__bytes_read.sum"
wall() { local t0 t1; t0=$(date +%s%N); "$@"; local rc=$?; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000 )) > "$W/last_wall_us"; return $rc; }
counted() { # counted NAME METRICS TIMED -> $W/NAME.csv, .out, .err
  wall timeout 150 env LD_PRELOAD="$TOOL" COUNTERS_TOOL_METRICS="$2" COUNTERS_TOOL_OUTPUT="$W/$1.csv" \
    OMNIPROF_LOG_LEVEL=info "$APP" $N 3 "$3" >"$W/$1.out" 2>"$W/$1.err"
}

# baseline (no profiler) and the 1-pass set
wall timeout 120 "$APP" $N 3 20 >"$W/base.out" 2>&1; base_rc=$?; base_wall=$(cat "$W/last_wall_us")
counted one "$M1" 20; rc=$?; one_wall=$(cat "$W/last_wall_us")
if [ $rc = 0 ]; then msg=$($CHECK bytes "$W/one.csv" $N); rc=$?
else msg="program exit $rc: $(tail -3 "$W/one.err" | tr '\n' ' ')"; fi
verdict counters.saxpy_bytes $rc "$msg"

# experimental batching: 16 counted dispatches per profiler start/stop (OMNIPROF_PMC_BATCH)
wall timeout 150 env LD_PRELOAD="$TOOL" COUNTERS_TOOL_METRICS="$M1" COUNTERS_TOOL_OUTPUT="$W/batch.csv" \
  OMNIPROF_PMC_BATCH=16 OMNIPROF_LOG_LEVEL=info "$APP" $N 3 20 >"$W/batch.out" 2>"$W/batch.err"; rc=$?
batch_wall=$(cat "$W/last_wall_us")
if [ $rc = 0 ]; then msg=$($CHECK bytes "$W/batch.csv" $N); rc=$?
  n=$(grep -c 'dram__bytes_read.sum' "$W/batch.csv"); [ "$n" = 69 ] || { rc=1; msg="$msg; $n of 69 dispatches"; }
  msg="$msg; $(grep '^time kernel=saxpy' "$W/batch.out")"
else msg="program exit $rc: $(tail -3 "$W/batch.err" | tr '\n' ' ')"; fi
verdict counters.batch $rc "$msg"

# derived metrics
counted derived "DRAM_BYTES DRAM_GBPS dram__bytes_read.sum dram__bytes_write.sum gpu__time_duration.sum" 0; rc=$?
if [ $rc = 0 ]; then msg=$($CHECK derived "$W/derived.csv"); rc=$?
else msg="program exit $rc: $(tail -3 "$W/derived.err" | tr '\n' ' ')"; fi
verdict counters.derived $rc "$msg"

# multi-pass set (8 passes, kernel replay)
counted eight "$M8" 20; rc=$?; eight_wall=$(cat "$W/last_wall_us")
if [ $rc = 0 ]; then msg=$($CHECK multipass "$W/eight.csv" 8); rc=$?
  m2=$($CHECK bytes "$W/eight.csv" $N) || { rc=1; }; msg="$msg; $m2"
else msg="program exit $rc: $(tail -3 "$W/eight.err" | tr '\n' ' ')"; fi
verdict counters.multipass $rc "$msg"

# device counting (start, read, stop over time windows)
timeout 120 env OMNIPROF_INIT_AT_LOAD=0 OMNIPROF_LOG_LEVEL=info "$B/bin/omniprof-counters-device" $N \
  >"$W/device.out" 2>"$W/device.err"; rc=$?
msg=$(tail -1 "$W/device.out")
[ -z "$msg" ] && msg="exit $rc: $(tail -3 "$W/device.err" | tr '\n' ' ')"
verdict counters.device $rc "$msg"

# ncu on the same program and metrics (like for like: no clock locking, no cache flush)
if [ -n "$NCU" ]; then
  # like for like: neither side flushes caches or locks clocks (omniprof can do neither). With
  # ncu's default cache flush, the previous kernel's dirty lines are written back before the
  # kernel instead of during it: saxpy then runs ~9% fewer cycles (second GPU run).
  NCUOPT="--clock-control none --print-units base --csv"
  wall timeout 150 env LD_PRELOAD="$TOOL" COUNTERS_TOOL_METRICS="$M1" COUNTERS_TOOL_OUTPUT="$W/cmp.csv" \
    "$APP" $N 5 0 >"$W/cmp.out" 2>"$W/cmp.err"
  timeout 150 "$NCU" $NCUOPT --cache-control none --metrics ${M1// /,} "$APP" $N 5 0 >"$W/ncu1.csv" 2>"$W/ncu1.err"; rc=$?
  if [ $rc = 0 ]; then msg=$($CHECK ncu "$W/cmp.csv" "$W/ncu1.csv" dram__bytes_read.sum sm__cycles_elapsed.max); rc=$?
  else msg="ncu exit $rc: $(tail -3 "$W/ncu1.err" | tr '\n' ' ')"; fi
  verdict counters.vs_ncu $rc "$msg"
  # ncu's time for the same kernels and metrics as the timed runs above
  NCUOPT="$NCUOPT --cache-control none"
  wall timeout 150 "$NCU" $NCUOPT --metrics ${M1// /,} "$APP" $N 3 20 >"$W/ncu1t.csv" 2>&1; ncu1_wall=$(cat "$W/last_wall_us")
  wall timeout 200 "$NCU" $NCUOPT --metrics ${M8// /,} "$APP" $N 3 20 >"$W/ncu8t.csv" 2>&1; ncu8_wall=$(cat "$W/last_wall_us")
else
  verdict counters.vs_ncu 77 "ncu not found"; ncu1_wall=0; ncu8_wall=0
fi

# omniprof run --pmc (the launcher and the database), then two groups = two runs
if [ -x "$B/bin/omniprof" ] && [ -n "$NCU" ]; then
  d=$W/run-pmc; rm -rf "$d"
  timeout 150 env OMNIPROF_LOG_LEVEL=info "$B/bin/omniprof" run -d "$d" --kernel-trace \
    --pmc dram__bytes_read.sum sm__cycles_elapsed.max -- "$APP" $N 5 0 >"$W/run-pmc.out" 2>"$W/run-pmc.err"; rc=$?
  # DRAM bytes decide; cycles are shown (kernel tracing runs inside the counted range: +5-9%)
  if [ $rc = 0 ]; then msg=$($CHECK db "$d" "$W/ncu1.csv" dram__bytes_read.sum); rc=$?
    msg="$msg || cycles: $($CHECK db "$d" "$W/ncu1.csv" sm__cycles_elapsed.max | sed 's/.*within 2%: //; s/.*mismatches: //')"
  else msg="omniprof run exit $rc: $(tail -3 "$W/run-pmc.err" | tr '\n' ' ')"; fi
  verdict counters.omniprof_run $rc "$msg"
  # issue 7's "done when": the plain command, no tracing: both metrics must match ncu (2%)
  d=$W/run-pmc-only; rm -rf "$d"
  timeout 150 env OMNIPROF_LOG_LEVEL=info "$B/bin/omniprof" run -d "$d" \
    --pmc dram__bytes_read.sum sm__cycles_elapsed.max -- "$APP" $N 5 0 >"$W/run-pmc-only.out" 2>"$W/run-pmc-only.err"; rc=$?
  if [ $rc = 0 ]; then
    msg=$($CHECK db "$d" "$W/ncu1.csv" dram__bytes_read.sum); rc=$?
    msg2=$($CHECK db "$d" "$W/ncu1.csv" sm__cycles_elapsed.max); rc2=$?
    [ $rc2 = 0 ] || rc=$rc2
    msg="$msg || $msg2"
  else msg="omniprof run exit $rc: $(tail -3 "$W/run-pmc-only.err" | tr '\n' ' ')"; fi
  verdict counters.omniprof_run_pmc_only $rc "$msg"
  d=$W/run-groups; rm -rf "$d"
  timeout 150 env OMNIPROF_LOG_LEVEL=info "$B/bin/omniprof" run -d "$d" --kernel-trace --pmc dram__bytes_read.sum \
    --pmc sm__throughput.avg.pct_of_peak_sustained_elapsed -- "$APP" $N 1 0 >"$W/run-groups.out" 2>"$W/run-groups.err"; rc=$?
  msg="exit $rc; databases: $(find "$d" -name '*.db' | wc -l); $(grep -i -E 'pass|group' "$W/run-groups.err" | head -3 | tr '\n' ' ')"
  [ "$(find "$d" -name '*.db' | wc -l)" -ge 2 ] || rc=1
  verdict counters.omniprof_run_groups $rc "$msg"
fi

# counting cost per kernel: wall time of the whole program minus the baseline, over its kernels
K=$(awk -F= '/^total_kernels=/{print $2}' "$W/base.out")
{
  echo "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
  echo "program: counters_app N=$N, $K kernels (saxpy, fma_loop, empty; 3 + 20 timed launches each)"
  grep '^time' "$W/base.out" | sed 's/^/baseline /'
  grep '^time' "$W/one.out" | sed 's/^/omniprof-1pass /'
  grep '^time' "$W/eight.out" | sed 's/^/omniprof-8pass /'
  grep '^time' "$W/batch.out" 2>/dev/null | sed 's/^/omniprof-1pass-batch16 /'
  grep -h '^time' "$W/ncu1t.csv" 2>/dev/null | sed 's/^/ncu-1pass /'
  grep -h '^time' "$W/ncu8t.csv" 2>/dev/null | sed 's/^/ncu-8pass /'
  grep -h 'per counted dispatch' "$W/one.err" | sed 's/^/omniprof-1pass breakdown: /'
  grep -h 'per counted dispatch' "$W/eight.err" | sed 's/^/omniprof-8pass breakdown: /'
  for x in "base $base_wall" "omniprof-1pass $one_wall" "omniprof-8pass $eight_wall" "omniprof-1pass-batch16 ${batch_wall:-0}" "ncu-1pass $ncu1_wall" "ncu-8pass $ncu8_wall"; do
    set -- $x
    if [ "$2" -gt 0 ] && [ -n "$K" ]; then
      echo "wall $1 total_ms=$(( $2 / 1000 )) per_kernel_us_over_base=$(( ($2 - base_wall) / K ))"
    fi
  done
} > "$W/perf.txt"
verdict counters.perf $base_rc "$(grep -c . "$W/perf.txt") lines in perf.txt: $(grep '^wall' "$W/perf.txt" | tr '\n' ';')"
cp "$W/perf.txt" "$OUT/counters-perf.txt" 2>/dev/null
tar -czf "$OUT/counters-logs.tgz" -C "$W" . 2>/dev/null
exit 0
