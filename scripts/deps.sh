#!/bin/sh
# deps.sh [--check] — the Debian packages of scripts/deps.txt (one per line: the name, then what
# it is needed for).
#   deps.sh          `make deps`: installs the missing ones, one line per package saying what
#                    and why ("make deps: installing X (needed for Y)"); quiet and quick when
#                    all are present; uses sudo when not root. The only place that installs.
#   deps.sh --check  `make test` and the other test targets: installs nothing; names each
#                    missing package and why, then the exact command to install them, and
#                    exits 1; exits 0 when all are present.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:-install}
missing=""
reasons=""
while read -r pkg why; do
    case $pkg in ''|'#'*) continue ;; esac
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $pkg"
        reasons="$reasons$pkg ($why)
"
    fi
done < "$here/deps.txt"
[ -z "$missing" ] && exit 0
if [ "$mode" = "--check" ]; then
    printf '%s' "$reasons" | sed 's/^/missing Debian package: /; s/ (/ (needed for /' >&2
    echo "install the missing packages with: make deps" >&2
    exit 1
fi
printf '%s' "$reasons" | sed 's/^/make deps: installing /; s/ (/ (needed for /'
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
