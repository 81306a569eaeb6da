#!/bin/sh
# netns_rsh.sh — the remote shell through which mpirun starts its daemon (orted) on a simulated
# host of tests/mpi/netns_hosts.py: instead of ssh, the command runs inside that host's network
# namespace (ip netns exec, which also mounts /etc/netns/NETNS/hosts over /etc/hosts), in a new
# UTS namespace whose host name is the host's and a new time namespace whose CLOCK_MONOTONIC is
# OFFSET seconds ahead of the machine's.
#
# usage (mpirun --mca plm_rsh_agent "netns_rsh.sh HOST=NETNS,OFFSET ..."): mpirun appends the
# host name and the daemon's command line, as it does to ssh:
#   netns_rsh.sh HOST=NETNS,OFFSET... HOST COMMAND...
maps=
while [ $# -gt 0 ]; do
    case "$1" in
        *=*) maps="$maps $1"; shift ;;
        *) break ;;
    esac
done
host=$1
[ -n "$host" ] && shift
for m in $maps; do
    if [ "${m%%=*}" = "$host" ]; then
        spec=${m#*=}
        exec ip netns exec "${spec%%,*}" unshare --uts --time --monotonic "${spec#*,}" --fork -- \
            sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
    fi
done
echo "netns_rsh.sh: no simulated host '$host' (known:$maps)" >&2
exit 255
