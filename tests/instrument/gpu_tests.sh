#!/bin/bash
# tests/instrument/gpu_tests.sh — hook for tests/gpu/run.sh (part 4): `omniprof attach` to a
# running CUDA program. The program launches a kernel every 2 ms for 12 s; omniprof attaches after
# 3 s for 3 s with --kernel-trace. Checks: the database holds attach_probe_kernel dispatches, all
# of them after the attach began (CUPTI subscribed late), none after it ended, every one with its
# launching call, and CUPTI off after the detach (no GPU record of a later kernel); the program ends
# with its own output and status 7. Usage: gpu_tests.sh BUILD_DIR. Prints PASS/FAIL lines.
B=${1:-gpu-build}
prog=$B/bin/omniprof-gpu-attach-target
if [ ! -x "$prog" ]; then echo "FAIL instrument.gpu_attach: $prog not built (tests/gpu/prepare.sh)"; exit 0; fi
# the logs stay in the caller's $OUT (run.sh); a folder of our own is removed at the end
if [ -n "${OUT:-}" ]; then d=$(mktemp -d "$OUT/gpu-attach-XXXXXX")
else d=$(mktemp -d); trap 'rm -rf "$d"' EXIT; fi
"$prog" 12 > "$d/prog.out" 2> "$d/prog.err" &
pid=$!
for _ in $(seq 50); do grep -q '^pid' "$d/prog.out" 2>/dev/null && break; sleep 0.1; done
sleep 3
t0=$(date +%s%N)
timeout 60 "$B/bin/omniprof" attach -p "$pid" --duration 3 --kernel-trace -d "$d/db" > "$d/attach.out" 2> "$d/attach.err"
arc=$?
t1=$(date +%s%N)
# the program ends 12 s after it started: a program still running 20 s after the attach is hung
# (the profiler must never hang it): say where each thread waits, then end it
for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
  echo "FAIL instrument.gpu_attach: the program is hung 20 s after the attach (attach exit $arc); its threads:"
  python3 "$(dirname "$0")/thread_dump.py" "$pid" 2>&1 | sed 's/^/  /'
  kill -9 "$pid"; wait "$pid" 2>/dev/null
  exit 0
fi
wait "$pid"; prc=$?
db=$(ls "$d"/db/*/*_results.db 2>/dev/null | head -1)
msg="attach exit $arc, program exit $prc ($(tail -1 "$d/prog.out")), db ${db:-none}"
if [ "$arc" != 0 ] || [ "$prc" != 7 ] || ! grep -q '^done' "$d/prog.out" || [ -z "$db" ]; then
  echo "FAIL instrument.gpu_attach: $msg; $(tail -3 "$d/attach.err" | tr '\n' ' ')"; exit 0
fi
res=$(python3 - "$db" "$t0" "$t1" <<'PY'
import sqlite3, sys, time
db, t0, t1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
con = sqlite3.connect(db)
rows = con.execute("SELECT start, \"end\" FROM kernels WHERE name LIKE '%attach_probe_kernel%'").fetchall()
# wall-clock bounds of the attach, on the database's monotonic clock
mono_now, wall_now = time.monotonic_ns(), time.time_ns()
lo, hi = t0 - wall_now + mono_now, t1 - wall_now + mono_now
inside = sum(1 for s, e in rows if lo <= s <= hi)
print("%d %d" % (len(rows), inside))
PY
)
n=${res% *}; inside=${res#* }
# every traced kernel has its launching call (a CUPTI that joins late records no call of a per-call
# enable: the backend takes the whole runtime kind when attached), and after the detach CUPTI is
# off: the kernels the program launches then are not recorded at all (before, ~1,200 per run reached
# the backend without their launching call, and every traced kernel lacked it: "cuda: N GPU
# records without their launching call" at exit)
unres=$(grep -o "[0-9]* GPU records without their launching call" "$d/prog.err" | head -1 | cut -d' ' -f1)
msg="$msg, GPU records without their launch: ${unres:-0} (want <= 20)"
if [ "${n:-0}" -ge 100 ] && [ "$n" = "$inside" ] && [ "${unres:-0}" -le 20 ]; then
  echo "PASS instrument.gpu_attach: $n kernels launched after the attach traced, all within it; $msg"
else
  echo "FAIL instrument.gpu_attach: kernels $n (inside the attach window: $inside; expected >= 100, all); $msg"
fi
