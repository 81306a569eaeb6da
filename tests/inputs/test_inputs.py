#!/usr/bin/env python3
"""`omniprof run -i FILE` on input files as rocprofv3 users write them (tests/inputs/files: 18
files of our own, in rocprofv3's three formats: text `pmc:` lines, JSON and YAML `jobs:` lists,
with the option names of rocprofv3's CLI).

Cases (argv[1]):
  resolve      each file under `--output-config` (which prints the settings the program would
               get, with where each came from, and exits): status 0, the settings the file
               means (EXPECT below), and one warning per rocprofv3 option without a CUDA/CPU
               meaning, naming it (SKIPPED below) — never a refusal.
  passes       17_jobs_differ.json on a real program: its two jobs differ in more than pmc, so
               each runs as a pass of its own: two databases, the second with its CSV files, and
               one line per pass saying so.
  refusals     an unknown key that is no rocprofv3 option still fails (status 2, naming it);
               --input-job outside the jobs fails naming the valid range.
Exit 0 pass, 1 fail."""
import argparse
import os
import re
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import check, done  # noqa: E402 (tests/testlib.py: the one assertion helper)

A = None
HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, "files")

# file -> the settings it must set (OMNIPROF_ name without the prefix -> value)
EXPECT = {
    "01_pmc_one.txt": {"PMC": "sm__cycles_elapsed.avg dram__bytes_read.sum"},
    "02_pmc_two_passes.txt": {"PMC": "sm__cycles_elapsed.avg"},
    "03_pmc_comments.txt": {"PMC": "sm__cycles_elapsed.avg"},
    "04_kernel_trace.json": {"KERNEL_TRACE": "true"},
    "05_runtime_trace.yaml": {"KERNEL_TRACE": "true", "CUDA_RUNTIME_API_TRACE": "true",
                              "MARKER_TRACE": "true", "OUTPUT_FORMAT": "rocpd"},
    "06_sys_trace_stats.json": {"CUDA_DRIVER_API_TRACE": "true", "SYNC_TRACE": "true",
                                "STATS": "true", "SUMMARY": "true", "SUMMARY_UNITS": "usec"},
    "07_hip_hsa.yaml": {"CUDA_RUNTIME_API_TRACE": "true", "CUDA_DRIVER_API_TRACE": "true",
                        "MARKER_TRACE": "true"},
    "08_amd_only.yaml": {"KERNEL_TRACE": "true"},
    "09_perfetto.json": {"KERNEL_TRACE": "true", "MEMORY_COPY_TRACE": "true",
                         "OUTPUT_FORMAT": "pftrace"},
    "10_thread_trace.yaml": {"KERNEL_TRACE": "true"},
    "11_kernel_filter.json": {"PMC": "sm__cycles_elapsed.avg", "KERNEL_INCLUDE_REGEX": "gemm",
                              "KERNEL_EXCLUDE_REGEX": "copy",
                              "KERNEL_ITERATION_RANGE": "[1, [3-5]]"},
    "12_kernel_names.yaml": {"TRUNCATE_KERNELS": "true", "KERNEL_RENAME": "true"},
    "13_collection_period.yaml": {"COLLECTION_PERIOD": "1000000:2000000:3"},
    "14_output.json": {"OUTPUT_FILE": "%pid%_trace", "OUTPUT_FORMAT": "csv json"},
    "15_summary.yaml": {"SUMMARY": "true", "SUMMARY_OUTPUT_FILE": "stdout",
                        "SUMMARY_GROUPS": "KERNEL_DISPATCH|MEMORY_COPY"},
    "16_pmc_jobs.yaml": {"PMC": "sm__cycles_elapsed.avg", "KERNEL_INCLUDE_REGEX": ".*"},
    "17_jobs_differ.json": {"MARKER_TRACE": "true", "OUTPUT_FILE": "markers"},
    "18_nccl_um.yaml": {"NCCL_TRACE": "true", "UNIFIED_MEMORY_TRACE": "true"},
}
# file -> the keys reported and skipped
SKIPPED = {
    "08_amd_only.yaml": ["hip_compiler_trace", "hsa_image_trace", "hsa_finalizer_trace",
                         "scratch_memory_trace", "rocdecode_trace", "rocjpeg_trace"],
    "09_perfetto.json": ["perfetto_backend", "perfetto_buffer_size", "perfetto_buffer_fill_policy",
                         "perfetto_shmem_size_hint"],
    "10_thread_trace.yaml": ["advanced_thread_trace", "att_target_cu", "att_simd_select",
                             "att_buffer_size", "att_shader_engine_mask"],
    "17_jobs_differ.json": ["group_by_queue"],
    "18_nccl_um.yaml": ["kfd_queue_trace"],
}


