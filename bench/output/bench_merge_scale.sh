#!/bin/sh
# bench_merge_scale.sh — issue 17 item 5: `omniprof merge` of N rank databases of about 10,000
# records each (omniprof-gen-db --events 10000: regions, samples, kernels, copies, allocations,
# metrics and counter values), then `omniprof summary` of the merged file: wall and CPU seconds,
# peak RSS. Target (docs/PERFORMANCE.md): N = 1,000 in <= 60 s and <= 200 MB each.
# usage: bench_merge_scale.sh BUILD_DIR [N] [BASELINE_BUILD_DIR] [BASE_N]
# The databases are generated once into $OMNIPROF_BENCH_DIR/mergeN (default
# /tmp/omniprof-bench-output) and reused. With BASELINE_BUILD_DIR (a build of the code before,
# its bin/ and lib/), the same run also merges and summarizes the first BASE_N (default 100)
# databases with the baseline and with BUILD_DIR — the baseline's cost grows as N^2, so it is
# measured where it finishes — and checks that both summaries print the same text.
set -eu
BUILD=${1:-build}
N=${2:-1000}
BASE=${3:-}
BASE_N=${4:-100}
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
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# measure TAG BUILD COMMAND...: wall, CPU, peak RSS of one command (the build's own libraries)
measure() {
  tag=$1 b=$2
  shift 2
  LD_LIBRARY_PATH="$b/lib" /usr/bin/time -f "%e %M %U %S" -o "$DIR/time.txt" "$b/bin/omniprof" "$@"
  read SECS RSS USR SYS < "$DIR/time.txt"
  echo "metric=${tag}_seconds value=$SECS unit=s"
  echo "metric=${tag}_cpu_seconds value=$(echo "$USR + $SYS" | bc) unit=s"
  echo "metric=${tag}_peak_rss value=$((RSS / 1024)) unit=MiB"
}

# run WHO BUILD COUNT: merge of the first COUNT databases, then the summary of the merged file
run() {
  who=$1 b=$2 count=$3
  out=$DIR/merged-$who-$count.db
  rm -f "$out"
  measure "merge_scale_${who}_$count" "$b" merge -i $(ls "$M"/r*.db | head -n "$count") -o "$out" --no-progress
  echo "metric=merge_scale_${who}_${count}_file_size value=$(($(stat -c %s "$out") / 1048576)) unit=MiB"
  rm -f "$DIR/summary-$who-$count.txt"
  measure "summary_scale_${who}_$count" "$b" summary -i "$out" -o "$DIR/summary-$who-$count.txt"
  rm -f "$out"
}

echo "metric=merge_scale_inputs value=$N unit=databases"
run new "$BUILD" "$N"
if [ -n "$BASE" ]; then
  run baseline "$BASE" "$BASE_N"
  run new "$BUILD" "$BASE_N"
  if cmp -s "$DIR/summary-baseline-$BASE_N.txt" "$DIR/summary-new-$BASE_N.txt"; then same=1; else same=0; fi
  echo "metric=summary_scale_${BASE_N}_same_text value=$same unit=bool"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
