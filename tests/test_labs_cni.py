"""Experiment E's lab (nfvlab.labs.embedded.cni): real namespaces, links, tunnels, nftables DNAT, tools.

Every test runs under the host lock (the lab takes it) and insists on no residue afterwards:
namespaces (node ones too), state records, run dirs, processes marked with the lab id.
"""
import signal
import subprocess
import sys

import pytest
from conftest import NO_RESIDUE, REPO, interface_counters, lab_residue

from nfvlab.labs import LabError
from nfvlab.labs.embedded import state
from nfvlab.labs.embedded.cni import LINK_IF, CniLab, tunnel_problem
from nfvlab.scenario.cni import CniConfigError, CniPath, IperfParams, WrkParams
from nfvlab.system import netns as nl
from nfvlab.traffic.tcp import ToolError, run_iperf3, run_wrk, start_nginx

pytestmark = pytest.mark.lab

QUICK = IperfParams(parallel_streams=2, duration_s=1)


def cni_residue() -> dict:
    """lab_residue plus what its patterns do not cover: node namespaces, processes marked with a lab id.

    (nginx rewrites its environment, so it is found by its command line, which names the lab's run dir.)
    """
    base = lab_residue()
    marked = {r.pid for recs in state.marked_processes().values() for r in recs}
    return {**base, "namespaces": [n for n in state.existing_namespaces() if state.LAB_ID_PATTERN.match(n)],
            "generator_pids": sorted(marked | {int(p.split()[0]) for p in base["generator_pids"]})}


def locked_cni_residue() -> dict:
    """cni_residue(), read under the host lock: a live lab of another run is not residue."""
    with state.HostLock("test residue check"):
        return cni_residue()


@pytest.fixture
def no_residue(clean_host):
    assert locked_cni_residue() == NO_RESIDUE
    yield
    assert locked_cni_residue() == NO_RESIDUE


def pod_to_pod(lab: CniLab):
    return run_iperf3(lab, server_ns=lab.ns("pod2"), server_ip=lab.address("pod2"), client_ns=lab.ns("pod1"),
                      params=QUICK)


def _forwarded(ns: str) -> int:
    """Datagrams the IP stack of ``ns`` forwarded (its Ip ForwDatagrams counter)."""
    lines = [ln.split() for ln in subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"], check=True,
                                                 capture_output=True, text=True).stdout.splitlines()
             if ln.startswith("Ip:")]
    return int(dict(zip(lines[0], lines[1]))["ForwDatagrams"])


@pytest.mark.parametrize("data_path", ["direct", "vxlan"])
def test_pod_to_pod_crosses_the_node_link_on_its_data_path(no_residue, data_path):
    with CniLab(CniPath(data_path, 1500)) as lab:
        assert {ns.rsplit("-", 1)[1] for ns in lab.state.namespaces} == {"node1", "node2", "pod1", "pod2"}
        before = interface_counters(lab.ns("node1"), [LINK_IF])[LINK_IF]["tx_bytes"]
        forwarded_before = _forwarded(lab.ns("node1"))
        r = pod_to_pod(lab)
        sent = interface_counters(lab.ns("node1"), [LINK_IF])[LINK_IF]["tx_bytes"] - before
        forwarded = _forwarded(lab.ns("node1")) - forwarded_before
        tunnel = nl.link_exists(lab.ns("node1"), "vxlan0")
        via_tunnel = interface_counters(lab.ns("node1"), ["vxlan0"])["vxlan0"]["tx_bytes"] if tunnel else 0
        assert nl.link_mtu(lab.ns("pod1"), "eth0") == (1450 if data_path == "vxlan" else 1500)
    # (How fast: bench/cni_paths.py.) Everything the pod received crossed node1's end of the link.
    # veth counters count GSO super-packets (one set of headers per up to 64 kB), so headers add
    # little here; segments sent again (a host stall can overflow a queue) crossed it twice.
    assert 0 < r.received_bytes < sent < (r.received_bytes + r.retransmits * 1500) * 1.1, r
    assert forwarded > 0  # routed by node1's stack (the SR-IOV analogue's pods bypass it)
    assert tunnel == (data_path == "vxlan")
    if tunnel:  # ... and went through the VXLAN device, not around it
        assert r.received_bytes < via_tunnel < sent


def _offloads(ns: str, ifname: str) -> dict[str, str]:
    out = subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-k", ifname], check=True, capture_output=True,
                         text=True).stdout
    return {k.strip(): v.split()[0] for k, v in (ln.split(":", 1) for ln in out.splitlines()[1:] if ":" in ln)
            if k.strip() in ("tcp-segmentation-offload", "generic-segmentation-offload")}


