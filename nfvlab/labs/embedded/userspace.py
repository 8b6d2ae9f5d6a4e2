"""User-space (OVS-DPDK), AF_XDP and combined networking models (draft §4.1.2, §4.1.3, §4.1.5).

Same Figure-9 shape as :mod:`nfvlab.labs.embedded.kernel`; the pod's forwarder is a DPDK
testpmd in MAC mode (:mod:`nfvlab.labs.embedded.testpmd`) and the vSwitch, where there is
one, is a private OVS-DPDK (:mod:`nfvlab.labs.embedded.ovs`) in the worker namespace
forwarding by OpenFlow port-to-port rules (CSIT's xconnect), not by MAC.

NIC-side ports of the vSwitch (the worker's nic0/nic1 are veths):

- ``ovs-dpdk-vhost``, ``ovs-dpdk-memif``, ``chain-userspace`` (and the direct
  pod ports of ``chain-combined``): OVS ``dpdk`` ports
  with ``net_af_packet`` devargs, the local stand-in for a DPDK PMD driving a
  NIC (PACKET_MMAP rings, qdisc bypass; no XDP program, works at any MTU).
- ``ovs-afxdp``: OVS ``afxdp`` ports (OVS's own AF_XDP netdev, native XDP on
  the veth), so it differs from ``ovs-dpdk-vhost`` only in the NIC-side port
  type, as draft §4.1.3 c (Figure 5) intends.

Core placement (docs/core-plan.md): OVS PMD threads on ``core_plan.vswitch``,
every other OVS thread on the control CPU; each pod's testpmd (main and
forwarding lcore) on ``core_plan.pods[pod]``.

- ``ovs-dpdk-tap`` (seed 003's tun/tap pod interface): the same vSwitch, NIC
  ports and pod forwarder as ``ovs-dpdk-memif``, but the pod ports are kernel
  tap interfaces: OVS userspace ``tap`` ports create them in the worker
  namespace, they are moved into the pod (``eth1``/``eth2``) and the pod's
  testpmd reads and writes them through the kernel (``net_af_packet``), as the
  seed's L3FWD reads its tun interface (docs/experiment-f.md).

Frames: OVS ports keep the default MTU 1500 (frames up to 1518 B) unless the
scenario asks for more (``mtu_bytes``: ``ovs-dpdk-memif`` and ``ovs-dpdk-tap``
carry up to 9000, i.e. 9018 B frames: NIC ports on net_pcap (:func:`mtu_nic_kind`),
``mtu_request`` on every OVS port, large PACKET_MMAP frames, memif buffers and
testpmd mbufs); veths with an XDP program
are set to MTU 1500, because native XDP on veth refuses a peer MTU above about
one page.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from nfvlab.labs.embedded import kernel, ovs, testpmd
from nfvlab.system import netns as nl
from nfvlab.labs.embedded.kernel import Stream
from nfvlab.labs.embedded.ovs import Ovs
from nfvlab.labs.embedded.testpmd import PodPort
from nfvlab.labs.forwarder import af_xdp_vdev, memif_devargs, virtio_user_vdev
from nfvlab.labs.forwarder import pod_mac  # noqa: F401 (the lab's MAC plan, re-exported)
from nfvlab.labs.vswitch import (  # noqa: F401 (re-exported)
    JUMBO_PACKET_FRAME_BYTES, NIC_OFPORT, af_packet_devargs)

#: MTU of veths an XDP program (AF_XDP socket) is attached to, bytes.
XDP_MTU = 1500


# -- preflight ---------------------------------------------------------------

def _preflight(lab, *, vswitch: bool, drivers: tuple[str, ...], memory_mb: list[int]) -> None:
    """DPDK drivers and hugepages, checked before anything else exists (tools: the catalogue)."""
    testpmd.require_pmds(*drivers)
    testpmd.reserve_hugepages(lab, memory_mb)


def _memory(lab, pods: int, vswitch: bool = True) -> list[int]:
    return [testpmd.memory_mb(lab.mtu)] * pods + ([ovs.memory_mb(lab.mtu)] if vswitch else [])


# -- links ---------------------------------------------------------------------

def _xdp_cables(lab) -> None:
    """TG-worker cables at :data:`XDP_MTU` (an XDP program goes on the worker ends)."""
    kernel.cable_tg_to_worker(lab)
    for side in (0, 1):
        nl.set_mtu(lab.ns("tg"), f"tg{side}", XDP_MTU)
        nl.set_mtu(lab.ns("wk"), f"nic{side}", XDP_MTU)


# -- port kinds ----------------------------------------------------------------

def _sock(lab, name: str) -> Path:
    return lab.run_dir / f"{name}.sock"


def virtio_user_port(lab, pod: int, port: int, peer_mac: str) -> PodPort:
    """Pod side of a vhost-user link: testpmd is the socket server (OVS connects)."""
    return PodPort(virtio_user_vdev(port, str(_sock(lab, f"vhu-pod{pod}-{port}")), pod_mac(pod, port)), peer_mac)


def memif_pod_port(lab, pod: int, port: int, peer_mac: str) -> PodPort:
    """Pod side of a memif link: client of OVS's memif socket."""
    path = _sock(lab, f"memif-pod{pod}-{port}")
    return PodPort(f"{memif_devargs(port, str(path), 'client', lab.mtu)},mac={pod_mac(pod, port)}", peer_mac)


