#!/bin/sh
# bench_merge_mpi.sh — issue 17 item 5, the tree merge: `omniprof merge` of N rank databases of
# about 10,000 records each (the databases of bench_merge_scale.sh, generated once and shared
# with it) in one process — the baseline of the same run — and `mpirun -np K omniprof merge
# --mpi` for each K given (fan-in F): wall seconds, summed CPU seconds of the ranks, and rank 0's
# leaf/level times (--times). The cost model these feed is in docs/multinode.md.
# usage: bench_merge_mpi.sh BUILD_DIR [N] [F] [K...]   (default N = 128, F = 8, K = 4 8 16)
set -eu
BUILD=${1:-build}
N=${2:-128}
F=${3:-8}
shift $(($# < 3 ? $# : 3))
RANKS=${*:-4 8 16}
DIR=${OMNIPROF_BENCH_DIR:-/tmp/omniprof-bench-output}
M=$DIR/merge$N
mkdir -p "$M"
i=0
while [ $i -lt "$N" ]; do # the databases of bench_merge_scale.sh (same names, options and seeds)
  f=$M/r$(printf %04d $i).db
  [ -f "$f" ] || "$BUILD/bin/omniprof-gen-db" "$f" --events 10000 --threads 2 --streams 2 --pid $((20000 + i)) \
    --rank $i --seed $i > /dev/null
  i=$((i + 1))
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader,tcp
OUT=$DIR/merged-mpi$N.db
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1 /proc/loadavg)"
rm -f "$OUT"
/usr/bin/time -f "%e %U %S %M" -o "$DIR/time.txt" "$BUILD/bin/omniprof" merge -i "$M"/r*.db -o "$OUT" --no-progress
read SECS USR SYS RSS < "$DIR/time.txt"
echo "metric=merge_serial_seconds value=$SECS unit=s inputs=$N cpu=$(echo "$USR + $SYS" | bc) rss_mib=$((RSS / 1024))"
BYTES=$(stat -c %s "$OUT")
echo "metric=merged_bytes value=$BYTES unit=B"
for K in $RANKS; do
  rm -f "$OUT"
  /usr/bin/time -f "%e %U %S %M" -o "$DIR/time.txt" mpirun --oversubscribe -np "$K" "$BUILD/bin/omniprof" merge \
    --mpi --fan-in "$F" --times -o "$OUT" "$M"/r*.db 2> "$DIR/times.txt"
  read SECS USR SYS RSS < "$DIR/time.txt"
  echo "metric=merge_mpi_seconds value=$SECS unit=s ranks=$K fan_in=$F cpu=$(echo "$USR + $SYS" | bc)" \
       "max_rss_mib=$((RSS / 1024)) $(grep 'leaves' "$DIR/times.txt" | sed 's/^omniprof merge --mpi: //')"
done
rm -f "$OUT"