def _mean_link_frame_bytes(lab, run) -> float:
    """Mean size of the frames node1 sent on the node link while ``run()`` ran."""
    before = interface_counters(lab.ns("node1"), [LINK_IF])[LINK_IF]
    run()
    after = interface_counters(lab.ns("node1"), [LINK_IF])[LINK_IF]
    return (after["tx_bytes"] - before["tx_bytes"]) / (after["tx_packets"] - before["tx_packets"])


def test_segmentation_offload_off_reaches_every_node_and_pod_interface_and_makes_mtu_count(no_residue):
    """TSO/GSO off: the node link carries MTU-sized frames, so per-packet costs (and the pods' TCP
    goodput: bench/cni_paths.py) depend on the MTU, as on a NIC link."""
    mean_frame = {}
    for mtu in (1500, 9000):
        with CniLab(CniPath("vxlan", mtu), segmentation_offload=False) as lab:
            for ns, ifname in (("pod1", "eth0"), ("node1", "vpod1"), ("node1", LINK_IF), ("node1", "vxlan0"),
                               ("node2", LINK_IF), ("pod2", "eth0")):
                assert _offloads(lab.ns(ns), ifname) == {"tcp-segmentation-offload": "off",
                                                         "generic-segmentation-offload": "off"}, (ns, ifname)
            mean_frame[mtu] = _mean_link_frame_bytes(lab, lambda: pod_to_pod(lab))
    with CniLab(CniPath("direct", 1500)) as lab:  # the default leaves the kernel's offloads on
        assert _offloads(lab.ns("pod1"), "eth0")["generic-segmentation-offload"] == "on"
        mean_frame["offloaded"] = _mean_link_frame_bytes(lab, lambda: pod_to_pod(lab))
    # No frame above the MTU (+ its 14 B Ethernet header) without offloads; at 9000 the data
    # frames are jumbo ones; with offloads the veth carries super-packets beyond the MTU.
    assert mean_frame[1500] <= 1514 < mean_frame[9000] <= 9014, mean_frame
    assert mean_frame["offloaded"] > 1514, mean_frame


def test_sriov_analogue_pod_has_a_direct_port_on_the_node_link(no_residue):
    with CniLab(CniPath("sriov-analogue", 9000)) as lab:
        assert not nl.link_exists(lab.ns("node1"), "vpod1")  # no veth through the node's stack
        assert nl.link_mtu(lab.ns("pod2"), "eth0") == 9000
        link_before = interface_counters(lab.ns("node1"), [LINK_IF])[LINK_IF]["tx_bytes"]
        forwarded_before = _forwarded(lab.ns("node1"))
        r = pod_to_pod(lab)
        on_link = interface_counters(lab.ns("node1"), [LINK_IF])[LINK_IF]["tx_bytes"] - link_before
        forwarded = _forwarded(lab.ns("node1")) - forwarded_before
    # The pods talk (how fast: bench/cni_paths.py) across the node link, their ports on it, and
    # node1's IP stack forwards none of it.
    assert 0 < r.received_bytes < on_link and forwarded == 0, (r, on_link, forwarded)


def test_service_dnat_answers_host_to_service_and_only_because_of_the_rule(no_residue):
    params = WrkParams(duration_s=1, file_bytes=(1000,))
    with CniLab(CniPath("direct", 1500)) as lab:
        start_nginx(lab, ns=lab.ns("pod2"), bind_ip=lab.address("pod2"), file_bytes=params.file_bytes)
        via_service = run_wrk(lab, client_ns=lab.ns("node1"), url="http://198.19.0.10/f1000.bin", params=params)
        to_pod = run_wrk(lab, client_ns=lab.ns("node1"), url=f"http://{lab.address('pod2')}/f1000.bin",
                         params=params)
    # Answered, every request (how many per second: bench/cni_paths.py).
    assert via_service.requests > 0 and via_service.errors == 0, via_service
    assert to_pod.requests > 0 and to_pod.errors == 0, to_pod
    with CniLab(CniPath("direct", 1500), service=False) as lab:
        start_nginx(lab, ns=lab.ns("pod2"), bind_ip=lab.address("pod2"), file_bytes=params.file_bytes)
        # Without the rule node2 has no route for the service range: wrk's first connect fails.
        with pytest.raises(ToolError, match="unable to connect to 198.19.0.10:http"):
            run_wrk(lab, client_ns=lab.ns("node1"), url="http://198.19.0.10/f1000.bin", params=params)