def run(args, cwd):
    return subprocess.run([A.omniprof, "run"] + args, capture_output=True, text=True, timeout=240,
                          cwd=cwd)


def settings(text):
    out = {}
    for line in text.splitlines():
        m = re.match(r"OMNIPROF_(\w+) = (.*?)\s+# ", line)
        if m:
            out.setdefault(m.group(1), m.group(2).strip('"'))
    return out


def case_resolve(wd):
    files = sorted(os.listdir(FILES))
    check(len(files) == 18 and sorted(EXPECT) == files, "18 input files, each with its expectation")
    for f in files:
        r = run(["-i", os.path.join(FILES, f), "--output-config", "--", "/bin/true"], wd)
        got = settings(r.stdout)
        bad = {k: (v, got.get(k)) for k, v in EXPECT[f].items() if got.get(k) != v}
        check(r.returncode == 0 and not bad, "%s: status %d, settings as meant%s" % (
            f, r.returncode, "" if not bad else " — wrong: %r (%s)" % (bad, r.stderr.strip()[-200:])))
        warned = re.findall(r'warning: -i \S+: line \d+: "(\w+)" is a rocprofv3 option without a '
                            r'CUDA/CPU meaning: skipped', r.stderr)
        check(sorted(set(warned)) == sorted(SKIPPED.get(f, [])),
              "%s: skipped with a warning: %s" % (f, sorted(set(warned))))


def case_passes(wd):
    f = os.path.join(FILES, "17_jobs_differ.json")
    r = run(["-i", f, "--", A.prog, "2", "1000", "100"], wd)
    print(r.stderr)
    check(r.returncode == 0, "status 0")
    check(r.stdout.count("diff_prog done") == 2, "the program ran twice (one pass per job)")
    check(len(re.findall(r"job \d of 2 \(the jobs differ in", r.stderr)) == 2, "one line per pass")
    p = os.path.join(wd, "passes")
    have = sorted(os.listdir(p)) if os.path.isdir(p) else []
    check("markers_results.db" in have and "csvpass_results.db" in have and
          "csvpass_marker_api_trace.csv" in have and "markers_marker_api_trace.csv" not in have,
          "each pass with its own options: %s" % have)


def case_refusals(wd):
    bad = os.path.join(wd, "typo.yaml")
    with open(bad, "w") as fh:
        fh.write("jobs:\n  - kernel_trce: true\n")
    r = run(["-i", bad, "--output-config", "--", "/bin/true"], wd)
    check(r.returncode == 2 and "kernel_trce" in r.stderr, "an unknown key: status 2 naming it (%s)"
          % r.stderr.strip())
    r = run(["-i", os.path.join(FILES, "17_jobs_differ.json"), "--input-job", "3",
             "--output-config", "--", "/bin/true"], wd)
    check(r.returncode == 2 and "1 to 2" in r.stderr, "--input-job 3 of 2 jobs: status 2 (%s)"
          % r.stderr.strip())


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--omniprof", required=True)
    ap.add_argument("--prog", required=True)
    A = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="omniprof-inputs-") as wd:
        {"resolve": case_resolve, "passes": case_passes, "refusals": case_refusals}[A.case](wd)
    if done():
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