def af_xdp_port(port: int, iface: str, peer_mac: str) -> PodPort:
    """A pod port on its own netdev through an AF_XDP socket (DPDK net_af_xdp)."""
    return PodPort(af_xdp_vdev(port, iface), peer_mac)


def af_packet_port(port: int, iface: str, peer_mac: str, mtu: int = testpmd.STD_MTU) -> PodPort:
    """A pod port on its own netdev through a packet socket (DPDK net_af_packet)."""
    return PodPort(af_packet_devargs(port, iface, mtu), peer_mac)


def mtu_nic_kind(lab) -> str:
    """NIC port kind of a model whose MTU a scenario sets: ``pcap`` (any MTU), else ``af_packet``.

    DPDK 22.11's net_af_packet refuses an MTU above 1500 (its ``max_rx_pktlen`` is 1518)
    and OVS drops frames above a dpdk port's MTU, so an MTU study (``mtu_bytes`` set, every
    cell) uses dpdk ports on net_pcap (libpcap on nic0/nic1, polled by the PMD thread like
    af_packet) at every MTU: only the MTU differs between its cells. (OVS's own netdev-linux
    ports carry any MTU too, but OVS's main thread polls them: a few thousand frames/s here.)
    """
    return "pcap" if lab.scenario.mtu_bytes is not None else "af_packet"


def add_nic_ports(sw: Ovs, kind: str) -> None:
    """OVS ports on the worker's nic0/nic1: ``af_packet`` or ``pcap`` (dpdk PMDs) or ``afxdp`` (OVS netdev)."""
    for side, ofport in NIC_OFPORT.items():
        if kind == "pcap":  # DPDK net_pcap on the live netdev: any MTU (jumbo frames in chained mbufs)
            sw.add_port(f"dpdk-nic{side}", ofport, "dpdk", {"dpdk-devargs": f'"net_pcap{side},iface=nic{side}"'})
        elif kind == "afxdp":
            sw.add_port(f"nic{side}", ofport, "afxdp", {"xdp-mode": "native", "n_rxq": "1"})
        else:
            devargs = af_packet_devargs(side, f"nic{side}", sw.mtu)
            sw.add_port(f"dpdk-nic{side}", ofport, "dpdk", {"dpdk-devargs": f'"{devargs}"'})


def add_vhost_port(lab, sw: Ovs, name: str, ofport: int, sock: Path, pod_proc) -> None:
    """OVS vhost-user client port to a testpmd virtio_user server socket (waits for the socket)."""
    lab.wait_until(sock.exists, f"vhost-user socket {sock.name}", proc=pod_proc,
                   log=sock.name.split("-")[1])
    sw.add_port(name, ofport, "dpdkvhostuserclient", {"vhost-server-path": str(sock)})


