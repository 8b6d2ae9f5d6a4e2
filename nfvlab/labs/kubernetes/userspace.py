"""The draft's DPDK pods on Kubernetes: user-space models on Userspace CNI vhost-user ports, SR-IOV VFs.

Figure 9 on a real node: the pod runs :mod:`nfvlab.labs.forwarder`'s testpmd (the draft's
l2fwd, MAC forwarding) on two Multus interfaces from the Userspace CNI
(``github.com/intel/userspace-cni-network-plugin``, ``scripts/k8s/cni-userspace.sh``): each is a
vhost-user port the CNI adds to the node's OVS-DPDK bridge, with the socket in the pod's
``shared-dir`` hostPath volume (``kubernetes.vhost_dir``/<run id>/<pod>). The CNI runs OVS as the
vhost-user client (``dpdkvhostuserclient``), testpmd's virtio_user is the server: the socket
exists once testpmd runs, OVS connects to it, and testpmd starts forwarding only when it has
(so a pod is Ready only when its ports are up and forwarding is configured).

- ``ovs-dpdk-vhost``: OVS's NIC ports are DPDK net_af_packet ports on the node's ``nics``.
- ``ovs-dpdk-memif``: the same NIC ports; the pod's ports are memif. The Userspace CNI's OVS
  engine makes vhost-user ports only (its ``cniovs`` refuses any other ``iftype``), so nfvlab adds
  the memif ports itself: OVS ``dpdk`` ports on net_memif, socket servers in the pod's shared-dir,
  testpmd's net_memif the clients (as in the embedded lab). No Multus network: the memif is no
  netdev, and the pod's own sockets are all it needs.
- ``ovs-afxdp``: the same, with OVS ``afxdp`` ports on the NICs (draft §4.1.3 c).
- ``chain-userspace``: two DPDK pods; pod1's eth2 and pod2's eth1 are both vhost-user ports of
  the same bridge, cross-connected (experiment C's east-west path).
- ``sriov`` (``sriov_mode: dpdk``, the draft's Figure 10): testpmd on two VFs bound to vfio-pci from
  the SR-IOV device plugin's ``sriov_dpdk_resource`` (:func:`vfio_setup`); the SR-IOV CNI's NADs
  only record them (no netdev, no IP). No vSwitch: the NIC's embedded switch.
- ``chain-combined``: the same east-west vhost-user link; north-south, each pod has a direct port
  (host-device CNI moves NIC 0 into pod1 as eth1, NIC 1 into pod2 as eth2; testpmd's
  net_af_packet on them, as in the embedded lab). OVS has no NIC ports then.

The vSwitch: with ``cabling: local`` the node is this host and nfvlab runs its OVS-DPDK as the
run's ``vswitch`` pod (host network, privileged, the database under /var/run/openvswitch where
the CNI's ``ovs-vsctl`` finds it), deleted after the DPDK pods at teardown. On a real cluster the
vSwitch is the node's own: never installed, named by ``vswitch_bridge``.

Forwarding on the bridge is by port (CSIT's xconnect): ``fail-mode=secure`` and one flow per
direction per link, never MAC learning (which floods the first frames past the pod).
Cores and memory follow the embedded lab's core plan (docs/core-plan.md): OVS PMDs on
``core_plan.vswitch``, OVS's other threads on the generator's CPU, each pod's testpmd on
``core_plan.pods[pod]`` (or the CPU the static CPU manager gave a Guaranteed pod).
"""
from __future__ import annotations

import json
import re
import shlex
from typing import Optional

from nfvlab.labs import forwarder, vswitch
from nfvlab.params import KubernetesParams
from nfvlab.scenario import Scenario
from nfvlab.scenario.resources import CorePlan

#: Model -> OVS port type towards the node's NICs (None: no vSwitch NIC ports, the pods' ports are
#: on the NICs; ``vpp``: the node's VPP's own, never programmed by nfvlab).
NIC_PORTS = {"ovs-dpdk-vhost": "af_packet", "ovs-dpdk-memif": "af_packet", "ovs-dpdk-tap": "af_packet",
             "ovs-afxdp": "afxdp",
             "chain-userspace": "af_packet", "chain-combined": None, "vpp": "vpp", "afxdp-cni": None,
             "sriov": None}
#: Model -> the pods' ports: ``vhostuser`` (Userspace CNI, OVS-DPDK), ``memif`` (nfvlab's OVS memif
#: ports), ``vpp-memif`` (Userspace CNI, VPP engine: memif in the node VPP's bridge domain),
#: ``afxdp`` (the AF_XDP CNI's netdev from the device plugin's pool), ``veth`` (the OVS CNI's veth on
#: the node's OVS-DPDK bridge: a kernel netdev in the pod), ``vfio`` (an SR-IOV VF bound to vfio-pci,
#: a PCI device testpmd drives). chain-combined's chain ends are
#: ``direct`` ports (:func:`port_kind`).
POD_PORTS = {"ovs-dpdk-vhost": "vhostuser", "ovs-dpdk-memif": "memif", "ovs-dpdk-tap": "veth",
             "ovs-afxdp": "vhostuser",
             "chain-userspace": "vhostuser", "chain-combined": "vhostuser", "vpp": "vpp-memif",
             "afxdp-cni": "afxdp", "sriov": "vfio"}
