#!/bin/sh
# demo.sh BUILD_DIR — `make demo`: profile the bundled example (examples/demo: threads, user-API
# ranges and marks, three hot functions, a barrier) with call-stack sampling, markers and
# wrapped calls; write the database, a Perfetto trace, the HTML report and a flame graph SVG;
# print a short summary and the paths. On a machine with an NVIDIA GPU (nvidia-smi lists one)
# and the CUDA example built (examples/demo/demo_cuda.cu, needs nvcc), the CUDA example is
# profiled too (kernels, copies, NVTX ranges) into its own database and report.
# Colours only on a terminal and without NO_COLOR (https://no-color.org).
set -eu
build=${1:-build}
here=$(cd "$(dirname "$0")/.." && pwd)
case $build in /*) ;; *) build=$here/$build ;; esac
omniprof=$build/bin/omniprof
demo=$build/bin/omniprof-demo
for f in "$omniprof" "$demo"; do
    if [ ! -x "$f" ]; then
        echo "demo: $f is missing; build first (make build)" >&2
        exit 1
    fi
done
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ] && [ "${TERM:-}" != dumb ]; then
    B=$(printf '\033[1m'); G=$(printf '\033[32m'); C=$(printf '\033[36m'); R=$(printf '\033[0m')
else
    B=; G=; C=; R=
fi
step() { printf '\n%s== %s%s\n' "$C" "$*" "$R"; }
out=${OMNIPROF_DEMO_DIR:-$here/omniprof-output/demo}
mkdir -p "$out"
# a fresh run each time: the outputs of the previous demo go (only the demo's own names)
for f in "$out"/demo*_results.db "$out"/demo*_results.db-wal "$out"/demo*_results.db-shm "$out"/demo*_results.pftrace \
         "$out"/demo*_report.html "$out"/demo*_flamegraph.svg "$out"/demo*_wall_clock.*; do
    [ -e "$f" ] && rm -f "$f"
done

# Wrapped calls: pthread_create is always wrapped; the barrier and the joins too, here.
export OMNIPROF_TRACE_THREAD_BARRIERS=true OMNIPROF_TRACE_THREAD_JOIN=true
step "omniprof run --sample --marker-trace -f rocpd pftrace -d $out -o demo -- omniprof-demo 4 200"
"$omniprof" run --sample --marker-trace -f rocpd pftrace -d "$out" -o demo -- "$demo" 4 200
db=$out/demo_results.db
if [ ! -f "$db" ]; then
    echo "demo: no database was written ($db)" >&2
    exit 1
fi
report() { # DB NAME: the HTML report and the flame graph of one database
    step "omniprof report -i $1 -o $out/$2_report.html"
    "$omniprof" report -i "$1" -o "$out/$2_report.html"
    step "omniprof convert -i $1 -f svg -d $out -o $2"
    "$omniprof" convert -i "$1" -f svg -d "$out" -o "$2"
}
report "$db" demo

# The Python example (examples/demo/demo.py): its flame graph names the Python functions
# the interpreter itself, not a wrapper script (pyenv's shims fork and exec: each fork would
# get a database of its own)
py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null || true)
if [ -n "$py" ]; then
    step "omniprof run --sample -d $out -o demo_python -- python3 examples/demo/demo.py"
    if "$omniprof" run --sample --sampling-freq 500 -d "$out" -o demo_python -- "$py" "$here/examples/demo/demo.py"; then
        report "$out/demo_python_results.db" demo_python
    fi
fi

cuda_db=
if [ -x "$build/bin/omniprof-demo-cuda" ] && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    step "omniprof run --runtime-trace --sample -f rocpd pftrace -d $out -o demo_cuda -- omniprof-demo-cuda"
    if "$omniprof" run --runtime-trace --sample -f rocpd pftrace -d "$out" -o demo_cuda -- "$build/bin/omniprof-demo-cuda"; then
        cuda_db=$out/demo_cuda_results.db
        report "$cuda_db" demo_cuda
    fi
fi

step "what was recorded"
"$omniprof" query -i "$db" --sql "SELECT name AS range, count(*) AS calls, round(sum(duration) / 1e6, 1) AS total_ms FROM regions GROUP BY name ORDER BY sum(duration) DESC LIMIT 8"
"$omniprof" summary -i "$db" --cpu-profile flat 2>/dev/null | sed -n '/CPU flat profile/,/^$/p' | head -9
if [ -n "$cuda_db" ]; then
    "$omniprof" query -i "$cuda_db" --sql "SELECT name AS kernel, count(*) AS calls, round(sum(duration) / 1e3, 1) AS total_us FROM kernels GROUP BY name ORDER BY sum(duration) DESC LIMIT 5"
fi

step "outputs"
show() { [ -e "$2" ] && printf '  %-13s %s%s%s\n' "$1" "$B" "$2" "$R"; return 0; }
show "database" "$db"
show "Perfetto" "$out/demo_results.pftrace"
show "report" "$out/demo_report.html"
show "flame graph" "$out/demo_flamegraph.svg"
show "Python flame" "$out/demo_python_flamegraph.svg"
if [ -n "$cuda_db" ]; then
    show "CUDA database" "$cuda_db"
    show "CUDA Perfetto" "$out/demo_cuda_results.pftrace"
    show "CUDA report" "$out/demo_cuda_report.html"
fi
printf '\n%sOpen the report in a browser%s (file://%s), the trace at https://ui.perfetto.dev,\n' "$G" "$R" "$out/demo_report.html"
echo "query the database with SQL: $omniprof query -i $db --sql 'SELECT name, count(*) FROM regions GROUP BY name'"

step "what to fix: omniprof analyze -i $db"
"$omniprof" analyze -i "$db" --top 5 2>&1 | sed -n '1,/^Critical path/p' | sed '$d'
