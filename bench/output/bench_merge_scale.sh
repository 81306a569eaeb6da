#!/bin/sh
# bench_merge_scale.sh — issue 17 item 5: `omniprof merge` of N rank databases of about 10,000
# records each (omniprof-gen-db --events 10000: regions, samples, kernels, copies, allocations,
# metrics and counter values), then `omniprof summary` of the merged file: wall and CPU seconds,
# peak RSS. Target (docs/PERFORMANCE.md): N = 1,000 in <= 60 s and <= 200 MB each.
# usage: bench_merge_scale.sh BUILD_DIR [N] [BASELINE_BUILD_DIR]
# The databases are generated once into $OMNIPROF_BENCH_DIR/mergeN (default
# /tmp/omniprof-bench-output) and reused. With BASELINE_BUILD_DIR, that build's summary runs on
# the same merged file first (the baseline of the same run).
set -eu
BUILD=${1:-build}
N=${2:-1000}
BASE=${3:-}
DIR=${OMNIPROF_BENCH_DIR:-/tmp/omniprof-bench-output}
M=$DIR/merge$N
mkdir -p "$M"
if [ ! -f "$M/r$(printf %04d $((N - 1))).db" ]; then
  echo "generating $N databases (once) ..." >&2
  i=0
  while [ $i -lt "$N" ]; do
    "$BUILD/bin/omniprof-gen-db" "$M/r$(printf %04d $i).db" --events 10000 --threads 2 --streams 2 \
      --pid $((20000 + i)) --rank $i --seed $i > /dev/null
    i=$((i + 1))
  done
fi
OUT=$DIR/merged$N.db
rm -f "$OUT"
/usr/bin/time -f "%e %M %U %S" -o "$DIR/time.txt" "$BUILD/bin/omniprof" merge -i "$M"/r*.db -o "$OUT" --no-progress
read SECS RSS USR SYS < "$DIR/time.txt"
echo "metric=merge_scale_inputs value=$N unit=databases"
echo "metric=merge_scale_seconds value=$SECS unit=s"
echo "metric=merge_scale_cpu_seconds value=$(echo "$USR + $SYS" | bc) unit=s"
echo "metric=merge_scale_peak_rss value=$((RSS / 1024)) unit=MiB"
for who in ${BASE:+baseline} new; do
  B=$BUILD
  [ "$who" = baseline ] && B=$BASE
  /usr/bin/time -f "%e %M %U %S" -o "$DIR/time.txt" "$B/bin/omniprof" summary -i "$OUT" > /dev/null
  read SECS RSS USR SYS < "$DIR/time.txt"
  echo "metric=summary_scale_${who}_seconds value=$SECS unit=s"
  echo "metric=summary_scale_${who}_cpu_seconds value=$(echo "$USR + $SYS" | bc) unit=s"
  echo "metric=summary_scale_${who}_peak_rss value=$((RSS / 1024)) unit=MiB"
done
rm -f "$OUT"