#: What the pods' ports of each kind are on the vSwitch (the run's ``vswitch.pod_ports``): the OVS CNI's
#: veths stand in for the embedded lab's OVS tap ports, which no CNI makes.
POD_PORT_WHAT = {"vhostuser": "Userspace CNI vhost-user ports (OVS dpdkvhostuserclient, testpmd virtio_user)",
                 "memif": "nfvlab's OVS memif ports (dpdk on net_memif, testpmd net_memif clients)",
                 "veth": "OVS CNI veths, not OVS tap ports: the node's end a port of the OVS-DPDK bridge "
                         "(served through the kernel, as the embedded lab's taps), testpmd af_packet on the pod's"}
#: Models whose chain ends are NICs moved into the pods (host-device CNI).
DIRECT_ENDS = ("chain-combined",)
#: Why the local cluster (the node is this host) cannot run a model nfvlab renders.
LOCAL_WHY = {
    "vpp": "the local node has no VPP (Debian ships none and no registry here serves it) and the Userspace "
           "CNI's VPP engine needs Go bindings generated from VPP 19.04's API files, which no registry serves "
           "(scripts/k8s/cni-userspace.sh stubs it)",
}
VSWITCH_POD = "vswitch"
ROLE_LABEL = "nfvlab.io/role"
#: Where the pod sees its shared-dir (the vhost-user sockets).
VHOST_MOUNT = "/var/run/vhost"
#: Where a pod (and the vSwitch pod) mounts its HugePages-2Mi emptyDir.
HUGEPAGES_MOUNT = "/hugepages"
#: The node's OVS run directory: the Userspace CNI's ``ovs-vsctl`` uses its default database there.
OVS_RUNDIR = "/var/run/openvswitch"
#: What the local vSwitch leaves there (removed at teardown; the directory itself may be the host's).
OVS_RUN_FILES = ("conf.db", ".conf.db.~lock~", "db.sock", "ovsdb-server.ctl", "ovs-vswitchd.ctl",
                 "*.mgmt", "*.snoop")
#: IP MTU of the user-space models' ports, bytes: DPDK 22.11's net_af_packet NIC ports carry at
#: most 1518 B frames (as in the embedded lab).
MTU = forwarder.STD_MTU
#: Memory of a DPDK pod beyond its DPDK memory (testpmd's heap, the shell), MiB.
POD_OVERHEAD_MIB = 256


def is_userspace(model: str) -> bool:
    return model in NIC_PORTS


def hugepages(scenario: Scenario) -> bool:
    """Does ``scenario``'s DPDK pod take its memory from hugepages? As the scenario says, always on VFs:
    a vfio-pci VF DMAs into the pod's memory, which DPDK then pins as IOVA-contiguous 2 MB pages
    (``--no-huge`` memory is for devices without DMA)."""
    return scenario.resources.hugepages or POD_PORTS.get(scenario.model) == "vfio"


def port_kind(model: str, chain: list[str], pod: str, side: int) -> str:
    """:data:`POD_PORTS`' kind, or ``direct`` (a NIC moved into the pod): ``pod``'s port ``side``."""
    j = chain.index(pod)
    if model in DIRECT_ENDS and ((j, side) == (0, 0) or (j, side) == (len(chain) - 1, 1)):
        return "direct"
    return POD_PORTS[model]


def runs_ovs(model: str) -> bool:
    """Is the model's vSwitch an OVS-DPDK (nfvlab's on the local node, cross-connected by its flows)?"""
    return POD_PORTS[model] in ("vhostuser", "memif", "veth")


def socket_name(run_id: str, pod: str, side: int) -> str:
    """The vhost-user socket (= OVS port) of ``pod``'s eth1 (side 0) or eth2 (side 1)."""
    return f"vhu{run_id}{pod[3:]}{side}"


def memif_port_name(run_id: str, pod: str, side: int) -> str:
    """The OVS memif port of ``pod``'s port ``side`` (its socket: ``<port>.sock`` in the shared-dir)."""
    return f"mif{run_id}{pod[3:]}{side}"


def pod_port_name(model: str, run_id: str, pod: str, side: int) -> str:
    """The vSwitch port (and socket) of ``pod``'s port ``side`` for ``model``."""
    return (memif_port_name if POD_PORTS[model] in ("memif", "vpp-memif") else socket_name)(run_id, pod, side)


def shared_dir(params: KubernetesParams, run_id: str, pod: str) -> str:
    return f"{params.vhost_dir}/{run_id}/{pod}"


NAD_KIND_NAMES = {"vhostuser": "vhost", "direct": "direct", "vpp-memif": "memif", "afxdp": "afxdp", "veth": "ovs",
                  "vfio": "sriov"}
#: ovs-dpdk-tap: the OpenFlow port the OVS CNI asks for (``ofport_request``) for ``pod``'s port ``side``
#: (the CNI names the node's end of the veth at random; flows address the port by number).
VETH_OFPORT_BASE = 10