def add_memif_port(lab, sw: Ovs, name: str, ofport: int, sock: Path, index: int) -> None:
    """OVS dpdk port on net_memif as server; 2 rx queues because OVS's PMD transmits on txq 1."""
    devargs = memif_devargs(index, str(sock), "server", lab.mtu)
    sw.add_port(name, ofport, "dpdk", {"dpdk-devargs": f'"{devargs}"', "n_rxq": "2"})


# -- models --------------------------------------------------------------------

def _start_ovs(lab) -> Ovs:
    sw = Ovs(lab, lab.ns("wk"))
    sw.start(pmd_cpus=sorted(lab.core_plan.vswitch), control_cpus=sorted(lab.core_plan.generator))
    return sw


def _ovs_vhost_pod(lab, nic_kind: str) -> list[Stream]:
    """tg0 - nic0 - OVS - vhost-user - pod1 testpmd - vhost-user - OVS - nic1 - tg1."""
    _preflight(lab, vswitch=True, memory_mb=_memory(lab, 1),
               drivers=("net_virtio_user", "net_af_packet") if nic_kind != "afxdp" else ("net_virtio_user",))
    (_xdp_cables if nic_kind == "afxdp" else kernel.cable_tg_to_worker)(lab)
    pod = lab.add_namespace("pod1")
    tg = kernel.tg_macs(lab)
    sw = _start_ovs(lab)
    add_nic_ports(sw, nic_kind)
    ports = [virtio_user_port(lab, 1, i, tg[i]) for i in (0, 1)]
    proc = testpmd.start_pod_forwarder(lab, "pod1", ports, ns=pod, cpus=lab.core_plan.pods["pod1"])
    for i in (0, 1):
        add_vhost_port(lab, sw, f"vhu-pod1-{i}", 3 + i, _sock(lab, f"vhu-pod1-{i}"), proc)
    testpmd.wait_forwarding(lab, "pod1", proc)
    sw.cross_connect([(NIC_OFPORT[0], 3), (4, NIC_OFPORT[1])])
    return kernel.tg_streams(lab, {0: pod_mac(1, 0), 1: pod_mac(1, 1)})


def build_ovs_dpdk_vhost(lab) -> list[Stream]:
    """OVS-DPDK: dpdk net_af_packet NIC ports, vhost-user to pod1's testpmd (virtio_user)."""
    return _ovs_vhost_pod(lab, "af_packet")


def build_ovs_afxdp(lab) -> list[Stream]:
    """OVS with afxdp NIC ports (native XDP on the veths), vhost-user to pod1's testpmd."""
    return _ovs_vhost_pod(lab, "afxdp")


def _switch_and_pod(lab, drivers: tuple[str, ...]) -> tuple[Ovs, str, dict[int, str]]:
    """Preflight, cables, pod1's namespace, OVS with its NIC ports: OVS, the pod's namespace, TG MACs."""
    _preflight(lab, vswitch=True, memory_mb=_memory(lab, 1), drivers=drivers)
    kernel.cable_tg_to_worker(lab)
    pod = lab.add_namespace("pod1")
    tg = kernel.tg_macs(lab)
    sw = _start_ovs(lab)
    add_nic_ports(sw, mtu_nic_kind(lab))
    return sw, pod, tg


def _forwarding(lab, sw: Ovs, proc, pod_macs: dict[int, str]) -> list[Stream]:
    """Wait for pod1's testpmd, then cross-connect nic0 - pod port 3, pod port 4 - nic1."""
    testpmd.wait_forwarding(lab, "pod1", proc)
    sw.cross_connect([(NIC_OFPORT[0], 3), (4, NIC_OFPORT[1])])
    return kernel.tg_streams(lab, pod_macs)


