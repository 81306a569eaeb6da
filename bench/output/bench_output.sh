#!/bin/sh
# bench_output.sh — output benchmarks (docs/perf/output.md):
#   1. convert a 10 M-event database to Perfetto: events/s and peak RSS;
#   2. merge 256 databases: time and peak RSS.
# usage: bench_output.sh BUILD_DIR [EVENTS] ; databases are generated once into
# $OMNIPROF_BENCH_DIR (default /tmp/omniprof-bench-output) and reused.
set -eu
BUILD=${1:-build}
EVENTS=${2:-10000000}
DIR=${OMNIPROF_BENCH_DIR:-/tmp/omniprof-bench-output}
OP=$BUILD/bin/omniprof
GEN=$BUILD/bin/omniprof-gen-db
mkdir -p "$DIR"
BIG=$DIR/big$EVENTS.db
if [ ! -f "$BIG" ]; then
  echo "generating $BIG (once) ..." >&2
  "$GEN" "$BIG.tmp" --events "$EVENTS" --threads 8 --streams 8 > "$BIG.counts"
  mv "$BIG.tmp" "$BIG"
fi
# events = rows the converter writes (regions, samples, kernels, copies, allocs, pmc, metrics)
N=$(tail -1 "$BIG.counts" | tr ' ' '\n' | grep -v markers | cut -d= -f2 | paste -sd+ | bc)
rm -rf "$DIR/out"
/usr/bin/time -f "%e %M %U %S" -o "$DIR/time.txt" "$OP" convert -i "$BIG" -f pftrace -d "$DIR/out" -o bench --no-progress
read SECS RSS USR SYS < "$DIR/time.txt"
echo "metric=convert_pftrace_events value=$N unit=events"
echo "metric=convert_pftrace_seconds value=$SECS unit=s"
echo "metric=convert_pftrace_rate value=$(echo "$N / $SECS" | bc) unit=events/s"
echo "metric=convert_pftrace_cpu_seconds value=$(echo "$USR + $SYS" | bc) unit=s"
echo "metric=convert_pftrace_rate_per_cpu_second value=$(echo "$N / ($USR + $SYS)" | bc) unit=events/s"
echo "metric=convert_pftrace_peak_rss value=$((RSS / 1024)) unit=MiB"
echo "metric=convert_pftrace_bytes value=$(stat -c %s "$DIR/out/bench_results.pftrace") unit=bytes"
rm -rf "$DIR/out"

M=$DIR/merge256
mkdir -p "$M"
if [ ! -f "$M/db255.db" ]; then
  echo "generating 256 databases (once) ..." >&2
  i=0
  while [ $i -lt 256 ]; do
    "$GEN" "$M/db$i.db" --events 4000 --threads 2 --streams 2 --pid $((30000 + i)) --seed $i > /dev/null
    i=$((i + 1))
  done
fi
rm -f "$DIR/merged.db"
/usr/bin/time -f "%e %M %U %S" -o "$DIR/time.txt" "$OP" merge -i "$M"/db*.db -o "$DIR/merged.db"
read SECS RSS USR SYS < "$DIR/time.txt"
echo "metric=merge256_inputs value=256 unit=databases"
echo "metric=merge256_rows value=$(sqlite3 "$DIR/merged.db" 'SELECT (SELECT count(*) FROM rocpd_region) + (SELECT count(*) FROM rocpd_kernel_dispatch) + (SELECT count(*) FROM rocpd_sample) + (SELECT count(*) FROM rocpd_memory_copy) + (SELECT count(*) FROM rocpd_event)' 2>/dev/null || echo 0) unit=rows"
echo "metric=merge256_seconds value=$SECS unit=s"
echo "metric=merge256_peak_rss value=$((RSS / 1024)) unit=MiB"
echo "metric=merge256_bytes value=$(stat -c %s "$DIR/merged.db") unit=bytes"
rm -f "$DIR/merged.db"