def test_ipip_is_measured_where_the_kernel_has_it_else_refused_with_the_reason(no_residue):
    why = tunnel_problem("ipip")
    if why is None:
        with CniLab(CniPath("ipip", 1500)) as lab:
            assert nl.link_mtu(lab.ns("pod1"), "eth0") == 1480
            r = pod_to_pod(lab)
            via_tunnel = interface_counters(lab.ns("node1"), ["ipip0"])["ipip0"]["tx_bytes"]
        assert 0 < r.received_bytes < via_tunnel, (r, via_tunnel)  # through the tunnel (speed: bench)
        return
    with pytest.raises(LabError) as info:
        CniLab(CniPath("ipip", 1500))
    assert str(info.value).startswith("data path ipip: not realizable here: the kernel cannot create ipip devices")
    assert cni_residue() == NO_RESIDUE


def test_bad_input_is_refused_before_anything_exists(no_residue):
    with pytest.raises(CniConfigError, match="^link_mtu_bytes=1300: vxlan needs 50 B"):
        CniLab(CniPath("vxlan", 1300))
    with pytest.raises(LabError, match="give a nfvlab.scenario.cni.CniPath"):
        CniLab("direct")
    assert cni_residue() == NO_RESIDUE


def test_error_while_building_or_running_leaves_nothing(no_residue, monkeypatch):
    def fail(self, node):
        raise LabError("nft refused")

    monkeypatch.setattr(CniLab, "_service_rule", fail)  # after namespaces, links and routes exist
    with pytest.raises(LabError, match="nft refused"), CniLab(CniPath("vxlan", 1500)):
        pass
    assert cni_residue() == NO_RESIDUE
    monkeypatch.undo()
    with pytest.raises(RuntimeError, match="boom"), CniLab(CniPath("direct", 1500)) as lab:
        start_nginx(lab, ns=lab.ns("pod2"), bind_ip=lab.address("pod2"), file_bytes=(1000,))
        assert cni_residue()["generator_pids"]
        raise RuntimeError("boom")


PROGRAM = """
import time
from nfvlab.labs.embedded.cni import CniLab
from nfvlab.scenario.cni import CniPath
from nfvlab.traffic.tcp import start_nginx
with CniLab(CniPath("vxlan", 3000)) as lab:
    start_nginx(lab, ns=lab.ns("pod2"), bind_ip=lab.address("pod2"), file_bytes=(1000,))
    lab.spawn("iperf3-server", ["iperf3", "-s", "-B", lab.address("pod2")], ns=lab.ns("pod2"))
    print("up", flush=True)
    time.sleep(60)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_tears_down_namespaces_processes_and_tables(no_residue, spawn, sig):
    p = spawn([sys.executable, "-c", PROGRAM], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    assert p.stdout.readline().strip() == "up", p.stderr.read()
    up = cni_residue()  # its lab holds the host lock: no other lab is up
    assert len(up["namespaces"]) == 4 and len(up["generator_pids"]) >= 2, up
    node1 = next(n for n in up["namespaces"] if n.endswith("-node1"))
    tables = subprocess.run(["ip", "netns", "exec", node1, "nft", "list", "tables"], check=False, capture_output=True,
                            text=True).stdout
    assert "nfvl-" in tables  # the service rule's table, which must go with the namespace
    p.send_signal(sig)
    assert p.wait(timeout=120) != 0  # a guard only: teardown takes seconds
    assert locked_cni_residue() == NO_RESIDUE
    assert "nfvl-" not in subprocess.run(["nft", "list", "tables"], check=False, capture_output=True, text=True).stdout


def test_kill9_then_lab_clean_leaves_no_residue(no_residue, spawn, capsys):
    from nfvlab.cli import main

    p = spawn([sys.executable, "-c", PROGRAM], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    assert p.stdout.readline().strip() == "up", p.stderr.read()
    p.kill()
    p.wait()
    # Taken at once, as a run's lock (the in-process `lab clean` below runs under it): another run
    # waiting for the lock would otherwise clean this leftover first.
    with state.HostLock("test kill -9 clean", for_run=True):
        assert len(cni_residue()["namespaces"]) == 4  # nothing tore it down
        capsys.readouterr()
        assert main(["lab", "clean"]) == 0
        assert "(cni-vxlan," in capsys.readouterr().out
        assert cni_residue() == NO_RESIDUE