def veth_ofport(chain: list[str], pod: str, side: int) -> int:
    return VETH_OFPORT_BASE + 2 * chain.index(pod) + side


def nad_name(pod: str, side: int, kind: str = "vhostuser") -> str:
    return f"{pod}-{NAD_KIND_NAMES[kind]}{side}"


def cni_config(params: KubernetesParams, run_id: str, pod: str, side: int) -> dict:
    """The Userspace CNI config of ``pod``'s port ``side``: a vhost-user port on the node's OVS-DPDK
    bridge, OVS the client of the socket the pod's testpmd serves; no IP (an L2 forwarder)."""
    return {"cniVersion": "0.3.1", "type": "userspace", "name": nad_name(pod, side),
            "kubeconfig": params.userspace_cni_kubeconfig or params.kubeconfig,
            "logFile": f"{params.vhost_dir}/{run_id}/userspace-cni.log", "logLevel": "debug",
            "host": {"engine": "ovs-dpdk", "iftype": "vhostuser", "netType": "bridge",
                     "vhost": {"mode": "client", "socketfile": socket_name(run_id, pod, side)},
                     "bridge": {"bridgeName": params.vswitch_bridge}},
            "container": {"engine": "ovs-dpdk", "iftype": "vhostuser", "netType": "interface",
                          "vhost": {"mode": "server"}}}


def vpp_config(params: KubernetesParams, run_id: str, pod: str, side: int) -> dict:
    """The Userspace CNI config (VPP engine) of ``pod``'s port ``side``: a memif in the node VPP's
    bridge domain ``vpp_bridge_id``, VPP the master, the pod's net_memif the slave."""
    return {"cniVersion": "0.3.1", "type": "userspace", "name": nad_name(pod, side, "vpp-memif"),
            "kubeconfig": params.userspace_cni_kubeconfig or params.kubeconfig,
            "host": {"engine": "vpp", "iftype": "memif", "netType": "bridge",
                     "memif": {"role": "master", "mode": "ethernet",
                               "socketfile": f"{memif_port_name(run_id, pod, side)}.sock"},
                     "bridge": {"bridgeId": params.vpp_bridge_id}},
            "container": {"engine": "vpp", "iftype": "memif", "netType": "interface",
                          "memif": {"role": "slave", "mode": "ethernet"}}}


#: Why the local node's NIC ports cannot come from the AF_XDP device plugin's pool.
AFXDP_POOL_WHY = ("the AF_XDP device plugin pools physical ports only (a netdev with /sys/class/net/<if>/device; "
                  "the local node's NIC ports are veths): set kubernetes.afxdp_resource: null, and the AF_XDP "
                  "CNI moves the NIC ports kubernetes.nics names")


def afxdp_config(params: KubernetesParams, pod: str, side: int) -> dict:
    """The AF_XDP CNI config of ``pod``'s port ``side``: a netdev of the device plugin's pool moved
    into the pod (the NAD's resourceName annotation names the pool), or with no pool
    (``afxdp_resource: null``) the node's NIC port ``side`` as the ``deviceID`` the plugin would
    pass. testpmd's af_xdp loads and removes its own XDP program (DPDK 22.11 cannot take the
    plugin's; ``use_cni`` came in 23.03), so the CNI unloads none."""
    cfg = {"cniVersion": "0.3.0", "type": "afxdp", "mode": "primary", "name": nad_name(pod, side, "afxdp")}
    if params.afxdp_resource is None:
        cfg.update(deviceID=params.nics[side], skipUnloadBpf=True)
    return cfg


def ovs_veth_config(params: KubernetesParams, chain: list[str], pod: str, side: int) -> dict:
    """The OVS CNI config of ``pod``'s port ``side`` (ovs-dpdk-tap): a veth whose node end is a port of
    the node's OVS-DPDK bridge (the userspace datapath serves it through the kernel, as the embedded
    lab's tap ports), at a known OpenFlow port; no IP (testpmd's af_packet port)."""
    return {"cniVersion": "0.4.0", "type": "ovs", "name": nad_name(pod, side, "veth"),
            "bridge": params.vswitch_bridge, "socket_file": f"unix:{OVS_RUNDIR}/db.sock", "mtu": MTU,
            "ofport_request": veth_ofport(chain, pod, side)}


def sriov_dpdk_config(pod: str, side: int) -> dict:
    """The SR-IOV CNI config (``k8snetworkplumbingwg/sriov-cni`` v2.1.0) of ``pod``'s port ``side``: a VF
    of the NAD's resource, its ``deviceID`` added by Multus. The CNI sees the VF's DPDK driver and only
    records it: no netdev to move, so no IPAM, and v2.1.0 has no ``mac`` key (testpmd sets the MACs)."""
    return {"cniVersion": "0.3.1", "type": "sriov", "name": nad_name(pod, side, "vfio")}


def pcidevice_env(resource: str) -> str:
    """The SR-IOV device plugin's variable listing a pod's VFs of ``resource`` (PCI addresses, comma
    separated): ``PCIDEVICE_`` and the resource name upper-cased, ``/``, ``.`` and ``-`` as ``_``."""
    return "PCIDEVICE_" + re.sub(r"[/.-]", "_", resource).upper()