def build_ovs_dpdk_memif(lab) -> list[Stream]:
    """OVS-DPDK: dpdk NIC ports (:func:`mtu_nic_kind`), memif (OVS server) to pod1's testpmd (2 queues)."""
    sw, pod, tg = _switch_and_pod(lab, ("net_memif", "net_af_packet", "net_pcap"))
    for i in (0, 1):
        add_memif_port(lab, sw, f"memif-pod1-{i}", 3 + i, _sock(lab, f"memif-pod1-{i}"), i)
    ports = [memif_pod_port(lab, 1, i, tg[i]) for i in (0, 1)]
    proc = testpmd.start_pod_forwarder(lab, "pod1", ports, ns=pod, cpus=lab.core_plan.pods["pod1"],
                                       queues=2)
    return _forwarding(lab, sw, proc, {0: pod_mac(1, 0), 1: pod_mac(1, 1)})


def add_tap_port(lab, sw: Ovs, pod_ns: str, ofport: int, side: int) -> None:
    """OVS userspace ``tap`` port (``tap-pod1-<side>``) moved into the pod as ``eth<side+1>``.

    OVS creates the kernel tap and keeps its file descriptor; reads and writes go
    through the descriptor, not the name, so frames still flow between OVS and the
    tap's kernel side once it is in the pod (:func:`nl.move_link` sets it up there).
    (DPDK 22.11's net_tap would do the same but refuses frames above 1522 B.)
    """
    tap = f"tap-pod1-{side}"
    sw.add_port(tap, ofport, "tap", {})
    nl.set_mtu(lab.ns("wk"), tap, lab.mtu)
    nl.move_link(lab.ns("wk"), tap, pod_ns, f"eth{side + 1}")
    nl.set_mtu(pod_ns, f"eth{side + 1}", lab.mtu)


def build_ovs_dpdk_tap(lab) -> list[Stream]:
    """OVS-DPDK: dpdk NIC ports (:func:`mtu_nic_kind`), OVS tap ports whose taps pod1's testpmd reads (af_packet)."""
    sw, pod, tg = _switch_and_pod(lab, ("net_af_packet", "net_pcap"))
    for side in (0, 1):
        add_tap_port(lab, sw, pod, 3 + side, side)
    ports = [af_packet_port(i, f"eth{i + 1}", tg[i], lab.mtu) for i in (0, 1)]
    proc = testpmd.start_pod_forwarder(lab, "pod1", ports, ns=pod, cpus=lab.core_plan.pods["pod1"])
    return _forwarding(lab, sw, proc, {0: nl.mac(pod, "eth1"), 1: nl.mac(pod, "eth2")})


def build_afxdp_cni(lab) -> list[Stream]:
    """No vSwitch: nic0/nic1 moved into pod1 (eth1/eth2); its testpmd uses net_af_xdp on them."""
    _preflight(lab, vswitch=False, memory_mb=_memory(lab, 1, vswitch=False), drivers=("net_af_xdp",))
    _xdp_cables(lab)
    pod = lab.add_namespace("pod1")
    tg = kernel.tg_macs(lab)
    for side in (0, 1):
        nl.move_link(lab.ns("wk"), f"nic{side}", pod, f"eth{side + 1}")
    ports = [af_xdp_port(i, f"eth{i + 1}", tg[i]) for i in (0, 1)]
    proc = testpmd.start_pod_forwarder(lab, "pod1", ports, ns=pod, cpus=lab.core_plan.pods["pod1"],
                                       bpffs=True)
    testpmd.wait_forwarding(lab, "pod1", proc)
    return kernel.tg_streams(lab, {0: nl.mac(pod, "eth1"), 1: nl.mac(pod, "eth2")})


