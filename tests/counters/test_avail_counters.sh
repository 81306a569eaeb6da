#!/bin/sh
# test_avail_counters.sh — `omniprof avail --counters` / `--pmc-check` offline (no GPU): the
# GH100 listing, pass counts, exit statuses (0 ok, 2 bad input, 3 not collectable in the mode),
# closest matches of an unknown name, extra metrics files and their errors.
# Usage: test_avail_counters.sh OMNIPROF_BINARY
set -u
bin="$1"
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { # check NAME EXPECTED_RC PATTERN -- command...
    name=$1; want_rc=$2; pattern=$3; shift 4
    "$@" >"$tmp/out" 2>&1
    rc=$?
    if [ "$rc" != "$want_rc" ]; then echo "FAIL $name: exit $rc, expected $want_rc"; cat "$tmp/out"; fail=1; return; fi
    if ! grep -q -- "$pattern" "$tmp/out"; then echo "FAIL $name: output lacks '$pattern'"; cat "$tmp/out"; fail=1; return; fi
    echo "ok   $name"
}
if ! "$bin" avail --counters --list-chips >"$tmp/chips" 2>&1; then
    if grep -q 'no hardware-counter backend\|cannot load libomniprof-sdk' "$tmp/chips"; then
        echo "SKIP: $(cat "$tmp/chips")"; exit 77
    fi
fi
check list-chips 0 '^GH100$' -- "$bin" avail --counters --list-chips
check list 0 'base (3389 counters, 205 ratios, 56 throughputs), 21 derived' -- "$bin" avail --counters --chip GH100
check list-derived 0 '^derived    DRAM_GBPS  *= DRAM_BYTES / gpu__time_duration.sum' -- "$bin" avail --counters --chip GH100 --derived
check grep 0 '^counter    dram__bytes_read (.sum .avg .min .max' -- "$bin" avail --counters --chip GH100 --grep dram__bytes_read
check one-pass 0 'GH100: 2 counters (3 base metrics with gpu__time_duration.sum) need 1 pass' -- "$bin" avail --pmc-check dram__bytes_read.sum sm__cycles_elapsed.max --chip GH100
check eight-pass 0 'kernel replay: each counted dispatch runs 8 times' -- "$bin" avail --pmc-check sm__throughput.avg.pct_of_peak_sustained_elapsed --chip GH100
check mode-none 3 "not collectable with replay mode 'none'" -- "$bin" avail --pmc-check sm__throughput.avg.pct_of_peak_sustained_elapsed --replay-mode none
check mode-none-env 3 "not collectable with replay mode 'none'" -- env OMNIPROF_PMC_REPLAY_MODE=none "$bin" avail --pmc-check sm__throughput.avg.pct_of_peak_sustained_elapsed
check max-passes 3 'more than OMNIPROF_PMC_MAX_PASSES=4' -- env OMNIPROF_PMC_MAX_PASSES=4 "$bin" avail --pmc-check sm__throughput.avg.pct_of_peak_sustained_elapsed
check bad-mode 2 "replay mode 'user' is not valid" -- "$bin" avail --pmc-check dram__bytes_read.sum --replay-mode user
check unknown 2 "unknown counter or metric 'dram__bytes_red.sum' for GH100; closest: dram__bytes_read.sum" -- "$bin" avail --pmc-check dram__bytes_red.sum
check bare-base 2 "closest: sm__cycles_elapsed." -- "$bin" avail --pmc-check sm__cycles_elapsed
check unknown-chip 2 "unknown chip 'GX999'" -- "$bin" avail --counters --chip GX999
check no-names 2 "'--pmc-check' needs at least one value: COUNTER" -- "$bin" avail --pmc-check
check derived-pass 0 'need 2 passes' -- "$bin" avail --pmc-check DRAM_GBPS FP32_GFLOPS --chip GH100
check const-other-chip 2 "constant 'MEM_CLOCK_HZ' has no value for AD102" -- "$bin" avail --pmc-check DRAM_PCT_OF_PEAK --chip AD102
cat >"$tmp/extra.xml" <<'X'
<omniprof-metrics><global>
  <metric name="MY_RATIO" expr="dram__bytes_read.sum / dram__bytes_write.sum" descr="read/write"/>
</global></omniprof-metrics>
X
check extra 0 'MY_RATIO  *= dram__bytes_read.sum / dram__bytes_write.sum' -- env OMNIPROF_EXTRA_METRICS="$tmp/extra.xml" "$bin" avail --counters --chip GH100 --derived
check extra-check 0 'need 1 pass' -- env OMNIPROF_EXTRA_METRICS="$tmp/extra.xml" "$bin" avail --pmc-check MY_RATIO --chip GH100
check extra-option 0 'need 1 pass' -- "$bin" avail --pmc-check MY_RATIO --chip GH100 --extra-metrics "$tmp/extra.xml"
check extra-missing 2 "unknown counter or metric 'MY_RATIO'" -- "$bin" avail --pmc-check MY_RATIO --chip GH100
cat >"$tmp/bad.xml" <<'X'
<omniprof-metrics><global>
  <metric name="BROKEN" expr="dram__bytes_read.sum * * 2"/>
</global></omniprof-metrics>
X
check extra-bad 0 "bad.xml:2: metric 'BROKEN': bad expression: unexpected '\*' where a number, name or '(' was expected at column 24" -- env OMNIPROF_EXTRA_METRICS="$tmp/bad.xml" "$bin" avail --counters --chip GH100 --derived
check metrics-path 0 ', 1 derived' -- env OMNIPROF_METRICS_PATH="$tmp/extra.xml" "$bin" avail --counters --chip GH100 --derived
# --extra-metrics F on the listing: F's metrics are listed (as with OMNIPROF_EXTRA_METRICS); a
# missing or invalid F, or no F, is refused naming it (exit 2), not ignored
check extra-list-option 0 'MY_RATIO  *= dram__bytes_read.sum / dram__bytes_write.sum' -- "$bin" avail --counters --chip GH100 --derived --extra-metrics "$tmp/extra.xml"
check extra-list-count 0 '22 derived' -- "$bin" avail --counters --chip GH100 --extra-metrics="$tmp/extra.xml"
check extra-list-missing 2 "--extra-metrics $tmp/none.xml: cannot be read" -- "$bin" avail --counters --chip GH100 --extra-metrics "$tmp/none.xml"
check extra-list-bad 2 "extra-metrics $tmp/bad.xml: .*:2: metric 'BROKEN': bad expression" -- "$bin" avail --counters --chip GH100 --extra-metrics "$tmp/bad.xml"
check extra-list-second-bad 2 "extra-metrics $tmp/bad.xml" -- "$bin" avail --counters --chip GH100 --extra-metrics "$tmp/extra.xml:$tmp/bad.xml"
check extra-list-no-file 2 "'--extra-metrics' needs a value: FILE.xml" -- "$bin" avail --counters --chip GH100 --extra-metrics
check extra-check-missing 2 "--extra-metrics $tmp/none.xml: cannot be read" -- "$bin" avail --pmc-check dram__bytes_read.sum --chip GH100 --extra-metrics "$tmp/none.xml"
exit $fail
