#!/bin/sh
# demo.sh BUILD_DIR — `make demo`: run the bundled example (examples/demo) under
# `omniprof run --marker-trace --stats --summary` and show what was recorded and where.
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
out=${OMNIPROF_DEMO_DIR:-$here/omniprof-output/demo}
mkdir -p "$out"
rm -f "$out"/demo*_results.db "$out"/demo*_results.db-wal "$out"/demo*_results.db-shm "$out"/demo*_stats.csv
echo "== omniprof run --marker-trace --stats --summary -d $out -o demo -- omniprof-demo 4 50"
"$omniprof" run --marker-trace --stats --summary --summary-output-file stdout -d "$out" -o demo -- "$demo" 4 50
db=$out/demo_results.db
echo
if [ ! -f "$db" ]; then
    echo "demo: no database was written ($db)" >&2
    exit 1
fi
if ! "$omniprof" summary --help >/dev/null 2>&1; then
    # Without the output library: counts straight from the database.
    echo "== what the database holds ($db)"
    python3 - "$db" <<'PY'
import sqlite3, sys
con = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
print("schema_version:", con.execute("SELECT value FROM rocpd_metadata WHERE tag='schema_version'").fetchone()[0])
print("%-12s %6s %14s" % ("RANGE", "CALLS", "TOTAL (ns)"))
for name, n, tot in con.execute("SELECT name, count(*), sum(end - start) FROM regions GROUP BY name ORDER BY 3 DESC"):
    print("%-12s %6d %14d" % (name, n, tot))
print("marks:", con.execute("SELECT count(*) FROM rocpd_sample").fetchone()[0])
print("threads:", con.execute("SELECT count(*) FROM rocpd_info_thread").fetchone()[0])
PY
fi
echo
echo "== outputs in $out:"
ls -1 "$out" | sed 's/^/   /'
echo "Query it: $omniprof query -i $db --sql 'SELECT name, count(*) FROM regions GROUP BY name'"
echo "      or: python3 -c \"import sqlite3; print(sqlite3.connect('$db').execute('select count(*) from regions').fetchone())\""
