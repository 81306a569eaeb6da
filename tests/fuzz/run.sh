#!/bin/sh
# run.sh — runs the libFuzzer harnesses of tests/fuzz (README.md in this folder).
#
#   run.sh ci BIN CORPUS WORK SECONDS     one harness for CTest (fuzz.NAME): the committed corpus
#                                         replayed, then SECONDS of fuzzing with seed FUZZ_SEED
#                                         (default 1); new inputs go to WORK/new (emptied
#                                         first), never into the corpus
#   run.sh all BUILD SECONDS [NAME...]    `make fuzz`: every harness of BUILD/bin (or the NAMEs),
#                                         SECONDS each; new inputs are kept in WORK/NAME/new across
#                                         runs (WORK: $FUZZ_WORK, default BUILD/work); a table of
#                                         the figures at the end (also in WORK/../fuzz-summary.txt)
#
# A crash, a leak, a broken invariant, an input slower than 30 s or a run over 2 GiB is a
# failure: the reproducer is WORK/crash-* (or leak-*, timeout-*, oom-*) and the report is
# printed; replay it with `BIN REPRODUCER`, fix, and commit the reproducer into the corpus.
set -u
here=$(cd "$(dirname "$0")" && pwd)

# fuzz_one NAME BIN CORPUS WORK SECONDS: prints one line; returns 0, or 1 on a finding.
fuzz_one() {
    local name=$1 bin=$2 corpus=$3 work=$4 secs=$5 log start rc took runs ncorp nnew
    mkdir -p "$work/new"
    log=$work/log.txt
    set -- -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 -close_fd_mask=3 -print_final_stats=1 \
        -artifact_prefix="$work/"
    [ -f "$here/dict/$name.dict" ] && set -- "$@" -dict="$here/dict/$name.dict"
    [ -n "${FUZZ_SEED:-}" ] && set -- "$@" -seed="$FUZZ_SEED"
    start=$(date +%s)
    "$bin" "$@" "$work/new" "$corpus" >"$log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    ncorp=$(ls "$corpus" | wc -l)
    nnew=$(ls "$work/new" | wc -l)
    if [ $rc -ne 0 ]; then
        echo "fuzz $name: FAILED (exit $rc) after ${runs:-?} runs in $took s; reproducer: $(ls -t "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2>/dev/null | head -1)"
        awk '/==[0-9]+==ERROR|fuzz invariant|runtime error|ERROR: libFuzzer|ALARM: working/ {p = 1} p' "$log" | head -n 80
        echo "$name	$took	${runs:-?}	$ncorp	$nnew	FAILED" >>"$work/../figures.tsv"
        return 1
    fi
    echo "fuzz $name: ${runs:-?} runs in $took s over $ncorp corpus files (+$nnew new inputs), no crash"
    echo "$name	$took	${runs:-?}	$ncorp	$nnew	ok" >>"$work/../figures.tsv"
    return 0
}

case "${1:-}" in
ci)
    [ $# -eq 5 ] || { echo "usage: run.sh ci BIN CORPUS WORK SECONDS" >&2; exit 2; }
    [ -x "$2" ] || { echo "fuzz: $2 is not built (the omniprof-fuzzers external project builds it)" >&2; exit 1; }
    rm -rf "$4/new"
    # a fixed seed (FUZZ_SEED, default 1): the same mutations on every run, so CI does not fail
    # at random on a finding unrelated to the change (a slower machine runs a prefix of them)
    FUZZ_SEED=${FUZZ_SEED:-1}
    fuzz_one "$(basename "$2" | sed 's/^fuzz_//')" "$2" "$3" "$4" "$5"
    ;;
all)
    [ $# -ge 3 ] || { echo "usage: run.sh all BUILD SECONDS [NAME...]" >&2; exit 2; }
    build=$2 secs=$3
    shift 3
    names=$*
    [ -n "$names" ] || names=$(cd "$build/bin" && ls fuzz_* | sed 's/^fuzz_//')
    work=${FUZZ_WORK:-$build/work}
    mkdir -p "$work"
    : >"$work/figures.tsv"
    failed=0
    for n in $names; do
        fuzz_one "$n" "$build/bin/fuzz_$n" "$here/corpus/$n" "$work/$n" "$secs" || failed=1
    done
    {
        echo "harness	seconds	runs	corpus	new	result"
        cat "$work/figures.tsv"
    } | { command -v column >/dev/null && column -t -s '	' || cat; } | tee "$work/../fuzz-summary.txt"
    exit $failed
    ;;
*)
    sed -n '2,13p' "$0" >&2
    exit 2
    ;;
esac
