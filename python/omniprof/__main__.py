"""python3 -m omniprof {convert,merge,summary,query} ... — the same commands, options, results and
exit codes as the omniprof binary (both run op_output_cli in libomniprof-output.so)."""

import sys

from . import Error, cli

USAGE = """usage: python3 -m omniprof COMMAND [options]

commands:
  convert   databases to pftrace, json, csv, folded (streaming; time windows)
  merge     many databases into one
  summary   per-domain statistics tables (and CPU sampling profiles)
  query     read-only SQL over the union of the inputs' views

`python3 -m omniprof COMMAND --help` describes a command's options.
exit status: 0 ok, 1 failure, 2 bad input
"""


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return 0 if argv else 2
    if argv[0] not in ("convert", "merge", "summary", "query"):
        sys.stderr.write("omniprof: unknown command '%s'\n%s" % (argv[0], USAGE))
        return 2
    try:
        return cli(argv)
    except Error as e:
        sys.stderr.write("omniprof: %s\n" % e)
        return e.status


if __name__ == "__main__":
    sys.exit(main())