def direct_config(params: KubernetesParams, pod: str, side: int) -> dict:
    """The host-device CNI config moving NIC ``side`` into ``pod`` (no IP: testpmd's af_packet port)."""
    return {"cniVersion": "0.3.1", "type": "host-device", "name": nad_name(pod, side, "direct"),
            "device": params.nics[side]}


RESOURCE_ANNOTATION = "k8s.v1.cni.cncf.io/resourceName"


def nads(scenario: Scenario, params: KubernetesParams, run_id: str, namespace: str, chain: list[str],
         labels: dict) -> list[dict]:
    """One NAD per pod port (each names its own socket, so each port is a distinct OVS port);
    none for memif ports (nfvlab's, not the CNI's)."""
    out = []
    for pod in chain:
        for side in (0, 1):
            kind = port_kind(scenario.model, chain, pod, side)
            if kind == "memif":
                continue
            if kind == "direct":
                cfg = direct_config(params, pod, side)
            elif kind == "vpp-memif":
                cfg = vpp_config(params, run_id, pod, side)
            elif kind == "afxdp":
                cfg = afxdp_config(params, pod, side)
            elif kind == "veth":
                cfg = ovs_veth_config(params, chain, pod, side)
            elif kind == "vfio":
                cfg = sriov_dpdk_config(pod, side)
            else:
                cfg = cni_config(params, run_id, pod, side)
            meta = {"name": nad_name(pod, side, kind), "namespace": namespace, "labels": dict(labels)}
            resource = {"afxdp": params.afxdp_resource, "vfio": params.sriov_dpdk_resource}.get(kind)
            if resource:  # the device plugin's pool Multus takes the port's device from
                meta["annotations"] = {RESOURCE_ANNOTATION: resource}
            out.append({"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
                        "metadata": meta, "spec": {"config": json.dumps(cfg, sort_keys=True)}})
    return out


def networks(model: str, namespace: str, chain: list[str], pod: str) -> list[dict]:
    """The Multus networks annotation's entries of ``pod`` (its CNI-made ports as eth1/eth2)."""
    kinds = {side: port_kind(model, chain, pod, side) for side in (0, 1)}
    return [{"name": nad_name(pod, side, kind), "namespace": namespace, "interface": f"eth{side + 1}"}
            for side, kind in kinds.items() if kind != "memif"]


def eal_memory_args(hugepages: bool, memory_mb: int, prefix: str) -> list[str]:
    """EAL memory options of a DPDK process in a pod (the embedded lab's, with the pod's hugetlbfs)."""
    return forwarder.eal_memory_args(hugepages, HUGEPAGES_MOUNT, memory_mb, prefix)


def testpmd_argv(scenario: Scenario, run_id: str, pod: str, peer_macs: list[str], chain: list[str],
                 lcores: str) -> list[str]:
    """testpmd of ``pod``: virtio_user servers on its two sockets (or memif clients of OVS's),
    MAC forwarding to ``peer_macs``."""
    if POD_PORTS[scenario.model] == "vfio":
        return vfio_testpmd_argv(pod, lcores)
    memif = POD_PORTS[scenario.model] == "memif"  # OVS's memif ports
    ports = []
    for side in (0, 1):
        mac, kind = forwarder.pod_mac(int(pod[3:]), side), port_kind(scenario.model, chain, pod, side)
        if kind in ("direct", "veth"):  # the NIC the host-device CNI moved in, or the OVS CNI's veth: its MAC
            vdev = vswitch.af_packet_devargs(side, f"eth{side + 1}", MTU)
        elif kind == "afxdp":  # the pool's netdev: testpmd loads its own XDP program (DPDK 22.11)
            # The AF_XDP CNI keeps the netdev's name (no eth1/eth2): the pod reads it from
            # AFXDP_DEVICES, as the device plugin's pods do (pod_script expands the placeholder).
            vdev = forwarder.af_xdp_vdev(side, DEVICE_ARG[side])
        elif kind in ("memif", "vpp-memif"):  # OVS's (nfvlab's port) or VPP's (the CNI's) the server
            path = f"{VHOST_MOUNT}/{memif_port_name(run_id, pod, side)}.sock"
            vdev = f"{forwarder.memif_devargs(side, path, 'client')},mac={mac}"
        else:
            vdev = forwarder.virtio_user_vdev(side, f"{VHOST_MOUNT}/{socket_name(run_id, pod, side)}", mac)
        ports.append(forwarder.PodPort(vdev, peer_macs[side]))
    # memif: 2 queues, because OVS's PMD transmits on txq 1 (as in the embedded lab)
    return [forwarder.TESTPMD, lcores, "--no-pci",
            *eal_memory_args(scenario.resources.hugepages, forwarder.memory_mb(MTU), f"{pod}"),
            *forwarder.forwarding_args(ports, MTU, queues=2 if memif else 1)]


