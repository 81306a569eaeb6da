"""Two simulated hosts on one machine for tests/mpi/mpi_check.py (case hosts2, docs/multinode.md):
each host is a network namespace; a veth pair joins them (interface opveth0 on both sides, private
addresses 10.213.0.1 and 10.213.0.2, names hosta and hostb in /etc/netns/NETNS/hosts, and a
machine id of each host's own in /etc/netns/NETNS/machine-id: `ip netns exec` mounts both over
their /etc files). mpirun runs in host A's namespaces (network, and UTS with
host name hosta) and starts host B's daemon through tests/mpi/netns_rsh.sh, its rsh launch agent,
inside host B's network namespace, a UTS namespace (hostb) and a time namespace whose
CLOCK_MONOTONIC is the given number of seconds ahead. Open MPI talks over TCP on opveth0 only
(btl tcp,self: no shared memory between the hosts; oob and btl restricted to the interface).

SimHosts() is a context manager: it removes its namespaces, the veth pair (it goes with them),
the hosts files and any process left in the namespaces, also when the run fails; namespaces
left by a run that was killed (named after its pid) are removed by the next one."""
import os
import re
import shutil
import signal
import subprocess
import time
import uuid

PREFIX = "omniprof-sim"
IFACE = "opveth0"
SUBNET = "10.213.0"
HOSTS = ("hosta", "hostb")
AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netns_rsh.sh")


def _ip(*args, check=True):
    r = subprocess.run(["ip"] + list(args), capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), r.stderr.strip()))
    return r


def _namespaces():
    r = _ip("netns", "list", check=False)
    return [l.split()[0] for l in r.stdout.splitlines() if l.strip()]


def _remove(ns):
    """Ends the processes left in namespace ns, then removes it and its hosts file."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = [int(p) for p in _ip("netns", "pids", ns, check=False).stdout.split()]
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        if pids and sig == signal.SIGTERM:
            time.sleep(1)
    _ip("netns", "del", ns, check=False)
    shutil.rmtree(os.path.join("/etc/netns", ns), ignore_errors=True)


def _remove_stale():
    for ns in _namespaces():
        m = re.fullmatch(PREFIX + r"-(?:a|b|probe)-(\d+)", ns)
        if m and not os.path.exists("/proc/" + m.group(1)):
            _remove(ns)


def unavailable():
    """Why simulated hosts cannot be made here (None when they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root (euid %d)" % os.geteuid()
    for tool in ("ip", "unshare"):
        if not shutil.which(tool):
            return "'%s' is not installed (iproute2, util-linux)" % tool
    ns = "%s-probe-%d" % (PREFIX, os.getpid())
    r = _ip("netns", "add", ns, check=False)
    if r.returncode != 0:
        return "network namespaces are not available (ip netns add: %s)" % r.stderr.strip()
    try:
        r = _ip("-n", ns, "link", "add", "p0", "type", "veth", "peer", "name", "p1", check=False)
        if r.returncode != 0:
            return "veth pairs are not available (ip link add type veth: %s)" % r.stderr.strip()
        r = subprocess.run(["ip", "netns", "exec", ns, "unshare", "--uts", "--time", "--monotonic", "1", "--fork", "--",
                            "cat", "/proc/self/timens_offsets"], capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            return "time namespaces are not available in a network namespace (unshare --time: %s)" % r.stderr.strip()
    finally:
        _ip("netns", "del", ns, check=False)
    return None


class SimHosts:
    """hosta and hostb, host B's CLOCK_MONOTONIC skew_s seconds ahead of host A's."""

    def __init__(self, skew_s):
        self.skew_s = skew_s
        self.ns = ["%s-%s-%d" % (PREFIX, h[-1], os.getpid()) for h in HOSTS]
        self.machine_ids = [uuid.uuid4().hex for _ in HOSTS]

    def __enter__(self):
        _remove_stale()
        try:
            self._make()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _make(self):
        for ns in self.ns:
            _ip("netns", "add", ns)
        _ip("link", "add", IFACE, "netns", self.ns[0], "type", "veth", "peer", "name", IFACE, "netns", self.ns[1])
        hosts = "127.0.0.1 localhost\n" + "".join("%s.%d %s\n" % (SUBNET, i + 1, h) for i, h in enumerate(HOSTS))
        for i, ns in enumerate(self.ns):
            _ip("-n", ns, "addr", "add", "%s.%d/24" % (SUBNET, i + 1), "dev", IFACE)
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "link", "set", IFACE, "up")
            os.makedirs(os.path.join("/etc/netns", ns), exist_ok=True)
            for name, text in (("hosts", hosts), ("machine-id", self.machine_ids[i] + "\n")):
                with open(os.path.join("/etc/netns", ns, name), "w") as f:
                    f.write(text)

    def __exit__(self, *exc):
        for ns in self.ns:
            _remove(ns)
        return False

    def counters(self, i=0):
        """{'rx_bytes': n, 'tx_bytes': n} of host i's end of the veth pair (its /sys/class/net statistics)."""
        r = subprocess.run(["ip", "netns", "exec", self.ns[i], "sh", "-c",
                            "cat /sys/class/net/%s/statistics/rx_bytes /sys/class/net/%s/statistics/tx_bytes" %
                            (IFACE, IFACE)], capture_output=True, text=True, timeout=30, check=True)
        rx, tx = (int(x) for x in r.stdout.split())
        return {"rx_bytes": rx, "tx_bytes": tx}

    def mpirun(self, per_host, rest):
        """The command line of an mpirun on host A with per_host ranks on each host; rest: its program part."""
        # "," in HOST=NETNS,OFFSET: mpirun splits plm_rsh_agent at ":" (alternative agents)
        agent = "%s %s=%s,%d" % (AGENT, HOSTS[1], self.ns[1], self.skew_s)
        return ["ip", "netns", "exec", self.ns[0], "unshare", "--uts", "--fork", "--",
                "sh", "-c", 'hostname "$0" && exec "$@"', HOSTS[0],
                shutil.which("mpirun"), "--allow-run-as-root", "--oversubscribe",
                "--host", ",".join("%s:%d" % (h, per_host) for h in HOSTS), "-np", str(per_host * len(HOSTS)),
                "--mca", "plm_rsh_agent", agent,
                "--mca", "pml", "ob1", "--mca", "btl", "tcp,self", "--mca", "osc", "pt2pt",
                "--mca", "btl_tcp_if_include", IFACE, "--mca", "oob_tcp_if_include", IFACE,
                # the hosts share this machine's cores: a rank waiting in MPI yields its core
                "--mca", "mpi_yield_when_idle", "1"] + list(rest)
