"""python3 -m omniprof COMMAND ... — the same commands, options, results and exit codes as the
omniprof binary (both run op_output_cli in libomniprof-output.so). The commands and their one-line
summaries are read from that library's command table (op_output_cli_command_at), the one place
they are defined."""

import ctypes
import sys

from . import Error, _load, cli


class _Command(ctypes.Structure):
    # the first two fields of struct op_cli_command (src/common/cli_opt.h): name, summary
    _fields_ = [("name", ctypes.c_char_p), ("summary", ctypes.c_char_p)]


def commands():
    """[(name, one-line summary)] of the commands `python3 -m omniprof` runs, in table order."""
    lib = _load()
    at = lib.op_output_cli_command_at
    at.argtypes = [ctypes.c_size_t]
    at.restype = ctypes.POINTER(_Command)
    out = []
    while True:
        p = at(len(out))
        if not p:
            return out
        out.append((p.contents.name.decode(), p.contents.summary.decode()))


def usage():
    cmds = commands()
    width = max(len(n) for n, _ in cmds) + 2
    return ("usage: python3 -m omniprof COMMAND [options]\n\ncommands:\n" +
            "".join("  %-*s%s\n" % (width, n, s) for n, s in cmds) +
            "\n`python3 -m omniprof COMMAND --help` describes a command's options.\n"
            "exit status: 0 ok, 1 failure, 2 bad input\n")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        if not argv or argv[0] in ("-h", "--help", "help"):
            sys.stdout.write(usage())
            return 0 if argv else 2
        status = cli(argv)  # an unknown command: the library says so, naming the valid ones
        if argv[0] not in [n for n, _ in commands()]:
            sys.stderr.write(usage())
        return status
    except Error as e:
        sys.stderr.write("omniprof: %s\n" % e)
        return e.status


if __name__ == "__main__":
    sys.exit(main())