#: Placeholders in testpmd's arguments for what the pod learns at start-up (:func:`pod_script`
#: expands them): its devices (AF_XDP netdev names, VF PCI addresses) as ``$dev0``/``$dev1``, and a VF
#: pod's DPDK ports' peers as ``$peer0``/``$peer1`` (:func:`vfio_setup`).
DEVICE_ARG = {0: "@DEV0@", 1: "@DEV1@"}
PEER_ARG = {0: "@PEER0@", 1: "@PEER1@"}
_SHELL_VARS = {**{ph: f"$dev{side}" for side, ph in DEVICE_ARG.items()},
               **{ph: f"$peer{port}" for port, ph in PEER_ARG.items()}}
#: The device plugin's environment variable naming the pod's AF_XDP netdevs (space-separated).
AFXDP_DEVICES_ENV = "AFXDP_DEVICES"
#: Where a VF pod reads which PF each of its VFs belongs to (sysfs, read-only in a container).
PCI_DEVICES_DIR = "/sys/bus/pci/devices"
#: The testpmd commands a VF pod runs before forwarding (its ports' MACs).
TESTPMD_CMD_FILE = "/tmp/testpmd.cmd"


def _shell_word(arg: str) -> str:
    """``arg`` as one shell word; the placeholders of :data:`_SHELL_VARS` become shell variables."""
    if any(ph in arg for ph in _SHELL_VARS):
        for ph, var in _SHELL_VARS.items():
            arg = arg.replace(ph, var)
        return f'"{arg}"'  # (vdev strings hold no $, `, \\ or ")
    return shlex.quote(arg)


def vfio_testpmd_argv(pod: str, lcores: str) -> list[str]:
    """testpmd of an SR-IOV DPDK pod: its two VFs allow-listed (``-a``; no vdevs), hugepages (a VF DMAs
    into them), MAC forwarding to the peers :func:`vfio_setup` ordered by DPDK port, the MACs it set."""
    return [forwarder.TESTPMD, lcores, "-a", DEVICE_ARG[0], "-a", DEVICE_ARG[1],
            *eal_memory_args(True, forwarder.memory_mb(MTU), pod), *forwarder.forwarding_args([], MTU),
            *(f"--eth-peer={port},{ph}" for port, ph in PEER_ARG.items()), f"--cmdline-file={TESTPMD_CMD_FILE}"]


def vfio_setup(env: str, peer_macs: list[str], macs: list[str], pci_dir: str = PCI_DEVICES_DIR,
               cmd_file: str = TESTPMD_CMD_FILE) -> list[str]:
    """Start-up lines (busybox sh) of an SR-IOV DPDK pod: its two VFs from the device plugin's ``env``
    as ``dev0`` (eth1's side, towards generator port 0) and ``dev1``, each port's peer, and the testpmd
    commands setting the ports' MACs to ``macs`` (the plan the generator addresses).

    The side of a VF is its PF's: the PF with the lower PCI address is ``nics[0]`` (ens1f0 before
    ens1f1); two VFs of one PF stop the pod with the reason. DPDK numbers allow-listed devices in PCI
    address order, so port 0 is the lower VF address, whichever side it is on.
    """
    q = shlex.quote
    both = f"printf '%s\\n' \"$pf0\" \"$pf1\""
    return [
        f"set -- $(echo \"${env}\" | tr , ' ')",
        f'[ $# -eq 2 ] || {{ echo "{env}=\'${env}\': want two VFs"; exit 1; }}',
        f"pf0=$(readlink {pci_dir}/$1/physfn || true) pf1=$(readlink {pci_dir}/$2/physfn || true)",
        "pf0=${pf0##*/} pf1=${pf1##*/}",
        '[ -n "$pf0" ] && [ -n "$pf1" ] && [ "$pf0" != "$pf1" ] || { echo "VFs $1 (PF ${pf0:-none}) and $2 '
        '(PF ${pf1:-none}): want one VF of each of the node\'s two PFs"; exit 1; }',
        f'if [ "$({both} | sort | head -n 1)" = "$pf0" ]; then dev0=$1 dev1=$2; else dev0=$2 dev1=$1; fi',
        "if [ \"$(printf '%s\\n' \"$dev0\" \"$dev1\" | sort | head -n 1)\" = \"$dev0\" ]; "
        f"then peer0={q(peer_macs[0])} peer1={q(peer_macs[1])} mac0={q(macs[0])} mac1={q(macs[1])}; "
        f"else peer0={q(peer_macs[1])} peer1={q(peer_macs[0])} mac0={q(macs[1])} mac1={q(macs[0])}; fi",
        f"printf 'mac_addr set 0 %s\\nmac_addr set 1 %s\\n' \"$mac0\" \"$mac1\" >{cmd_file}",
    ]