def build_chain_userspace(lab) -> list[Stream]:
    """nic0 - OVS - pod1 - OVS - pod2 - OVS - nic1, every pod port vhost-user."""
    _preflight(lab, vswitch=True, memory_mb=_memory(lab, 2), drivers=("net_virtio_user", "net_af_packet"))
    kernel.cable_tg_to_worker(lab)
    pods = {n: lab.add_namespace(f"pod{n}") for n in (1, 2)}
    tg = kernel.tg_macs(lab)
    sw = _start_ovs(lab)
    add_nic_ports(sw, "af_packet")
    peers = {1: (tg[0], pod_mac(2, 0)), 2: (pod_mac(1, 1), tg[1])}
    procs = {}
    for n in (1, 2):
        ports = [virtio_user_port(lab, n, i, peers[n][i]) for i in (0, 1)]
        procs[n] = testpmd.start_pod_forwarder(lab, f"pod{n}", ports, ns=pods[n],
                                               cpus=lab.core_plan.pods[f"pod{n}"])
    ofport = {(n, i): 1 + 2 * n + i for n in (1, 2) for i in (0, 1)}  # 3, 4, 5, 6
    for (n, i), number in ofport.items():
        add_vhost_port(lab, sw, f"vhu-pod{n}-{i}", number, _sock(lab, f"vhu-pod{n}-{i}"), procs[n])
    for n in (1, 2):
        testpmd.wait_forwarding(lab, f"pod{n}", procs[n])
    sw.cross_connect([(NIC_OFPORT[0], ofport[1, 0]), (ofport[1, 1], ofport[2, 0]),
                      (ofport[2, 1], NIC_OFPORT[1])])
    return kernel.tg_streams(lab, {0: pod_mac(1, 0), 1: pod_mac(2, 1)})


def build_chain_combined(lab) -> list[Stream]:
    """N-S on direct ports (nic0 -> pod1, nic1 -> pod2, net_af_packet), E-W pod1 - OVS - pod2 (vhost-user).

    The direct ports use af_packet, not af_xdp: a net_af_xdp port that both
    receives and transmits in a pod sharing the generator's CPU stopped
    receiving for good after one overloaded trial (DPDK 22.11, Linux 6.18).
    """
    _preflight(lab, vswitch=True, memory_mb=_memory(lab, 2), drivers=("net_virtio_user", "net_af_packet"))
    kernel.cable_tg_to_worker(lab)
    pods = {n: lab.add_namespace(f"pod{n}") for n in (1, 2)}
    tg = kernel.tg_macs(lab)
    nl.move_link(lab.ns("wk"), "nic0", pods[1], "eth1")
    nl.move_link(lab.ns("wk"), "nic1", pods[2], "eth2")
    sw = _start_ovs(lab)
    # pod1: port 0 = its direct port, port 1 = east-west; pod2: the mirror image.
    ew = {1: virtio_user_port(lab, 1, 1, pod_mac(2, 0)), 2: virtio_user_port(lab, 2, 0, pod_mac(1, 1))}
    ns_port = {1: af_packet_port(0, "eth1", tg[0]), 2: af_packet_port(1, "eth2", tg[1])}
    procs = {n: testpmd.start_pod_forwarder(lab, f"pod{n}", ports, ns=pods[n],
                                            cpus=lab.core_plan.pods[f"pod{n}"])
             for n, ports in ((1, [ns_port[1], ew[1]]), (2, [ew[2], ns_port[2]]))}
    add_vhost_port(lab, sw, "vhu-pod1-1", 3, _sock(lab, "vhu-pod1-1"), procs[1])
    add_vhost_port(lab, sw, "vhu-pod2-0", 4, _sock(lab, "vhu-pod2-0"), procs[2])
    for n in (1, 2):
        testpmd.wait_forwarding(lab, f"pod{n}", procs[n])
    sw.cross_connect([(3, 4)])
    return kernel.tg_streams(lab, {0: nl.mac(pods[1], "eth1"), 1: nl.mac(pods[2], "eth2")})


BUILDERS: dict[str, Callable] = {
    "ovs-dpdk-vhost": build_ovs_dpdk_vhost,
    "ovs-dpdk-memif": build_ovs_dpdk_memif,
    "ovs-dpdk-tap": build_ovs_dpdk_tap,
    "ovs-afxdp": build_ovs_afxdp,
    "afxdp-cni": build_afxdp_cni,
    "chain-userspace": build_chain_userspace,
    "chain-combined": build_chain_combined,
}
