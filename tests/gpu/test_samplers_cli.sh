#!/bin/sh
# test_samplers_cli.sh OMNIPROF — the GPU samplers' offline checks (no GPU needed; runs in CI):
# `avail --pm-metrics` lists GH100's PM-sampling catalog; `avail --pm-check` accepts a one-pass set,
# names unknown metrics (exit 2) and refuses a multi-pass set (exit 3, "19 passes");
# `run --pm-sampling` with an unknown metric and `run --sass-metrics` with --pc-sampling stop
# before the program runs (exit 2, the program's output absent); a valid set runs the program.
# OPTEST_SANITIZED=1 (sanitizer builds): the checks that reach CUPTI's host API are skipped with
# a SKIP line (it dlopens libnvperf_host.so with RTLD_DEEPBIND, which the sanitizer runtimes
# abort on); they run in the normal build.
B=$1
fail=0
t() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
out=$("$B" run -d "$d/b" --sass-metrics k --pc-sampling -- echo PROGRAM-RAN 2>&1); rc=$?
t "run --sass-metrics with --pc-sampling: refused (exit 2)" '[ $rc = 2 ] && ! echo "$out" | grep -q PROGRAM-RAN'
if [ -n "$OPTEST_SANITIZED" ]; then
  echo "SKIP: the PM-sampling checks (CUPTI host API: RTLD_DEEPBIND) under sanitizers"
  exit $fail
fi
out=$("$B" avail --pm-metrics --grep dram__bytes_read 2>&1); rc=$?
t "pm-metrics lists dram__bytes_read" '[ $rc = 0 ] && echo "$out" | grep -q "^dram__bytes_read "'
out=$("$B" avail --pm-check dram__bytes_read.sum sm__cycles_active.avg gr__cycles_active.avg 2>&1); rc=$?
t "pm-check: a one-pass set" '[ $rc = 0 ] && echo "$out" | grep -q "3 metrics in 1 pass"'
out=$("$B" avail --pm-check bogus.sum dram__bytes_read.sum 2>&1); rc=$?
t "pm-check: an unknown name is named (exit 2)" '[ $rc = 2 ] && echo "$out" | grep -q "not PM-sampling metrics of GH100: bogus.sum"'
out=$("$B" avail --pm-check sm__throughput.avg.pct_of_peak_sustained_elapsed 2>&1); rc=$?
t "pm-check: a multi-pass set (exit 3)" '[ $rc = 3 ] && echo "$out" | grep -q "19 passes"'
out=$("$B" avail --pm-check dram__bytes_read.sum --chip NOSUCHCHIP 2>&1); rc=$?
t "pm-check: an unknown chip (exit 2)" '[ $rc = 2 ] && echo "$out" | grep -q "NOSUCHCHIP"'
out=$("$B" run -d "$d/a" --pm-sampling bogus.sum -- echo PROGRAM-RAN 2>&1); rc=$?
t "run --pm-sampling bogus: not run (exit 2)" '[ $rc = 2 ] && ! echo "$out" | grep -q PROGRAM-RAN && echo "$out" | grep -q "bogus.sum"'
out=$("$B" run -d "$d/c" --kernel-trace --unified-memory-trace --pm-sampling dram__bytes_read.sum --sass-metrics k_ \
      -- echo PROGRAM-RAN 2>&1); rc=$?
t "run with every sampler: the program runs (exit 0)" '[ $rc = 0 ] && echo "$out" | grep -q PROGRAM-RAN && echo "$out" | grep -q "1 metric in one pass"'
exit $fail