def pod_script(argv: list[str], cpus: frozenset[int], bpffs: bool = False, setup: tuple[str, ...] = ()) -> str:
    """The DPDK pod's start-up (busybox sh): ``setup`` lines, then testpmd on the plan's CPUs (or, with
    none planned, the CPUs the pod may use: a Guaranteed pod's exclusive CPU), its log kept for the
    readiness probe."""
    if cpus:
        where = ",".join(map(str, sorted(cpus)))
        lcores = shlex.quote(f"--lcores=0@({where}),1@({where})")
    else:
        lcores = '"--lcores=0@($cpus),1@($cpus)"'
    cmd = " ".join(_shell_word(a) if a != "LCORES" else lcores for a in argv)
    return "\n".join([
        "set -e",
        "cpus=$(awk '/^Cpus_allowed_list/{print $2}' /proc/self/status)",
        # af_xdp: libxdp pins its dispatcher in bpffs, which a container's /sys lacks
        *(["grep -q ' /sys/fs/bpf bpf ' /proc/mounts || mount -t bpf bpf /sys/fs/bpf",
           f"set -- ${AFXDP_DEVICES_ENV}",
           f'[ $# -eq 2 ] || {{ echo "{AFXDP_DEVICES_ENV}=\'${AFXDP_DEVICES_ENV}\': want two AF_XDP netdevs"; exit 1; }}',
           "dev0=$1 dev1=$2"] if bpffs else []),
        *setup,
        ": >/tmp/testpmd.log",
        f"{cmd} >>/tmp/testpmd.log 2>&1 &",
        "pid=$!",
        # SIGTERM: testpmd stops its ports (its sockets go) before the pod is gone.
        "trap 'kill -INT $pid; wait $pid; exit 0' TERM INT",
        "tail -f /tmp/testpmd.log &",
        # On a failure its last lines are the container's last (what nfvlab shows as the reason).
        "wait $pid || { rc=$?; echo \"testpmd exited $rc:\"; tail -n 14 /tmp/testpmd.log; exit $rc; }",
    ])


def capabilities(kinds: set[str]) -> list[str]:
    """Capabilities of a DPDK pod with ports of ``kinds``: IPC_LOCK (DPDK locks its memory), SYS_NICE
    (it pins its lcores); a port on the pod's own netdev (af_packet, af_xdp): NET_RAW for the socket,
    NET_ADMIN for its MAC and promiscuity; af_xdp (DPDK 22.11 loads its own XDP program, no
    use_cni): SYS_ADMIN and BPF for the program and bpffs."""
    caps = ["IPC_LOCK", "SYS_NICE"]
    if kinds & {"direct", "afxdp", "veth"}:
        caps += ["NET_RAW", "NET_ADMIN"]
    if "afxdp" in kinds:
        caps += ["SYS_ADMIN", "BPF"]
    return caps


