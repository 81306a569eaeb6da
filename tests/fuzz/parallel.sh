#!/bin/sh
# parallel.sh — every libFuzzer harness of BUILD/bin at once, one per core, SECONDS each: the
# long fuzzing pass of issue 11 on a machine with more cores than harnesses (the GPU host has
# 16). Same flags and per-harness work folders as `make fuzz` (run.sh all): new inputs are kept
# in WORK/NAME/new and used again by the next pass, so two passes of S seconds fuzz 2*S.
#
#   parallel.sh BUILD SECONDS [WORK]     WORK defaults to BUILD/work; figures in WORK/fuzz-summary.txt
set -u
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { sed -n '2,8p' "$0" >&2; exit 2; }
build=$1 secs=$2 work=${3:-$1/work}
mkdir -p "$work"
pids=
for b in "$build"/bin/fuzz_*; do
    n=$(basename "$b" | sed 's/^fuzz_//')
    FUZZ_WORK=$work/$n "$here/run.sh" all "$build" "$secs" "$n" >"$work/$n.out" 2>&1 &
    pids="$pids $!"
done
failed=0
for p in $pids; do wait "$p" || failed=1; done
{
    echo "harness	seconds	runs	corpus	new	result"
    cat "$work"/*/figures.tsv
} | { command -v column >/dev/null && column -t -s '	' || cat; } | tee "$work/fuzz-summary.txt"
[ $failed = 0 ] || grep -h -A40 FAILED "$work"/*.out
exit $failed
