"""A private OVS-DPDK instance of one lab (userspace datapath only).

Database, sockets and logs live in ``<run dir>/ovs`` (removed at teardown);
ovsdb-server and ovs-vswitchd-dpdk run as plain (not detached) processes the
lab spawns and kills, inside the worker namespace. Every command line names
the run dir, so a leaked process carries the lab id.

The PMD threads run on ``core_plan.vswitch`` (``pmd-cpu-mask``); every other
thread of ovs-vswitchd starts on the control CPU (``taskset``) and stays there.
"""
from __future__ import annotations

import subprocess
from typing import Sequence

from nfvlab.labs.embedded import testpmd
from nfvlab.labs.base import LabError
from nfvlab.system import signals
from nfvlab.labs.vswitch import (  # noqa: F401 (re-exported: the embedded lab's names)
    BRIDGE, JUMBO_MEMORY_MB, MEMORY_MB, PMD_MAXSLEEP_US, SCHEMA, VSWITCHD, cpu_mask, memory_mb)


class Ovs:
    """The lab's ovsdb-server + ovs-vswitchd-dpdk, and vsctl/ofctl on its private sockets."""

    def __init__(self, lab, ns: str) -> None:
        self.lab = lab
        self.mtu = lab.mtu
        """``mtu_request`` of every dpdk port, bytes (OVS sizes its mbufs from it)."""
        self.ns = ns
        self.dir = lab.make_run_dir() / "ovs"
        self.db_sock = self.dir / "db.sock"

    @property
    def env(self) -> dict[str, str]:
        """OVS_* dirs: nothing of this instance lands in the host's /var/run/openvswitch."""
        return {"OVS_RUNDIR": str(self.dir), "OVS_DBDIR": str(self.dir), "OVS_LOGDIR": str(self.dir)}

    def start(self, pmd_cpus: Sequence[int], control_cpus: Sequence[int]) -> None:
        """Create the database, start both daemons, wait for DPDK to be initialized."""
        self.dir.mkdir(exist_ok=True)
        subprocess.run(["ovsdb-tool", "create", str(self.dir / "conf.db"), SCHEMA],
                       check=True, capture_output=True, preexec_fn=signals.die_with_parent)
        server = self.lab.spawn("ovsdb-server", [
            "ovsdb-server", str(self.dir / "conf.db"), f"--remote=punix:{self.db_sock}",
            f"--unixctl={self.dir / 'ovsdb-server.ctl'}", "-vconsole:info", "-vsyslog:off"],
            ns=self.ns, env=self.env)
        self.lab.wait_until(self.db_sock.exists, "ovsdb-server", proc=server, log="ovsdb-server")
        self.vsctl("--no-wait", "init")
        self.vsctl("--no-wait", "set", "Open_vSwitch", ".", *self._dpdk_config(pmd_cpus))
        control = ",".join(map(str, sorted(control_cpus)))
        vswitchd = self.lab.spawn("ovs-vswitchd", [
            "taskset", "-c", control, VSWITCHD, f"unix:{self.db_sock}",
            f"--unixctl={self.dir / 'ovs-vswitchd.ctl'}", "-vconsole:info", "-vsyslog:off"],
            ns=self.ns, env=self.env)
        self.lab.wait_until(lambda: self.get("Open_vSwitch", ".", "dpdk_initialized") == "true",
                            "ovs-vswitchd DPDK init", timeout_s=15, proc=vswitchd, log="ovs-vswitchd")
        self.vsctl("add-br", BRIDGE, "--", "set", "bridge", BRIDGE, "datapath_type=netdev",
                   "fail-mode=secure")  # secure: no NORMAL flow, only ours

    def _dpdk_config(self, pmd_cpus: Sequence[int]) -> list[str]:
        eal = testpmd.eal_memory_args(self.lab, "ovs", memory_mb(self.mtu))
        if not self.lab.resources.hugepages:
            eal = ["--legacy-mem"] + eal  # OVS + --no-huge works only with legacy memory
        eal = [a for a in eal if a != "--in-memory"]  # OVS adds it itself
        return ["other_config:dpdk-init=true",
                f'other_config:dpdk-extra="{" ".join(eal)}"',
                # The limit keeps OVS's mempool sizing (it tries up to 262144 mbufs)
                # from taking the pods' hugepages.
                *([f"other_config:dpdk-socket-mem={memory_mb(self.mtu)}",
                   f"other_config:dpdk-socket-limit={memory_mb(self.mtu)}"]
                  if self.lab.resources.hugepages else []),
                # An MTU study (net_pcap NIC ports): mempools sized by each port's queues; the
                # shared pool's first try (262144 mbufs) fails with ENOBUFS, which OVS does not retry.
                *(["other_config:per-port-memory=true"] if self.lab.scenario.mtu_bytes is not None else []),
                # Tap ports moved into a pod: OVS no longer finds their MTU by name and reads at most
                # 1500 B per frame from the tap, truncating jumbo frames; with userspace TSO it reads
                # into a 64 kB buffer. Set for every MTU of a study, so only the MTU differs.
                *(["other_config:userspace-tso-enable=true"] if self.lab.scenario.mtu_bytes is not None else []),
                f"other_config:pmd-cpu-mask={cpu_mask(pmd_cpus)}",
                f"other_config:pmd-maxsleep={PMD_MAXSLEEP_US}"]

    def vsctl(self, *args: str) -> str:
        """Run ovs-vsctl on this instance; LabError with its message on failure."""
        return self._run(["ovs-vsctl", f"--db=unix:{self.db_sock}", "--timeout=10", *args])

    def ofctl(self, *args: str) -> str:
        """Run ovs-ofctl ``args[0]`` on the bridge's private management socket."""
        return self._run(["ovs-ofctl", args[0], f"unix:{self.dir / (BRIDGE + '.mgmt')}", *args[1:]])

    def _run(self, argv: list[str]) -> str:
        # die_with_parent: a helper command (ovs-vsctl --timeout=10) ends with the lab process.
        out = subprocess.run(argv, capture_output=True, text=True, preexec_fn=signals.die_with_parent)
        if out.returncode != 0:
            raise LabError(f"{argv[0]} {' '.join(argv[2:])[:120]}: {out.stderr.strip()} "
                           f"| {self.lab.log_tail('ovs-vswitchd', 3)}")
        return out.stdout.strip()

    def get(self, table: str, record: str, column: str) -> str:
        return self.vsctl("--if-exists", "get", table, record, column).strip('"')

    def add_port(self, name: str, ofport: int, kind: str, options: dict[str, str]) -> None:
        """Add port ``name`` (type ``kind``) as OpenFlow port ``ofport``; fail if it has an error.

        Ports carry the lab's MTU (``mtu_request``; OVS's default is 1500).
        """
        opts = [f"options:{k}={v}" for k, v in options.items()]
        mtu = [f"mtu_request={self.mtu}"] if self.mtu != testpmd.STD_MTU else []
        self.vsctl("add-port", BRIDGE, name, "--", "set", "Interface", name, f"type={kind}",
                   f"ofport_request={ofport}", *mtu, *opts)
        error = self.get("Interface", name, "error")
        if error and error != "[]":
            raise LabError(f"OVS port {name} ({kind}): {error}")

    def cross_connect(self, pairs: Sequence[tuple[int, int]]) -> None:
        """Port-to-port flows both ways for each (a, b) OpenFlow port pair (CSIT's xconnect)."""
        for a, b in pairs:
            self.ofctl("add-flow", f"in_port={a},actions=output:{b}")
            self.ofctl("add-flow", f"in_port={b},actions=output:{a}")