def dpdk_pod(scenario: Scenario, params: KubernetesParams, run_id: str, namespace: str, name: str,
             peer_macs: list[str], core_plan: Optional[CorePlan], base: dict, chain: list[str]) -> dict:
    """A DPDK pod of the chain: ``base`` (render.pod's spec: placement, tolerations, CPU and device
    requests) with testpmd instead of the kernel forwarder, hugepages as ``hugepages-2Mi``, the
    shared-dir volume (its sockets; a VF pod has none)."""
    cpus = core_plan.pods.get(name, frozenset()) if core_plan is not None else frozenset()
    argv = testpmd_argv(scenario, run_id, name, peer_macs, chain, "LCORES")
    kinds = {port_kind(scenario.model, chain, name, side) for side in (0, 1)}
    mem_mib, huge = forwarder.memory_mb(MTU), hugepages(scenario)
    container = dict(base["spec"]["containers"][0])
    res = {k: dict(v) for k, v in container["resources"].items()}
    for part in ("requests", "limits"):
        res[part]["memory"] = f"{(0 if huge else mem_mib) + POD_OVERHEAD_MIB}Mi"
        if huge:
            res[part]["hugepages-2Mi"] = f"{mem_mib}Mi"
        if "afxdp" in kinds and params.afxdp_resource:  # the device plugin's pool: one netdev per port
            res[part][params.afxdp_resource] = "2"
    volumes, mounts = [], []
    if "vfio" not in kinds:
        volumes.append({"name": "shared-dir", "hostPath": {"path": shared_dir(params, run_id, name),
                                                           "type": "DirectoryOrCreate"}})
        mounts.append({"name": "shared-dir", "mountPath": VHOST_MOUNT})
    if huge:
        volumes.append({"name": "hugepages", "emptyDir": {"medium": "HugePages-2Mi"}})
        mounts.append({"name": "hugepages", "mountPath": HUGEPAGES_MOUNT})
    if "afxdp" in kinds and not params.afxdp_resource:  # no device plugin to say which (the NADs' deviceIDs)
        container["env"] = [{"name": AFXDP_DEVICES_ENV, "value": " ".join(params.nics)}]
    setup = ()
    if "vfio" in kinds:  # the device plugin names the VFs in the pod's environment
        n = int(name[3:])
        setup = tuple(vfio_setup(pcidevice_env(params.sriov_dpdk_resource), peer_macs,
                                 [forwarder.pod_mac(n, 0), forwarder.pod_mac(n, 1)]))
    container.update({
        "name": "testpmd", "image": params.dpdk_image, "imagePullPolicy": params.image_pull_policy,
        "command": ["/bin/sh", "-c", pod_script(argv, cpus, bpffs="afxdp" in kinds, setup=setup)],
        "resources": res,
        "volumeMounts": mounts, "securityContext": {"capabilities": {"add": capabilities(kinds)}},
        # (timeout: the probe shares the CPUs with busy-polling forwarders)
        "readinessProbe": {"exec": {"command": ["grep", "-q", forwarder.READY_LINE, "/tmp/testpmd.log"]},
                           "periodSeconds": 1, "timeoutSeconds": 10},
    })
    spec = {k: v for k, v in base["spec"].items() if k != "securityContext"}
    spec.update(containers=[container], volumes=volumes)
    meta = json.loads(json.dumps(base["metadata"]))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def vswitch_script(scenario: Scenario, params: KubernetesParams, run_id: str, core_plan: Optional[CorePlan],
                   chain: list[str]) -> str:
    """The local node's OVS-DPDK (busybox sh): database and daemons in :data:`OVS_RUNDIR`, the bridge
    (secure: no flow but nfvlab's), its NIC ports (and the pods' memif ports), then ``/tmp/ready``."""
    hugepages = scenario.resources.hugepages
    eal = eal_memory_args(hugepages, vswitch.memory_mb(MTU), f"nfvl-{run_id}-ovs")
    eal = [a for a in eal if a != "--in-memory"]  # OVS adds it itself
    if not hugepages:
        eal = ["--legacy-mem", *eal]  # OVS + --no-huge works only with legacy memory
    pmd = sorted(core_plan.vswitch) if core_plan and core_plan.vswitch else []
    control = ",".join(map(str, sorted(core_plan.generator))) if core_plan and core_plan.generator else ""
    # per-port-memory: mempools sized by each port's queues. The shared pool's first try (262144
    # mbufs) fails with ENOBUFS, which OVS does not retry, and a vhost-user port without DPDK NIC
    # ports before it (afxdp NICs, direct pod ports) would get no mempool and never forward.
    config = [f'other_config:dpdk-extra="{" ".join(eal)}"', "other_config:dpdk-init=true",
              f"other_config:pmd-maxsleep={vswitch.PMD_MAXSLEEP_US}", "other_config:per-port-memory=true"]
    if pmd:
        config.append(f"other_config:pmd-cpu-mask={vswitch.cpu_mask(pmd)}")
    if hugepages:
        mb = vswitch.memory_mb(MTU)
        config += [f"other_config:dpdk-socket-mem={mb}", f"other_config:dpdk-socket-limit={mb}"]
    br = params.vswitch_bridge
    lines = [
        "set -e",
        f"R={OVS_RUNDIR}",
        "rm -f $R/conf.db $R/db.sock $R/*.ctl $R/*.pid",
        # libxdp (afxdp ports) pins its XDP dispatcher in bpffs, which a container's /sys lacks
        "grep -q ' /sys/fs/bpf bpf ' /proc/mounts || mount -t bpf bpf /sys/fs/bpf",
        f"ovsdb-tool create $R/conf.db {vswitch.SCHEMA}",
        "ovsdb-server $R/conf.db --remote=punix:$R/db.sock --unixctl=$R/ovsdb-server.ctl -vconsole:info -vsyslog:off &",
        "while [ ! -S $R/db.sock ]; do sleep 0.1; done",
        "ovs-vsctl --no-wait init",
        "ovs-vsctl --no-wait set Open_vSwitch . " + " ".join(shlex.quote(c) for c in config),
        (f"taskset -c {control} " if control else "")
        + f"{vswitch.VSWITCHD} unix:$R/db.sock --unixctl=$R/ovs-vswitchd.ctl -vconsole:info -vsyslog:off &",
        "ovs-vsctl --timeout=60 wait-until Open_vSwitch . dpdk_initialized=true",
        f"ovs-vsctl add-br {br} -- set bridge {br} datapath_type=netdev fail-mode=secure",
    ]
    for side, ofport in vswitch.NIC_OFPORT.items() if NIC_PORTS[scenario.model] else ():
        nic, name = params.nics[side], nic_port(scenario.model, params, side)
        if NIC_PORTS[scenario.model] == "afxdp":
            iface_opts = ["type=afxdp", "options:xdp-mode=native", "options:n_rxq=1"]
        else:
            iface_opts = ["type=dpdk", f"options:dpdk-devargs={vswitch.af_packet_devargs(side, nic, MTU)}"]
        lines.append(f"ovs-vsctl add-port {br} {name} -- set Interface {name} ofport_request={ofport} "
                     + " ".join(shlex.quote(o) for o in iface_opts))
        lines.append(f'e=$(ovs-vsctl get Interface {name} error); [ "$e" = "[]" ] || '
                     f'{{ echo "OVS port {name}: $e"; exit 1; }}')
    if POD_PORTS[scenario.model] == "memif":
        for j, pod in enumerate(chain):
            d = shared_dir(params, run_id, pod)
            lines.append(f"mkdir -p {d}")
            for side in (0, 1):
                name = memif_port_name(run_id, pod, side)
                devargs = forwarder.memif_devargs(2 * j + side, f"{d}/{name}.sock", "server")
                lines.append(f"ovs-vsctl add-port {br} {name} -- set Interface {name} type=dpdk "
                             f"options:dpdk-devargs={shlex.quote(devargs)} options:n_rxq=2")
                lines.append(f'e=$(ovs-vsctl get Interface {name} error); [ "$e" = "[]" ] || '
                             f'{{ echo "OVS port {name}: $e"; exit 1; }}')
    lines += ["touch /tmp/ready", "echo nfvlab-vswitch-ready",
              "trap 'kill $(jobs -p) 2>/dev/null; wait; exit 0' TERM INT", "wait"]
    return "\n".join(lines)


def vswitch_pod(scenario: Scenario, params: KubernetesParams, run_id: str, namespace: str,
                core_plan: Optional[CorePlan], labels: dict, node_selector: dict, chain: list[str]) -> dict:
    """The local node's vSwitch as the run's pod: host network (the NIC ports are the host's links),
    privileged (DPDK, packet sockets, XDP), Burstable (its PMD CPU comes from the core plan, not the
    CPU manager), :data:`OVS_RUNDIR` and the run's vhost dir from the host."""
    mb = vswitch.memory_mb(MTU)
    requests = {"cpu": "100m", "memory": f"{POD_OVERHEAD_MIB}Mi"}
    limits: dict = {}
    volumes = [{"name": "ovs-run", "hostPath": {"path": OVS_RUNDIR, "type": "DirectoryOrCreate"}},
               {"name": "vhost", "hostPath": {"path": f"{params.vhost_dir}/{run_id}", "type": "DirectoryOrCreate"}}]
    mounts = [{"name": "ovs-run", "mountPath": OVS_RUNDIR},
              {"name": "vhost", "mountPath": f"{params.vhost_dir}/{run_id}"}]
    if scenario.resources.hugepages:
        requests["hugepages-2Mi"] = limits["hugepages-2Mi"] = f"{mb}Mi"
        volumes.append({"name": "hugepages", "emptyDir": {"medium": "HugePages-2Mi"}})
        mounts.append({"name": "hugepages", "mountPath": HUGEPAGES_MOUNT})
    container = {"name": "ovs", "image": params.vswitch_image, "imagePullPolicy": params.image_pull_policy,
                 "command": ["/bin/sh", "-c", vswitch_script(scenario, params, run_id, core_plan, chain)],
                 "resources": {"requests": requests, **({"limits": limits} if limits else {})},
                 "securityContext": {"privileged": True}, "volumeMounts": mounts,
                 "readinessProbe": {"exec": {"command": ["test", "-f", "/tmp/ready"]}, "periodSeconds": 1,
                                    "timeoutSeconds": 10}}
    spec: dict = {"nodeSelector": dict(node_selector), "hostNetwork": True, "restartPolicy": "Never",
                  "terminationGracePeriodSeconds": 5, "automountServiceAccountToken": False,
                  "containers": [container], "volumes": volumes}
    if params.tolerations:
        spec["tolerations"] = [dict(t) for t in params.tolerations]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": VSWITCH_POD, "namespace": namespace,
                         "labels": {**labels, ROLE_LABEL: "vswitch"}},
            "spec": spec}


def ovs_taps(params: KubernetesParams) -> list[str]:
    """The tap devices OVS's userspace datapath makes in the node's namespace for its datapath and the
    bridge's internal port; OVS makes them persistent, so they outlive it (teardown deletes them)."""
    return ["ovs-netdev", params.vswitch_bridge]


def nic_port(model: str, params: KubernetesParams, side: int) -> str:
    """OVS port name of NIC ``side``: a DPDK port ``dpdk-nicN``, or (afxdp) the netdev itself."""
    return params.nics[side] if NIC_PORTS[model] == "afxdp" else f"dpdk-nic{side}"


def cross_connects(model: str, params: KubernetesParams, run_id: str,
                   chain: list[str]) -> list[tuple[str | int, str | int]]:
    """OVS port pairs to cross-connect (names; OpenFlow port numbers for the OVS CNI's veths): NIC 0 -
    pod1 eth1, each pod's eth2 - the next pod's eth1, the last pod's eth2 - NIC 1 (chain-combined: only
    the pod-to-pod links; its ends are direct)."""
    if not runs_ovs(model):
        return []
    pods: list = [veth_ofport(chain, pod, side) if POD_PORTS[model] == "veth" else
                  pod_port_name(model, run_id, pod, side) for pod in chain for side in (0, 1)]
    if NIC_PORTS[model] is None:
        pods = pods[1:-1]
    else:
        pods = [nic_port(model, params, 0), *pods, nic_port(model, params, 1)]
    return [(pods[i], pods[i + 1]) for i in range(0, len(pods), 2)]


def peer_macs(chain: list[str], tg_macs: list[str]) -> dict[str, list[str]]:
    """Pod -> the destination MACs of its port 0 and port 1 frames: the generator port or the
    neighbouring pod's port on that side."""
    out = {}
    for j, pod in enumerate(chain):
        left = tg_macs[0] if j == 0 else forwarder.pod_mac(int(chain[j - 1][3:]), 1)
        right = tg_macs[1] if j == len(chain) - 1 else forwarder.pod_mac(int(chain[j + 1][3:]), 0)
        out[pod] = [left, right]
    return out
