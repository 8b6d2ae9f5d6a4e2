"""The Kubernetes lab backend: rendered manifests (offline, strict) and real pods on a real cluster.

The cluster tests start the local single-node cluster of nfvlab/labs/kubernetes/local_cluster/ (real
kube-apiserver, scheduler, controller-manager, kubelet, containerd, Multus and Debian's CNI
plugins; built by scripts/k8s/build.sh, skipped with the reason when it is not built), deploy a
scenario through nfvlab.labs.kubernetes.KubernetesLab and drive real packets through the pod with
the embedded generator cabled to the node's NIC ports.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import (NO_RESIDUE, REPO, barely_sent, check_exact, clean_trial, failed_searches, lab_residue, nfvlab_cli,
                      until_unspoiled)
from nfvlab import params as P
from nfvlab.labs import LabError
from nfvlab.labs.kubernetes import backend as kb
from nfvlab.labs import forwarder
from nfvlab.labs.kubernetes import node_routing, render, userspace
from nfvlab.labs.kubernetes.cluster import quantity
from nfvlab.labs.kubernetes.pods import why_not_ready
from nfvlab.scenario import DensityCell, Resources, Scenario
from nfvlab.system import netns as nl
from nfvlab.system.hostlock import HostLock
from nfvlab.trial import TrialResult

NICS = ["nfvkn0", "nfvkn1"]


def _kparams(**kw):
    base = {"node": "worker-1", "nics": ["ens1f0", "ens1f1"], "cabling": "external",
            "tg_macs": ["02:00:00:00:aa:01", "02:00:00:00:aa:02"]}
    return P.KubernetesParams(**{**base, **kw})


# ------------------------------------------------------------------ offline: rendering
@pytest.mark.parametrize("model", sorted(render.CNI_OF))
@pytest.mark.parametrize("resources", [Resources(), Resources(pinning="exclusive"), Resources(hugepages=True)])
def test_every_rendered_manifest_passes_strict_validation(model, resources):
    kp = _kparams(sriov_mode="netdevice")  # sriov: the kernel pod on netdevice VFs
    objects = render.manifests(Scenario(model, resources), kp, "abc123")
    assert [o["kind"] for o in objects] == ["Namespace", "NetworkAttachmentDefinition",
                                            "NetworkAttachmentDefinition", "Pod"]
    assert [p for o in objects for p in render.validate(o, kp)] == []
    assert all(o["metadata"]["labels"][render.RUN_LABEL] == "abc123" for o in objects)
    pod = objects[-1]
    res = pod["spec"]["containers"][0]["resources"]
    if resources.pinning == "exclusive":  # Guaranteed QoS: integer CPUs, requests == limits
        assert res["requests"]["cpu"] == res["limits"]["cpu"] == "1"
        assert res["requests"]["memory"] == res["limits"]["memory"]
    if resources.hugepages:
        assert res["requests"]["hugepages-2Mi"] == res["limits"]["hugepages-2Mi"] == "64Mi"
    if model == "sriov":
        assert res["requests"][kp.sriov_resource] == "2" and kp.sriov_dpdk_resource not in res["requests"]
        assert objects[1]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] == kp.sriov_resource
        assert json.loads(objects[1]["spec"]["config"])["ipam"]["addresses"] == [{"address": "198.18.1.2/24"}]
    nets = json.loads(pod["metadata"]["annotations"][render.NETWORKS_ANNOTATION])
    assert [n["interface"] for n in nets] == ["eth1", "eth2"]
    assert pod["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "worker-1"}


USERSPACE = sorted(userspace.NIC_PORTS)


@pytest.mark.parametrize("resources", [Resources(), Resources(pinning="exclusive"), Resources(hugepages=True)])
def test_sriov_renders_the_drafts_dpdk_pod_on_vfio_pci_vfs_of_the_device_plugins_resource(resources):
    kp = _kparams(sriov_dpdk_resource="example.com/sriov-dpdk.a")
    objects = render.manifests(Scenario("sriov", resources), kp, "abc123")
    assert [p for o in objects for p in render.validate(o, kp)] == []
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Namespace", "nfvlab-abc123"), ("NetworkAttachmentDefinition", "pod1-sriov0"),
        ("NetworkAttachmentDefinition", "pod1-sriov1"), ("Pod", "pod1")]
    # the SR-IOV CNI only records a vfio-pci VF (Multus adds its deviceID): no IPAM, no netdev settings
    assert [json.loads(o["spec"]["config"]) for o in objects[1:3]] == [
        {"cniVersion": "0.3.1", "type": "sriov", "name": f"pod1-sriov{side}"} for side in (0, 1)]
    assert {o["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] for o in objects[1:3]} == {
        "example.com/sriov-dpdk.a"}
    pod = objects[-1]
    assert [(n["name"], n["interface"]) for n in json.loads(pod["metadata"]["annotations"][
        render.NETWORKS_ANNOTATION])] == [("pod1-sriov0", "eth1"), ("pod1-sriov1", "eth2")]
    c = pod["spec"]["containers"][0]
    res, script = c["resources"], c["command"][2]
    # two VFs, and hugepages whatever the scenario says: the VFs DMA into testpmd's memory
    for part in ("requests", "limits"):
        assert res[part]["example.com/sriov-dpdk.a"] == "2" and "intel.com/intel_sriov_netdevice" not in res[part]
        assert res[part]["hugepages-2Mi"] == f"{forwarder.TESTPMD_MEMORY_MB}Mi"
    assert pod["spec"]["volumes"] == [{"name": "hugepages", "emptyDir": {"medium": "HugePages-2Mi"}}]
    if resources.pinning == "exclusive":  # Guaranteed: integer CPU, requests == limits
        assert res["requests"]["cpu"] == res["limits"]["cpu"] == "1"
        assert res["requests"]["memory"] == res["limits"]["memory"]
    # testpmd (MAC forwarding) drives the VFs the device plugin names, allow-listed, no vdev
    assert '"$PCIDEVICE_EXAMPLE_COM_SRIOV_DPDK_A"' in script
    assert 'dpdk-testpmd "--lcores=0@($cpus),1@($cpus)" -a "$dev0" -a "$dev1" --huge-dir /hugepages' in script
    assert "--forward-mode=mac" in script and "--vdev" not in script and "--no-pci" not in script
    assert '"--eth-peer=0,$peer0" "--eth-peer=1,$peer1" --cmdline-file=/tmp/testpmd.cmd' in script
    assert c["readinessProbe"]["exec"]["command"] == ["grep", "-q", forwarder.READY_LINE, "/tmp/testpmd.log"]
    assert set(c["securityContext"]["capabilities"]["add"]) == {"IPC_LOCK", "SYS_NICE"}
    # the netdevice VFs' kernel pod stays selectable
    kernel = render.manifests(Scenario("sriov", resources), _kparams(sriov_mode="netdevice"), "abc123")
    assert kernel[-1]["spec"]["containers"][0]["command"][2].startswith("set -e; arp -i eth1")


#: A node's sysfs PCI devices: VF -> its PF (what ``physfn`` links to).
VF_PFS = {"0000:3b:02.0": "0000:3b:00.0", "0000:3b:02.1": "0000:3b:00.0", "0000:3b:0a.0": "0000:3b:00.1",
          "0000:3a:0a.0": "0000:3b:00.1"}


@pytest.mark.parametrize("vfs,dev,ports", [
    # eth1's VF is the one on the PF of the lower address; port 0 the lower VF address
    ("0000:3b:02.0,0000:3b:0a.0", ("0000:3b:02.0", "0000:3b:0a.0"), (0, 1)),
    ("0000:3b:0a.0,0000:3b:02.0", ("0000:3b:02.0", "0000:3b:0a.0"), (0, 1)),
    ("0000:3b:02.0,0000:3a:0a.0", ("0000:3b:02.0", "0000:3a:0a.0"), (1, 0)),  # eth2's VF is DPDK port 0
])
def test_the_sriov_dpdk_pod_orders_its_vfs_by_pf_and_dpdk_port_in_busybox_sh(tmp_path, vfs, dev, ports):
    for vf, pf in VF_PFS.items():
        (tmp_path / vf).mkdir()
        (tmp_path / vf / "physfn").symlink_to(f"../{pf}")
    peers, macs = ["02:00:00:00:aa:01", "02:00:00:00:aa:02"], [forwarder.pod_mac(1, 0), forwarder.pod_mac(1, 1)]
    lines = userspace.vfio_setup("PCIDEVICE_X", peers, macs, str(tmp_path), str(tmp_path / "cmd"))
    out = subprocess.run(["busybox", "sh", "-c", "set -e\n" + "\n".join(lines) + '\necho "$dev0 $dev1 $peer0 $peer1"'],
                         env={"PCIDEVICE_X": vfs, "PATH": os.environ["PATH"]}, capture_output=True, text=True)
    assert out.returncode == 0, out
    # DPDK port p forwards to the generator port on its VF's side and carries that side's planned MAC
    assert out.stdout.split() == [*dev, peers[ports[0]], peers[ports[1]]]
    assert (tmp_path / "cmd").read_text() == f"mac_addr set 0 {macs[ports[0]]}\nmac_addr set 1 {macs[ports[1]]}\n"
    for bad, why in (("0000:3b:02.0,0000:3b:02.1", "want one VF of each of the node's two PFs"),
                     ("0000:3b:02.0", "PCIDEVICE_X='0000:3b:02.0': want two VFs"),
                     ("0000:3b:02.0,0000:3c:00.7", "and 0000:3c:00.7 (PF none)")):
        out = subprocess.run(["busybox", "sh", "-c", "set -e\n" + "\n".join(lines)],
                             env={"PCIDEVICE_X": bad, "PATH": os.environ["PATH"]}, capture_output=True, text=True)
        assert out.returncode == 1 and why in out.stdout, out
VHOST_MODELS = [m for m in USERSPACE if userspace.POD_PORTS[m] == "vhostuser" and userspace.NIC_PORTS[m]]


@pytest.mark.parametrize("model", VHOST_MODELS)
@pytest.mark.parametrize("cabling", ["local", "external"])
@pytest.mark.parametrize("resources", [Resources(), Resources(pinning="exclusive"), Resources(hugepages=True)])
def test_user_space_models_render_dpdk_pods_on_userspace_cni_vhost_user_ports(model, cabling, resources):
    kp = _kparams(cabling=cabling)
    objects = render.manifests(Scenario(model, resources), kp, "abc123")
    assert [p for o in objects for p in render.validate(o, kp)] == []
    pods = [o["metadata"]["name"] for o in objects if o["kind"] == "Pod"]
    chain = ["pod1", "pod2"] if model == "chain-userspace" else ["pod1"]
    # the local node's vSwitch (nfvlab's pod) comes before the DPDK pods whose ports it serves
    assert pods == (["vswitch"] if cabling == "local" else []) + chain
    nads = {o["metadata"]["name"]: json.loads(o["spec"]["config"]) for o in objects
            if o["kind"] == "NetworkAttachmentDefinition"}
    assert sorted(nads) == sorted(f"{pod}-vhost{side}" for pod in chain for side in (0, 1))
    sockets = {c["host"]["vhost"]["socketfile"] for c in nads.values()}
    assert len(sockets) == 2 * len(chain) and all(len(s) <= 15 for s in sockets)  # one OVS port each
    assert {(c["type"], c["host"]["engine"], c["host"]["iftype"], c["host"]["vhost"]["mode"],
             c["container"]["vhost"]["mode"]) for c in nads.values()} == {
        ("userspace", "ovs-dpdk", "vhostuser", "client", "server")}
    for name in chain:
        pod = next(o for o in objects if o["metadata"]["name"] == name)
        nets = json.loads(pod["metadata"]["annotations"][render.NETWORKS_ANNOTATION])
        assert [(n["name"], n["interface"]) for n in nets] == [(f"{name}-vhost0", "eth1"),
                                                                (f"{name}-vhost1", "eth2")]
        c = pod["spec"]["containers"][0]
        script = c["command"][2]
        assert "dpdk-testpmd" in script and "--forward-mode=mac" in script
        for side in (0, 1):  # virtio_user serves the socket the port's NAD names
            assert f"path={userspace.VHOST_MOUNT}/{userspace.socket_name('abc123', name, side)},server=1" in script
        assert c["readinessProbe"]["exec"]["command"][-2:] == [forwarder.READY_LINE, "/tmp/testpmd.log"]
        res = c["resources"]
        if resources.hugepages:
            assert res["requests"]["hugepages-2Mi"] == res["limits"]["hugepages-2Mi"] == \
                f"{forwarder.TESTPMD_MEMORY_MB}Mi"
            assert "--huge-dir /hugepages" in script and "--no-huge" not in script
        else:
            assert "hugepages-2Mi" not in res["requests"] and "--no-huge" in script
        if resources.pinning == "exclusive":  # Guaranteed: integer CPU, requests == limits
            assert res["requests"]["cpu"] == res["limits"]["cpu"] == "1"
            assert res["requests"]["memory"] == res["limits"]["memory"]
    # frames go generator -> pod1 -> ... -> generator: each pod's peers are its neighbours' MACs
    first = next(o for o in objects if o["metadata"]["name"] == chain[0])["spec"]["containers"][0]["command"][2]
    assert "--eth-peer=0,02:00:00:00:aa:01" in first
    assert f"--eth-peer=1,{forwarder.pod_mac(2, 0) if len(chain) == 2 else '02:00:00:00:aa:02'}" in first


def test_the_local_vswitch_pod_runs_ovs_dpdk_with_secure_bridge_and_the_models_nic_ports():
    kp = _kparams(cabling="local", nics=["nfvkn0", "nfvkn1"])
    for model, port in (("ovs-dpdk-vhost", "type=dpdk"), ("ovs-afxdp", "type=afxdp")):
        sw = next(o for o in render.manifests(Scenario(model), kp, "abc123") if o["metadata"]["name"] == "vswitch")
        assert sw["spec"]["hostNetwork"] is True
        assert sw["spec"]["containers"][0]["securityContext"] == {"privileged": True}
        script = sw["spec"]["containers"][0]["command"][2]
        assert "fail-mode=secure" in script and script.count(port) == 2
        assert "ovs-vsctl --timeout=60 wait-until Open_vSwitch . dpdk_initialized=true" in script
    # the bridge cross-connects port to port, never by MAC learning: NIC 0 - pod1 - pod2 - NIC 1
    assert userspace.cross_connects("chain-userspace", kp, "abc123", ["pod1", "pod2"]) == [
        ("dpdk-nic0", "vhuabc12310"), ("vhuabc12311", "vhuabc12320"), ("vhuabc12321", "dpdk-nic1")]
    assert userspace.cross_connects("ovs-afxdp", kp, "abc123", ["pod1"]) == [
        ("nfvkn0", "vhuabc12310"), ("vhuabc12311", "nfvkn1")]


def test_ovs_dpdk_memif_renders_memif_server_ports_on_the_vswitch_and_client_ports_in_the_pod():
    # The Userspace CNI's OVS engine has no memif: nfvlab's OVS ports, the sockets in the pod's shared-dir.
    kp = _kparams(cabling="local", nics=["nfvkn0", "nfvkn1"])
    objects = render.manifests(Scenario("ovs-dpdk-memif"), kp, "abc123")
    assert [p for o in objects for p in render.validate(o, kp)] == []
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Namespace", "nfvlab-abc123"), ("Pod", "vswitch"), ("Pod", "pod1")]
    sw, pod = (o["spec"]["containers"][0]["command"][2] for o in objects[1:])
    for side in (0, 1):
        sock = f"{kp.vhost_dir}/abc123/pod1/mifabc1231{side}.sock"
        assert f"net_memif{side},role=server,socket={sock},socket-abstract=no,rsize=12" in sw
        assert (f"net_memif{side},role=client,socket={userspace.VHOST_MOUNT}/mifabc1231{side}.sock,"
                "socket-abstract=no,rsize=12") in pod
    assert "--rxq=2 --txq=2" in pod and "annotations" not in objects[2]["metadata"]
    assert objects[2]["spec"]["volumes"][0]["hostPath"]["path"] == f"{kp.vhost_dir}/abc123/pod1"
    assert userspace.cross_connects("ovs-dpdk-memif", kp, "abc123", ["pod1"]) == [
        ("dpdk-nic0", "mifabc12310"), ("mifabc12311", "dpdk-nic1")]


def test_chain_combined_has_direct_north_south_ports_and_a_user_space_east_west_link():
    kp = _kparams(cabling="local", nics=["nfvkn0", "nfvkn1"])
    objects = render.manifests(Scenario("chain-combined"), kp, "abc123")
    assert [p for o in objects for p in render.validate(o, kp)] == []
    nads = {o["metadata"]["name"]: json.loads(o["spec"]["config"]) for o in objects
            if o["kind"] == "NetworkAttachmentDefinition"}
    assert {n: (c["type"], c.get("device")) for n, c in nads.items()} == {
        "pod1-direct0": ("host-device", "nfvkn0"), "pod1-vhost1": ("userspace", None),
        "pod2-vhost0": ("userspace", None), "pod2-direct1": ("host-device", "nfvkn1")}
    pods = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Pod"}
    assert [n["name"] for n in json.loads(pods["pod2"]["metadata"]["annotations"][render.NETWORKS_ANNOTATION])] \
        == ["pod2-vhost0", "pod2-direct1"]
    pod1 = pods["pod1"]["spec"]["containers"][0]["command"][2]
    assert "net_af_packet0,iface=eth1" in pod1 and "net_virtio_user1,path=" in pod1
    # OVS has no NIC ports: its only flows join pod1's eth2 and pod2's eth1
    assert "dpdk-nic" not in pods["vswitch"]["spec"]["containers"][0]["command"][2]
    assert userspace.cross_connects("chain-combined", kp, "abc123", ["pod1", "pod2"]) == [
        ("vhuabc12311", "vhuabc12320")]


def test_what_nfvlab_cannot_render_or_the_local_node_cannot_run_says_why_in_one_line():
    lab = kb.KubernetesLab(P.LabParams(kind="kubernetes", kubernetes=_kparams(cabling="local")))
    why = lab.check(Scenario("ebpf-tc", Resources(pcdr4nf="1:2")))
    assert len(why) == 1 and "core ratios need user-space NFs" in why[0], why
    assert lab.check(Scenario("vpp")) == [f"vpp cannot run on this cluster: {userspace.LOCAL_WHY['vpp']}"]
    assert "VPP 19.04's API files" in userspace.LOCAL_WHY["vpp"]
    # afxdp-cni on the local node: its veth NIC ports are no device plugin's pool (the profile's default)
    assert lab.check(Scenario("afxdp-cni")) == [f"afxdp-cni cannot run on this cluster: {userspace.AFXDP_POOL_WHY}"]


def test_a_dpdk_pods_cni_missing_from_the_nodes_cni_bin_directory_is_named(tmp_path):
    (tmp_path / "net.d").mkdir()
    (tmp_path / "bin").mkdir()
    kp = _kparams(cabling="local", afxdp_resource=None, cni_conf_dir=str(tmp_path / "net.d"))
    cnis = {"ovs-dpdk-vhost": ("userspace", "Userspace CNI"), "ovs-dpdk-tap": ("ovs", "OVS CNI"),
            "afxdp-cni": ("afxdp", "AF_XDP CNI"), "sriov": None}

    def missing(model):  # (the other reasons depend on this host: its OVS, its links, no cluster)
        why = kb.KubernetesLab(P.LabParams(kind="kubernetes", kubernetes=kp)).check(Scenario(model))
        return [w.split(": ", 1)[1] for w in why if "CNI bin directory" in w]

    for model, cni in cnis.items():
        assert missing(model) == ([f"the node's CNI bin directory ({tmp_path / 'bin'}) has no {cni[1]} "
                                   f"(scripts/k8s/cni-{cni[0]}.sh builds it; `nfvlab cluster up` installs it)"]
                                  if cni else [])
    for binary in ("userspace", "ovs", "afxdp"):
        (tmp_path / "bin" / binary).touch()
    assert [missing(model) for model in cnis] == [[]] * len(cnis)


def test_afxdp_cni_without_a_pool_renders_nads_naming_the_nodes_nic_ports():
    kp = _kparams(cabling="local", afxdp_resource=None)
    objs = render.manifests(Scenario("afxdp-cni"), kp, "abc123")
    assert [p for o in objs for p in render.validate(o, kp)] == []
    nads = [o for o in objs if o["kind"] == "NetworkAttachmentDefinition"]
    assert [json.loads(o["spec"]["config"]) for o in nads] == [
        {"cniVersion": "0.3.0", "type": "afxdp", "mode": "primary", "name": f"pod1-afxdp{side}",
         "deviceID": nic, "skipUnloadBpf": True} for side, nic in enumerate(kp.nics)]
    assert all("annotations" not in o["metadata"] for o in nads)  # no pool to draw from
    pod = objs[-1]["spec"]["containers"][0]
    assert not any("afxdp" in k for part in pod["resources"].values() for k in part)


def test_vpp_and_afxdp_cni_render_dpdk_pods_on_their_cnis_for_a_real_cluster():
    kp = _kparams(afxdp_resource="afxdp/pool1", vpp_bridge_id=7)
    vpp = render.manifests(Scenario("vpp"), kp, "abc123")
    afx = render.manifests(Scenario("afxdp-cni"), kp, "abc123")
    assert [p for o in (*vpp, *afx) for p in render.validate(o, kp)] == []
    # no vSwitch pod: the node's VPP, or none at all (the pool's netdevs are the pod's)
    assert [o["metadata"]["name"] for o in vpp if o["kind"] == "Pod"] == ["pod1"]
    cfg = {o["metadata"]["name"]: json.loads(o["spec"]["config"]) for o in vpp
           if o["kind"] == "NetworkAttachmentDefinition"}
    assert sorted(cfg) == ["pod1-memif0", "pod1-memif1"]
    assert cfg["pod1-memif0"]["host"] == {"engine": "vpp", "iftype": "memif", "netType": "bridge",
                                          "memif": {"role": "master", "mode": "ethernet",
                                                    "socketfile": "mifabc12310.sock"},
                                          "bridge": {"bridgeId": 7}}
    script = vpp[-1]["spec"]["containers"][0]["command"][2]
    assert f"net_memif0,role=client,socket={userspace.VHOST_MOUNT}/mifabc12310.sock" in script
    nads = [o for o in afx if o["kind"] == "NetworkAttachmentDefinition"]
    assert {o["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] for o in nads} == {"afxdp/pool1"}
    assert {json.loads(o["spec"]["config"])["type"] for o in nads} == {"afxdp"}
    pod = afx[-1]["spec"]["containers"][0]
    assert pod["resources"]["requests"]["afxdp/pool1"] == pod["resources"]["limits"]["afxdp/pool1"] == "2"
    # the pool's netdevs keep their names: the pod reads them from the device plugin's AFXDP_DEVICES
    assert '"--vdev=net_af_xdp0,iface=$dev0,' in pod["command"][2] and "mount -t bpf" in pod["command"][2]
    assert "set -- $AFXDP_DEVICES" in pod["command"][2] and "env" not in pod
    assert {"BPF", "SYS_ADMIN", "NET_ADMIN"} <= set(pod["securityContext"]["capabilities"]["add"])
    assert userspace.cross_connects("afxdp-cni", kp, "abc123", ["pod1"]) == []


def test_user_space_models_without_a_local_vswitch_are_refused_with_the_reason():
    lab = kb.KubernetesLab(P.LabParams(kind="kubernetes", kubernetes=_kparams()))
    why = lab.check(Scenario("ovs-dpdk-vhost"))
    assert len(why) == 1 and "cross-connected on the node's OVS-DPDK by flows nfvlab programs only" in why[0]


def test_the_pod_routes_towards_the_generator_ports_in_the_benchmarking_range():
    kp = _kparams()
    script = render.manifests(Scenario("macvlan"), kp)[-1]["spec"]["containers"][0]["command"][2]
    assert "arp -i eth1 -s 198.18.1.1 02:00:00:00:aa:01" in script
    assert "ip route replace 198.19.2.0/24 via 198.18.2.1 dev eth2" in script
    for o in render.nads(Scenario("macvlan"), kp, "abc123"):
        cfg = json.loads(o["spec"]["config"])
        assert cfg["ipam"]["addresses"][0]["address"].startswith("198.18.")


def test_host_routing_renders_ptp_links_and_a_pod_routing_through_the_node():
    kp = _kparams()
    objs = render.manifests(Scenario("host-routing"), kp, "abc123")
    assert [o["kind"] for o in objs] == ["Namespace", "NetworkAttachmentDefinition", "NetworkAttachmentDefinition",
                                        "Pod"]
    assert [x for o in objs for x in render.validate(o, kp)] == []
    cfgs = [json.loads(o["spec"]["config"]) for o in objs[1:3]]
    assert [(c["type"], c["ipam"]["addresses"]) for c in cfgs] == [
        ("ptp", [{"address": "198.18.11.2/30", "gateway": "198.18.11.1"}]),
        ("ptp", [{"address": "198.18.12.2/30", "gateway": "198.18.12.1"}])]
    container = objs[-1]["spec"]["containers"][0]
    script, ready = container["command"][2], container["readinessProbe"]["exec"]["command"][2]
    # the generator's networks are behind the node: no static neighbour towards the generator's ports
    assert "arp" not in script
    assert "ip route replace 198.19.1.0/24 via 198.18.11.1 dev eth1" in script
    assert "ip route replace 198.19.2.0/24 via 198.18.12.1 dev eth2" in script
    assert "ping -c 1 -W 1 198.18.11.1" in ready and "ping -c 1 -W 1 198.18.12.1" in ready
    # the node's routing is nfvlab's only on the local node; a real cluster's NADs can be named
    remote = kb.KubernetesLab(P.LabParams(kind="kubernetes", kubernetes=_kparams(cabling="external")))
    why = remote.check(Scenario("host-routing"))
    assert len(why) == 1 and "policy rules per NIC port" in why[0] and "cabling local" in why[0], why


def test_validation_catches_bad_manifests_and_unknown_cni_keys():
    kp = _kparams()
    ns, nad, _, pod = render.manifests(Scenario("macvlan"), kp)
    pod["spec"]["containers"][0]["bogus"] = 1
    assert render.validate(pod, kp) == ["Pod pod1: Additional properties are not allowed ('bogus' was "
                                        "unexpected) at spec.containers.0"]
    cfg = json.loads(nad["spec"]["config"])
    cfg["mastr"] = "eth9"
    nad["spec"]["config"] = json.dumps(cfg)
    assert render.validate(nad, kp) == ["NAD macvlan-0: macvlan has no key 'mastr'"]


def test_a_cluster_network_named_in_the_profile_is_used_instead_of_rendering():
    kp = _kparams(networks={"vpp": ["kube-system/vpp-memif-a", "kube-system/vpp-memif-b"]})
    objects = render.manifests(Scenario("vpp"), kp)
    assert [o["kind"] for o in objects] == ["Namespace", "Pod"]
    nets = json.loads(objects[-1]["metadata"]["annotations"][render.NETWORKS_ANNOTATION])
    assert [(n["namespace"], n["name"]) for n in nets] == [("kube-system", "vpp-memif-a"),
                                                           ("kube-system", "vpp-memif-b")]


def test_placement_by_node_or_labels_and_tolerations_render_strictly_valid():
    kp = _kparams(placement={"pod1": {"node_labels": {"nfvlab.io/pool": "bench"}}, "noisy": {"node": "w2"}},
                  tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
                  noisy_image="nfvlab.local/stress-ng:1")
    objects = render.manifests(Scenario("macvlan", Resources(pinning="shared", noisy_load_pct=40)), kp)
    pod, noisy = objects[-2], objects[-1]
    assert pod["spec"]["nodeSelector"] == {"nfvlab.io/pool": "bench"}
    assert noisy["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "w2"}
    assert noisy["spec"]["containers"][0]["command"] == ["stress-ng", "--cpu", "1", "--cpu-load", "40",
                                                          "--timeout", "0"]
    assert pod["spec"]["tolerations"] == noisy["spec"]["tolerations"] == kp.tolerations
    # shared pinning: Burstable on the shared pool (requests below limits)
    res = pod["spec"]["containers"][0]["resources"]
    assert (res["requests"]["cpu"], res["limits"]["cpu"]) == ("500m", "1")
    assert [x for o in objects for x in render.validate(o, kp)] == []
    # without a placement the noisy neighbour goes where pod1 goes
    kp2 = _kparams(noisy_image="nfvlab.local/stress-ng:1")
    noisy2 = render.manifests(Scenario("macvlan", Resources(noisy_load_pct=40)), kp2)[-1]
    assert noisy2["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "worker-1"}


def test_a_numa_scenario_is_a_guaranteed_pod():
    res = render.manifests(Scenario("macvlan", Resources(numa="s2")), _kparams())[-1][
        "spec"]["containers"][0]["resources"]
    assert res["requests"]["cpu"] == res["limits"]["cpu"] == "1"


def test_device_plugin_resources_and_calico_vpp_memif_render_strictly_valid():
    kp = _kparams(networks={"afxdp-cni": ["kube-system/afxdp-a", "kube-system/afxdp-b"]},
                  device_resources={"afxdp-cni": {"afxdp/myPool": 2}}, calico_vpp_memif_ports="udp:1024-65535")
    objects = render.manifests(Scenario("afxdp-cni"), kp)
    res = objects[-1]["spec"]["containers"][0]["resources"]
    assert res["requests"]["afxdp/myPool"] == res["limits"]["afxdp/myPool"] == "2"
    memif = render.manifests(Scenario("vpp"), kp)
    assert [o["kind"] for o in memif] == ["Namespace", "Pod"]
    assert memif[-1]["metadata"]["annotations"] == {"cni.projectcalico.org/vppExtraMemifPorts": "udp:1024-65535"}
    assert [x for o in objects + memif for x in render.validate(o, kp)] == []


def test_the_profile_alone_says_what_cannot_run_once_without_a_cluster():
    lab = kb.KubernetesLab(P.LabParams(kind="kubernetes", kubernetes=_kparams()))
    why = {str(d): lab.check(Scenario("macvlan", density=d))[0].split(": ", 1)[1]
           for d in (DensityCell("csc", 1, 2), DensityCell("csp", 2, 2))}
    assert why == {
        "csc 1x2": "csc steers each NF's output back through the worker's router (policy routing), which nfvlab "
                   "maps to no Kubernetes object; csp (pod-to-pod links) is mapped",
        "csp 2x2": "2 instances need the worker's ECMP router to spread flows over the chains; nfvlab maps one "
                   "instance (a chain of nfs pods) per run on Kubernetes"}
    assert lab.check(Scenario("sriov", density=DensityCell("csp", 1, 2))) == [
        "sriov csp 1x2 cannot run on this cluster: density chains are mapped for the kernel models macvlan, "
        "linux-bridge, smartnic-direct, not sriov"]
    split = kb.KubernetesLab(P.LabParams(kind="kubernetes", kubernetes=_kparams(
        placement={"pod2": {"node": "worker-2"}})))
    assert split.check(Scenario("macvlan", density=DensityCell("csp", 1, 2))) == [
        "macvlan csp 1x2 cannot run on this cluster: a chain's pod-to-pod links are bridges on one node: "
        "give pod1, pod2 the same kubernetes.placement"]
    assert lab.check(Scenario("macvlan", Resources(noisy_load_pct=50))) == [
        "macvlan cannot run on this cluster: the noisy neighbour needs an image with stress-ng "
        "(kubernetes.noisy_image)"]


@pytest.mark.parametrize("model", render.CHAIN_MODELS)
def test_a_csp_cell_renders_a_chain_of_pods_wired_pod_to_pod_through_link_bridges(model):
    kp = _kparams()
    objects = render.manifests(Scenario(model, density=DensityCell("csp", 1, 3)), kp, "abc123")
    assert [p for o in objects for p in render.validate(o, kp)] == []
    nads = {o["metadata"]["name"]: json.loads(o["spec"]["config"]) for o in objects
            if o["kind"] == "NetworkAttachmentDefinition"}
    assert sorted(nads) == sorted([f"{model}-0", f"{model}-1", "link1-a", "link1-b", "link2-a", "link2-b"])
    # one bridge per link, both ends on it, a /30 each side in the benchmarking range
    assert {n: (c["bridge"], c["ipam"]["addresses"][0]["address"]) for n, c in nads.items()
            if n.startswith("link")} == {
        "link1-a": ("nfvkabc123l1", "198.18.121.1/30"), "link1-b": ("nfvkabc123l1", "198.18.121.2/30"),
        "link2-a": ("nfvkabc123l2", "198.18.122.1/30"), "link2-b": ("nfvkabc123l2", "198.18.122.2/30")}
    pods = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Pod"}
    wiring = {n: [x["name"] for x in json.loads(o["metadata"]["annotations"][render.NETWORKS_ANNOTATION])]
              for n, o in pods.items()}
    assert wiring == {"pod1": [f"{model}-0", "link1-a"], "pod2": ["link1-b", "link2-a"],
                      "pod3": ["link2-b", f"{model}-1"]}
    script = {n: o["spec"]["containers"][0]["command"][2] for n, o in pods.items()}
    assert "ip route replace 198.19.2.0/24 via 198.18.121.2 dev eth2" in script["pod1"]
    assert "ip route replace 198.19.1.0/24 via 198.18.121.1 dev eth1" in script["pod2"]
    assert "ip route replace 198.19.2.0/24 via 198.18.122.2 dev eth2" in script["pod2"]
    assert "arp -i eth2 -s 198.18.2.1 02:00:00:00:aa:02" in script["pod3"] and "arp" not in script["pod2"]
    probe = pods["pod2"]["spec"]["containers"][0]["readinessProbe"]["exec"]["command"][2]
    assert "ping -c 1 -W 1 198.18.121.1" in probe and "ping -c 1 -W 1 198.18.122.2" in probe


def test_cli_renders_a_chain_and_refuses_what_is_not_mapped_in_one_line():
    out = nfvlab_cli("lab", "render", "--lab-profile", "params/lab.kubernetes.yaml", "--model", "linux-bridge",
                     "--density", "csp:1x2", check=True)
    docs = list(yaml.safe_load_all(out.stdout))
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Pod"] == ["pod1", "pod2"]
    for args, match in ((["--density", "csc:1x2"], "cannot run on this cluster: csc steers"),
                        (["--density", "csp:1x11"], "--density 'csp:1x11': use TOPO:IxN"),
                        (["--density", "csp-1x2"], "--density 'csp-1x2': use TOPO:IxN")):
        bad = nfvlab_cli("lab", "render", "--lab-profile", "params/lab.kubernetes.yaml", "--model", "macvlan", *args)
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
        assert match in bad.stderr, bad.stderr


def test_node_nic_driver_and_offloads_and_cni_conf_are_read_from_this_host(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("creating a veth needs root")
    nl.veth(None, "nfvkt0", None, "nfvkt1", 1500)  # a node NIC port of known driver (veth)
    try:
        subprocess.run(["ethtool", "-K", "nfvkt0", "tso", "off"], check=True, capture_output=True)
        info = kb.nic_info("nfvkt0")
        assert info["driver"] == "veth" and info["offloads"]["tcp-segmentation-offload"] == "off"
        subprocess.run(["ethtool", "-K", "nfvkt0", "tso", "on"], check=True, capture_output=True)
        assert kb.nic_info("nfvkt0")["offloads"]["tcp-segmentation-offload"] == "on"
        assert "nfvk-no-such" in kb.nic_info("nfvk-no-such")["error"]
    finally:
        nl.delete_link(None, "nfvkt0")
    (tmp_path / "10-a.conflist").write_text('{"name": "a", "plugins": [{"type": "bridge"}]}')
    (tmp_path / "99-notes.txt").write_text("ignored")
    assert kb.cni_conf(str(tmp_path)) == {"10-a.conflist": {"name": "a", "plugins": [{"type": "bridge"}]}}
    assert "No such file" in kb.cni_conf(str(tmp_path / "absent"))["error"]


@pytest.mark.parametrize("bad,match", [
    ({"placement": {"pod1": {"node": "a", "node_labels": {"x": "y"}}}}, "one of the two"),
    ({"placement": {"vswitch": {"node": "a"}}}, "placement"),
    ({"calico_vpp_memif_ports": "sctp:1"}, "calico_vpp_memif_ports"),
    ({"cabling": "external", "tg_macs": None}, "give tg_macs"),
    ({"nics": ["a"]}, "nics"),
    ({"namespace_prefix": "Bad_Prefix"}, "namespace_prefix"),
])
def test_bad_kubernetes_settings_are_one_line(bad, match):
    data = {"kind": "kubernetes", "kubernetes": {"node": "n", "nics": ["a", "b"], "cabling": "local", **bad}}
    with pytest.raises(P.ParamsError, match=match) as err:
        P.validate(P.LabParams, data, "lab.yaml")
    assert "\n" not in str(err.value)


def test_cli_renders_yaml_that_round_trips_and_refuses_models_without_networks():
    out = nfvlab_cli("lab", "render", "--lab-profile", "params/lab.kubernetes.yaml", "--model", "macvlan",
                     check=True)
    docs = list(yaml.safe_load_all(out.stdout))
    assert [d["kind"] for d in docs] == ["Namespace", "NetworkAttachmentDefinition",
                                        "NetworkAttachmentDefinition", "Pod"]
    bad = nfvlab_cli("lab", "render", "--lab-profile", "params/lab.kubernetes.yaml", "--model", "ebpf-tc")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "primary CNI in eBPF mode" in bad.stderr and "kubernetes.networks.ebpf-tc" in bad.stderr
    out = nfvlab_cli("lab", "render", "--lab-profile", "params/lab.kubernetes.yaml", "--model", "chain-userspace",
                     check=True)
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(out.stdout) if d["kind"] == "Pod"] == \
        ["vswitch", "pod1", "pod2"]
    out = nfvlab_cli("lab", "render", "--lab-profile", "params/lab.kubernetes.yaml", "--model", "sriov", check=True)
    docs = list(yaml.safe_load_all(out.stdout))
    assert [(d["kind"], d["metadata"].get("annotations", {}).get("k8s.v1.cni.cncf.io/resourceName"))
            for d in docs[1:3]] == [("NetworkAttachmentDefinition", "intel.com/intel_sriov_dpdk")] * 2
    assert docs[-1]["spec"]["containers"][0]["name"] == "testpmd"


def test_the_shipped_profile_renders_13_of_the_15_models_strictly_valid_and_refuses_the_ebpf_ones():
    from nfvlab.scenario import MODEL_NAMES

    kp = P.validate(P.LabParams, yaml.safe_load((REPO / "params/lab.kubernetes.yaml").read_text()),
                    "params/lab.kubernetes.yaml").kubernetes
    rendered = [m for m in MODEL_NAMES if render.renders(Scenario(m), kp)]
    assert len(MODEL_NAMES) == 15 and sorted(set(MODEL_NAMES) - set(rendered)) == list(render.EBPF_MODELS)
    for model in rendered:
        objects = render.manifests(Scenario(model), kp)
        assert [x for o in objects for x in render.validate(o, kp)] == [], model
        assert "pod1" in [o["metadata"]["name"] for o in objects if o["kind"] == "Pod"], model
    assert all(render.NOT_RENDERED_WHY[m].count("\n") == 0 for m in render.EBPF_MODELS)


def test_cli_renders_the_calico_vpp_memif_pod_when_the_profile_asks_for_it(tmp_path):
    prof = yaml.safe_load((REPO / "params/lab.kubernetes.yaml").read_text())
    # without it, vpp is the Userspace CNI's VPP engine (memif NADs, a DPDK pod)
    out = nfvlab_cli("lab", "render", "--lab-profile", "params/lab.kubernetes.yaml", "--model", "vpp", check=True)
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(out.stdout)
            if d["kind"] == "NetworkAttachmentDefinition"] == ["pod1-memif0", "pod1-memif1"]
    prof["kubernetes"]["calico_vpp_memif_ports"] = "tcp:4444-20000,udp:4444-20000"
    (tmp_path / "lab.yaml").write_text(yaml.safe_dump(prof))
    out = nfvlab_cli("lab", "render", "--lab-profile", str(tmp_path / "lab.yaml"), "--model", "vpp",
                     check=True)
    pod = [d for d in yaml.safe_load_all(out.stdout) if d["kind"] == "Pod"][0]
    assert pod["metadata"]["annotations"][render.CALICO_VPP_MEMIF_ANNOTATION] == "tcp:4444-20000,udp:4444-20000"


def test_the_shipped_rbac_manifest_is_strictly_valid_and_covers_what_the_backend_calls():
    docs = list(yaml.safe_load_all((REPO / "deploy/rbac.yaml").read_text()))
    kp = _kparams()
    assert [p for d in docs for p in render.validate(d, kp)] == []
    granted = {(r, v) for rule in docs[0]["rules"] for r in rule["resources"] for v in rule["verbs"]}
    needed = {("namespaces", "create"), ("namespaces", "delete"), ("pods", "create"), ("pods/log", "get"),
              ("pods", "delete"), ("network-attachment-definitions", "create"),
              ("network-attachment-definitions", "get"), ("nodes", "get"), ("nodes", "list"),
              ("nodes/proxy", "get"), ("events", "list"), ("customresourcedefinitions", "get"),
              ("configmaps", "get"), ("daemonsets", "list"), ("felixconfigurations", "get")}
    assert needed <= granted


def test_the_kernel_pods_shell_as_pid_1_exits_0_on_sigterm():
    """The kernel pod's container (busybox sh as PID 1 of its PID namespace) ends on the kubelet's
    SIGTERM, not on the SIGKILL after the grace period: a PID 1 ignores signals it has no handler for."""
    if os.geteuid() != 0:
        pytest.skip("a PID namespace needs root")
    if shutil.which("busybox") is None:
        pytest.skip("no busybox (the pods' shell; busybox-static, installed by scripts/k8s/build.sh)")
    script = render.forwarder_script(["02:00:00:00:aa:01", "02:00:00:00:aa:02"])
    assert script.endswith("; " + render.STAY_UP)
    proc = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "busybox", "sh", "-c", render.STAY_UP])
    try:
        shell, deadline = None, time.monotonic() + 30
        while shell is None and time.monotonic() < deadline:  # until the shell has set its trap
            for pid in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split():
                caught = [ln for ln in Path(f"/proc/{pid}/status").read_text().splitlines()
                          if ln.startswith("SigCgt:")]
                if caught and int(caught[0].split()[1], 16) & 1 << (signal.SIGTERM - 1):
                    shell = int(pid)  # PID 1 of the new namespace
            time.sleep(0.01)
        assert shell is not None
        os.kill(shell, signal.SIGTERM)  # from the parent namespace, as the runtime does
        assert proc.wait(timeout=30) == 0  # (a give-up, not a target: an ignored SIGTERM never ends it)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ------------------------------------------------------------------ a real cluster
sys.path.insert(0, str(REPO / "tests"))


@pytest.fixture(scope="module")
def cluster():
    if os.geteuid() != 0:
        pytest.skip("the local cluster needs root")
    from nfvlab.labs.kubernetes import local_cluster as kc

    why = kc.unavailable_reason()
    if why:
        pytest.skip(why)
    from kubernetes import utils

    # The backend takes the host lock for each run (local cabling), so the cluster must not hold it.
    # The Topology Manager aligns Guaranteed pods to one NUMA node (this host has one).
    with kc.LocalCluster(lock=False, log=lambda m: None,
                         kubelet_config={"topologyManagerPolicy": "single-numa-node"}) as k8s:
        utils.create_from_dict(k8s.api_client(), kc.nad_crd_manifest())
        # The CRD becomes servable a moment after creation (a give-up guard: a lab not ready then
        # fails its tests with the reason).
        deadline = time.monotonic() + 60
        while _lab(k8s).ready() != [] and time.monotonic() < deadline:
            time.sleep(0.1)
        yield k8s


def _lab_params(k8s, **kw):
    # ready_timeout_s: a guard only, far beyond the seconds pods take (DPDK pods in a slow spell
    # included); the test of the give-up itself sets its own.
    return P.validate(P.LabParams, {"kind": "kubernetes", "kubernetes": {
        "kubeconfig": str(k8s.kubeconfig), "node": k8s.node_name, "nics": NICS, "cabling": "local",
        "image_pull_policy": "Never", "ready_timeout_s": 120, "cni_conf_dir": str(k8s.cni_conf_dir),
        "afxdp_resource": None, **kw}})  # as params/lab.kubernetes.yaml: no AF_XDP pool of veths


def _lab(k8s, **kw):
    return kb.KubernetesLab(_lab_params(k8s, **kw))


def node_allocatable(k8s, resource: str, node: str = "") -> str:
    """Allocatable ``resource`` of ``node`` (default: the cluster's node) as the API server says."""
    from kubernetes import client

    n = client.CoreV1Api(k8s.api_client()).read_node(node or k8s.node_name)
    return (n.status.allocatable or {}).get(resource, "0")


def _namespaces(k8s, terminating: bool = False) -> list[str]:
    """The nfvlab runs' namespaces; ``terminating``: those being deleted too (a lab's teardown deletes
    its pods, waits for them, and leaves the namespace's API objects to the API server)."""
    from kubernetes import client

    return [n.metadata.name for n in client.CoreV1Api(k8s.api_client()).list_namespace().items
            if n.metadata.name.startswith("nfvlab-") and (terminating or not n.metadata.deletion_timestamp)]


def _nothing_left(k8s):
    assert _namespaces(k8s) == []
    deadline = time.monotonic() + 60  # a torn-down lab's namespace: gone in ~5 s here
    while _namespaces(k8s, terminating=True) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _namespaces(k8s, terminating=True) == []
    # host-routing's policy rules and sysctls (the cluster's snapshot is the value before any run)
    rules = subprocess.run(["ip", "-4", "rule", "show"], capture_output=True, text=True, check=True).stdout
    assert not any(f"lookup {t}" in rules for t in node_routing.TABLE.values()), rules
    from nfvlab.labs.kubernetes import local_cluster as kc

    before = json.loads(kc.state_file().read_text())["sysctls"]["net/ipv4/ip_forward"]
    assert Path("/proc/sys/net/ipv4/ip_forward").read_text().strip() == before.strip()
    assert not any(nl.link_exists(None, n) for n in NICS)
    assert list(kb.labs_dir().iterdir()) == [] if kb.labs_dir().exists() else True  # no record, no .tmp
    # Under the host lock: an embedded lab of another process (it holds the lock while it lives) is
    # not this test's residue.
    with HostLock("test_labs_kubernetes: residue check"):
        assert lab_residue() == NO_RESIDUE


@pytest.mark.lab
@pytest.mark.k8s
@pytest.mark.parametrize("model", ["macvlan", "smartnic-direct", "linux-bridge", "host-routing"])
def test_a_trial_through_a_kubernetes_pod_counts_exactly(cluster, clean_host, model):
    from nfvlab.traffic.embedded import EmbeddedGenerator
    from nfvlab.traffic.embedded.generator import xdp_live_refusal

    backend = _lab(cluster)
    with backend.open(Scenario(model)) as session:
        info = session.info
        assert _namespaces(cluster) == [info["namespace"]]
        # the lab profile's default TX path: XDP into the node's NIC ports (kernel pods busy no CPU),
        # the socket path where the kernel refuses XDP live frames (and says so)
        gen = EmbeddedGenerator(session.streams, latency_pps=100, tx="auto", busy_roles=session.busy_roles)
        # counts asked of what was sent, whatever the host did to the schedule (conftest.clean_trial)
        result = clean_trial(gen, 4000, 1.0, 128)
        path, why = ("socket", xdp_live_refusal()) if xdp_live_refusal() else ("xdp", None)
        assert (gen.tx, gen.last_report["tx"], session.busy_roles, gen.tx_why) == (path, path, {}, why)
        if model == "host-routing":  # (smartnic-direct: the NIC ports are in the pod)
            dmacs, nic_macs = [st.dmac for st in session.streams], [nl.mac(None, n) for n in NICS]
    for d in result.directions:
        check_exact(d, intended=4000)
        assert d.latency.probes_sent > 0
    assert info["placement"] == {"pod1": cluster.node_name} and info["qos_class"] == "Burstable"
    # (how long it takes is bench/k8s_timing.py's figure; the lab gives up after ready_timeout_s)
    assert 0 < info["pod_create_to_interfaces_s"] <= info["pod_create_to_ready_s"]
    assert info["nads"][0]["type"] == render.CNI_OF[model]
    assert info["teardown_s"] > 0
    if model == "host-routing":  # the node routed: its NIC ports are the generator's gateways
        assert dmacs == nic_macs
        assert sorted(info["node_routing"]["pod_links"]) == [0, 1] and len(info["node_routing"]["rules"]) == 2
    # provenance: per-pod deletion time, the node's CNI conf (Multus), its NIC ports' driver, kubelet policies
    assert 0 < info["pods"]["pod1"]["delete_s"] <= info["teardown_s"]
    assert any(c.get("type") == "multus" or "multus" in json.dumps(c) for c in info["node_cni_conf"].values())
    assert {n: d["driver"] for n, d in info["node_nics"].items()} == {NICS[0]: "veth", NICS[1]: "veth"}
    assert info["kubelet"]["topologyManagerPolicy"] == "single-numa-node"
    assert info["node_labels"]["kubernetes.io/hostname"] == cluster.node_name
    _nothing_left(cluster)


def _user_space_residue(run_id: str) -> list[str]:
    """What a user-space run may leave on the node (this host): its sockets' directory, the local
    vSwitch's files, its processes. Read under the host lock: an embedded lab of another process
    (its own OVS-DPDK and testpmd; it holds the lock while it lives) is not this run's residue."""
    with HostLock("test_labs_kubernetes: user-space residue check"):
        left = [str(p) for p in Path(P.KubernetesParams.model_fields["vhost_dir"].default).glob(f"{run_id}*")]
        ovs_run = Path(userspace.OVS_RUNDIR)
        left += [str(p) for p in ovs_run.iterdir()] if ovs_run.exists() else []
        out = subprocess.run(["pgrep", "-af", "ovs-vswitchd|ovsdb-server|dpdk-testpmd"], capture_output=True,
                             text=True)
        left += [f"link {t}" for t in userspace.ovs_taps(_kparams())
                 if nl.link_exists(None, t)]  # OVS's persistent taps
    return left + [line for line in out.stdout.splitlines() if "pgrep" not in line]


@pytest.mark.lab
@pytest.mark.k8s
@pytest.mark.parametrize("model", [m for m in USERSPACE if m not in userspace.LOCAL_WHY and userspace.runs_ovs(m)])
def test_a_trial_through_the_drafts_dpdk_pods_on_the_node_vswitch_counts_exactly(cluster, clean_host, model):
    # The draft's Figure 9 on a real cluster: testpmd pods on Userspace CNI vhost-user (or memif, or
    # direct) ports of the node's OVS-DPDK, which nfvlab runs as a pod and cross-connects port to port.
    from nfvlab.traffic.embedded import EmbeddedGenerator

    backend = _lab(cluster)
    assert backend.check(Scenario(model)) == []
    with backend.open(Scenario(model)) as session:
        info = session.info
        chain = info["chains"][0]
        assert Path(f"{backend.params.vhost_dir}/{info['run_id']}").is_dir()
        gen = EmbeddedGenerator(session.streams, latency_pps=100)
        # the pods' testpmd shares CPU 0 with the generator (core plan): a VM stall of it beyond its
        # rings drops frames (CI: 118 of 4000 on ovs-dpdk-tap, ~30 ms at 4 kpps): such a trial is repeated
        result = clean_trial(gen, 4000, 1.0, 128, lossless=True)
    for d in result.directions:
        check_exact(d, intended=4000)
        assert d.latency.probes_sent > 0
    assert chain == (["pod1", "pod2"] if model.startswith("chain") else ["pod1"])
    assert info["forwarder"].startswith("dpdk-testpmd --forward-mode=mac")
    assert info["vswitch"]["nic_ports"] == userspace.NIC_PORTS[model]
    # one flow per direction per OVS link: NIC-pod-...-NIC, or only pod-pod (chain-combined)
    links = len(chain) + 1 if userspace.NIC_PORTS[model] else len(chain) - 1
    assert len(info["flows"]) == 2 * links and all(f.startswith("in_port=") for f in info["flows"])
    assert 0 < info["vswitch"]["create_to_ready_s"]
    assert all(0 < info["pods"][n]["create_to_ready_s"] and info["pods"][n]["delete_s"] > 0 for n in chain)
    if userspace.POD_PORTS[model] in ("vhostuser", "vpp-memif"):  # the Userspace CNI's
        assert {n["type"] for n in info["nads"]} >= {"userspace"}
    if model == "ovs-dpdk-tap":  # the OVS CNI's veths, cross-connected by the OpenFlow ports they asked for
        assert {n["type"] for n in info["nads"]} == {"ovs"}
        assert info["vswitch"]["pod_ports"].startswith("OVS CNI veths, not OVS tap ports")
        assert info["flows"] == ["in_port=1,actions=output:10", "in_port=10,actions=output:1",
                                 "in_port=11,actions=output:2", "in_port=2,actions=output:11"]
    assert _user_space_residue(info["run_id"]) == []
    _nothing_left(cluster)


@pytest.mark.lab
@pytest.mark.k8s
def test_a_trial_through_the_drafts_dpdk_pod_on_af_xdp_cni_ports_counts_exactly(cluster, clean_host):
    # afxdp-cni: the AF_XDP CNI moves the node's NIC ports into the DPDK pod, whose af_xdp ports
    # bind them (no device plugin: the local node's veths are no pool); no vSwitch
    from nfvlab.traffic.embedded import EmbeddedGenerator

    backend = _lab(cluster)
    assert backend.check(Scenario("afxdp-cni")) == []
    with backend.open(Scenario("afxdp-cni")) as session:
        info = session.info
        assert not any(nl.link_exists(None, n) for n in NICS)  # in the pod
        gen = EmbeddedGenerator(session.streams, latency_pps=100, tx="auto", busy_roles=session.busy_roles)
        # testpmd busy-polls a CPU it shares (as on the embedded lab, test_lab_userspace): a host stall
        # of it beyond its rings drops frames, the host's doing: such a trial is repeated
        result = clean_trial(gen, 4000, 1.0, 128, lossless=True)
    for d in result.directions:
        check_exact(d, intended=4000)
        assert d.latency.probes_sent > 0
    assert [(n["type"], n["deviceID"]) for n in info["nads"]] == [("afxdp", nic) for nic in NICS]
    assert info["forwarder"].startswith("dpdk-testpmd --forward-mode=mac") and "vswitch" not in info
    assert _user_space_residue(info["run_id"]) == []
    _nothing_left(cluster)


@pytest.mark.lab
@pytest.mark.k8s
@pytest.mark.parametrize("model", ["linux-bridge", "macvlan"])
def test_a_trial_through_a_two_pod_chain_counts_exactly(cluster, clean_host, model):
    """A csp 1x2 cell: pod1 -> link bridge -> pod2, real pods; pod1 has no interface towards generator
    port 1, so every frame counted there went through pod2."""
    from nfvlab.traffic.embedded import EmbeddedGenerator

    backend = _lab(cluster)
    scenario = Scenario(model, density=DensityCell("csp", 1, 2))
    assert backend.check(scenario) == []
    with backend.open(scenario) as session:
        info = session.info
        link = render.link_bridge_name(info["run_id"], 1)
        assert nl.link_exists(None, link)          # made by the bridge CNI on the node (this host)
        gen = EmbeddedGenerator(session.streams, latency_pps=100)
        result = clean_trial(gen, 4000, 1.0, 128)
    for d in result.directions:
        check_exact(d, intended=4000)
    assert info["chains"] == [["pod1", "pod2"]]
    assert info["placement"] == {"pod1": cluster.node_name, "pod2": cluster.node_name}
    assert all(0 < info["pods"][n]["delete_s"] for n in ("pod1", "pod2"))
    # direction 0 enters at pod1's eth1, direction 1 at pod2's eth2: two different pods
    assert session.streams[0].dmac != session.streams[1].dmac
    assert not nl.link_exists(None, link)
    _nothing_left(cluster)


@pytest.mark.lab
@pytest.mark.k8s
def test_exclusive_pinning_is_a_guaranteed_pod_and_what_the_cluster_lacks_is_refused(cluster, clean_host):
    backend = _lab(cluster)
    # the draft's SR-IOV DPDK pod: two vfio-pci VFs (this host has no VF-capable NIC) and its hugepages
    huge = node_allocatable(cluster, "hugepages-2Mi")
    assert backend.check(Scenario("sriov")) == [
        f"sriov cannot run on this cluster: node {cluster.node_name} has 0 allocatable "
        "intel.com/intel_sriov_dpdk (a pod needs 2)"
        + (f", {huge} allocatable hugepages-2Mi (a pod needs 256Mi)" if quantity(huge) < 256 * 2 ** 20 else "")]
    assert _lab(cluster, sriov_mode="netdevice").check(Scenario("sriov")) == [
        f"sriov cannot run on this cluster: node {cluster.node_name} has 0 allocatable "
        "intel.com/intel_sriov_netdevice (a pod needs 2)"]
    assert backend.check(Scenario("macvlan", Resources(numa="s2"))) == [
        f"macvlan cannot run on this cluster: NUMA scenario s2 needs 2+ NUMA nodes; {cluster.node_name} has 1 "
        "(/sys/devices/system/node)"]
    assert _lab(cluster, placement={"pod1": {"node_labels": {"nfvlab.io/pool": "none"}}}).check(
        Scenario("macvlan")) == ["macvlan cannot run on this cluster: no Ready node without an untolerated "
                                 "taint matches node selector nfvlab.io/pool=none"]
    with pytest.raises(LabError, match="sriov cannot run on this cluster"):
        with backend.open(Scenario("sriov")):
            pass
    assert _namespaces(cluster) == []
    with backend.open(Scenario("macvlan", Resources(pinning="exclusive"))) as session:
        assert session.info["qos_class"] == "Guaranteed"
    _nothing_left(cluster)


@pytest.mark.lab
@pytest.mark.k8s
def test_a_pod_that_cannot_start_fails_with_the_kubelets_reason_and_leaves_nothing(cluster, clean_host):
    backend = _lab(cluster, image="nfvlab.local/no-such-image:1", ready_timeout_s=30)
    # The lab gives up at the profile's readiness time-out and says why in the kubelet's words
    # (how long the failure and its teardown take is bench/k8s_timing.py's figure).
    with pytest.raises(LabError, match="ErrImageNeverPull") as err:
        with backend.open(Scenario("macvlan")):
            pass
    assert "\n" not in str(err.value) and "not Ready after 30 s" in str(err.value), str(err.value)
    _nothing_left(cluster)


KILLED = """
import sys, time
sys.path.insert(0, {tests!r})
from nfvlab import params as P
from nfvlab.labs.kubernetes import KubernetesLab
from nfvlab.scenario import Scenario
lab = P.validate(P.LabParams, {params!r})
with KubernetesLab(lab).open(Scenario({model!r})) as s:
    print("up", flush=True)
    time.sleep(60)
"""


@pytest.mark.lab
@pytest.mark.k8s
@pytest.mark.parametrize("model", ["macvlan", "ovs-dpdk-vhost", "host-routing", "afxdp-cni"])
def test_kill9_then_lab_clean_removes_the_namespace_and_the_host_links(cluster, clean_host, spawn, model):
    # ovs-dpdk-vhost: also the node vSwitch pod, its files, its taps, the sockets' directory, the CNI's ports;
    # host-routing: the node's policy rules and forwarding sysctl; afxdp-cni: the NIC ports the CNI moved
    params = _lab_params(cluster).model_dump()
    code = KILLED.format(tests=str(REPO / "tests"), params=params, model=model)
    proc = spawn([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "up"
    assert len(_namespaces(cluster)) == 1
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # left behind (afxdp-cni's NIC ports are in its pod)
    assert len(_namespaces(cluster)) == 1 and nl.link_exists(None, NICS[0]) == (model != "afxdp-cni")
    out = nfvlab_cli("lab", "clean", check=True)
    assert "kubernetes run" in out.stdout
    assert _user_space_residue("") == []
    _nothing_left(cluster)


def _tearing_down(k8s) -> bool:
    """Is a run's teardown under way (its pods or namespace being deleted)?"""
    from kubernetes import client

    core = client.CoreV1Api(k8s.api_client())
    for ns in core.list_namespace().items:
        if not ns.metadata.name.startswith("nfvlab-"):
            continue
        if ns.metadata.deletion_timestamp or any(
                p.metadata.deletion_timestamp for p in core.list_namespaced_pod(ns.metadata.name).items):
            return True
    return False


def _pod1_exists(k8s) -> bool:
    from kubernetes import client

    core = client.CoreV1Api(k8s.api_client())
    return any(p.metadata.name == "pod1" for ns in _namespaces(k8s)
               for p in core.list_namespaced_pod(ns).items)


@pytest.mark.lab
@pytest.mark.k8s
@pytest.mark.parametrize("sig,when", [(signal.SIGTERM, "set-up"), (signal.SIGINT, "set-up"),
                                      (signal.SIGTERM, "wait"), (signal.SIGINT, "wait")])
def test_a_signal_during_set_up_or_the_readiness_wait_tears_down_and_fails(cluster, clean_host, tmp_path, spawn,
                                                                          sig, when):
    """SIGTERM/SIGINT to `nfvlab trial` on the Kubernetes lab while it creates objects (the namespace
    exists) or waits for pod1 to be Ready: exit 130, one line, nothing left on the API server or the
    host; a second signal while teardown runs does not abort it."""
    # The image is not there (pull policy Never): pod1 stays Pending, so the run sits in its
    # readiness wait loop until it is signalled (the timeout is far away).
    profile = tmp_path / "lab.k8s.yaml"
    profile.write_text(yaml.safe_dump(_lab_params(
        cluster, image="nfvlab.local/no-such-image:1", ready_timeout_s=300).model_dump(exclude_none=True)))
    cmd = [str(REPO / ".venv/bin/nfvlab"), "trial", "--lab-profile", str(profile), "--model", "linux-bridge",
           "--rate-pps", "1000", "--duration-s", "0.5"]
    # faulthandler: a run that hangs is made to print where (SIGABRT) instead of being killed blind.
    proc = spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                 env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    try:
        reached = _namespaces if when == "set-up" else _pod1_exists
        deadline = time.monotonic() + 60
        while not reached(cluster):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02 if when == "set-up" else 0.2)
        if when == "wait":
            time.sleep(1.0)  # well inside the wait loop
        proc.send_signal(sig)
        second = False
        deadline = time.monotonic() + 60  # a give-up guard: teardown starts within a second here
        while proc.poll() is None and time.monotonic() < deadline:
            if _tearing_down(cluster):
                proc.send_signal(sig)  # teardown is running under signals.deferred()
                second = True
                break
            time.sleep(0.02)
        try:
            out, err = proc.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            out, err = proc.communicate(timeout=30)
            raise AssertionError("the run did not end after the signal:\n" + err) from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            nfvlab_cli("lab", "clean")
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "nfvlab: interrupted; the lab was torn down", err
    assert "Traceback" not in err, err
    if when == "wait":
        assert second, "teardown was never seen running"
    _nothing_left(cluster)


@pytest.mark.lab
@pytest.mark.k8s
def test_experiment_a_runs_on_the_kubernetes_lab_with_records_and_provenance(cluster, clean_host, tmp_path):
    from nfvlab import results
    from nfvlab.experiment import run_experiment
    from nfvlab.records import read_records

    params = P.validate(P.ExperimentParams, {
        "experiment": "a-k8s", "models": ["macvlan", "sriov", "ovs-dpdk-vhost"], "repetitions": 1,
        "lab": _lab_params(cluster).model_dump(),
        "traffic": {"frame_sizes": [256], "latency_pps": 100}, "trial": {"duration_s": 0.3},
        "search": {"method": "rfc2544", "pdr_loss_ratio": None, "relative_width": 0.2, "min_rate_pps": 2000,
                   "max_rate_pps": 8000, "final_trial_duration_s": 0.3, "initial_trial_duration_s": 0.3,
                   "duration_sum_s": 0.3}})
    tries = iter(range(100))

    def attempt():  # a fresh records file per try; repeated while a search failed (a slow spell)
        rec = tmp_path / f"a{next(tries)}.jsonl"
        run_experiment(params, rec, progress=False)
        return rec

    rec = until_unspoiled(attempt, failed_searches, what="experiment A on the Kubernetes lab")
    s = results.searches_frame(rec)
    # the kernel pod and the draft's DPDK pod (node vSwitch, Userspace CNI) measured, SR-IOV not realizable
    assert list(s["model"]) == ["macvlan", "ovs-dpdk-vhost"]
    assert (s["throughput_pps"] >= 2000).all()
    nr = dict(zip(results.not_realizable_frame(rec)["model"], results.not_realizable_frame(rec)["reason"]))
    assert set(nr) == {"sriov"} and all("on this cluster" in r for r in nr.values())
    notes = [r["text"] for r in read_records(rec) if r["type"] == "note" and r["labels"]["kind"] != "search-retried"]
    assert len(notes) == 1 and all(n.count("not realizable") == 1 for n in notes), notes  # said once
    prov = read_records(rec)[0]["provenance"]
    assert prov["lab"]["lab_kind"] == "kubernetes" and prov["lab"]["server_version"] == "v1.37.2"
    assert prov["lab"]["kubelet"]["cpuManagerPolicy"] == "static"
    _nothing_left(cluster)


def _cli_trial(profile, *args) -> dict:
    """``nfvlab trial --json`` on the lab ``profile`` names, repeated (each try builds and tears down
    the lab) only while its record says the host held the generator up until it sent under half
    (:func:`conftest.barely_sent`): counts are asked of what was sent."""
    def attempt():
        out = nfvlab_cli("trial", "--lab-profile", str(profile), *args, "--json", timeout=180)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    return until_unspoiled(attempt, lambda d: barely_sent(TrialResult.from_dict(d)),
                           what="nfvlab trial --json " + " ".join(args))


@pytest.mark.lab
@pytest.mark.k8s
def test_the_cli_runs_a_trial_on_the_lab_a_profile_names(cluster, clean_host, tmp_path):
    profile = tmp_path / "lab.k8s.yaml"
    profile.write_text(yaml.safe_dump(_lab_params(cluster).model_dump(exclude_none=True)))
    d = _cli_trial(profile, "--model", "smartnic-direct", "--rate-pps", "3000", "--duration-s", "0.5")
    for x in TrialResult.from_dict(d).directions:
        check_exact(x, intended=1500)
    assert d["extra"]["model"] == "smartnic-direct"
    # a 2-pod chain (csp 1x2 cell) from the command line, host-device at both ends
    d = _cli_trial(profile, "--model", "smartnic-direct", "--density", "csp:1x2", "--rate-pps", "3000",
                   "--duration-s", "0.5")
    for x in TrialResult.from_dict(d).directions:
        check_exact(x, intended=1500)
    _nothing_left(cluster)


# ------------------------------------------------------------------ simulated nodes (kwok)
SIM_NODE = "sim-worker"
#: Allocatable of a simulated SR-IOV worker. The values are chosen for the test (8 VFs, so 2 per pod
#: fit and 16 do not), not taken from the draft, which does not list its workers' allocatable.
SIM_ALLOCATABLE = {"cpu": "32", "memory": "128Gi", "pods": "110", "hugepages-2Mi": "4Gi",
                   "intel.com/intel_sriov_netdevice": "8", "intel.com/intel_sriov_dpdk": "8", "afxdp/myPool": "4"}


@pytest.fixture
def sim_node(cluster, tmp_path, spawn):
    """A kwok-simulated worker with SR-IOV VFs: the real scheduler places pods on it, kwok fakes them."""
    from kubernetes import client

    from nfvlab.labs.kubernetes import local_cluster as kc

    stage = kc.binaries_dir() / "bin" / "kwok-stage"
    if not (kc.binaries_dir() / "bin" / "kwok").exists() or not stage.is_dir():
        pytest.skip("kwok is not built: scripts/k8s/build.sh --with-kwok (./run test builds it)")
    configs = [stage / "node/fast/node-initialize.yaml", stage / "node/heartbeat/node-heartbeat.yaml",
               stage / "pod/fast/pod-ready.yaml", stage / "pod/fast/pod-complete.yaml",
               stage / "pod/fast/pod-delete.yaml"]
    log = open(tmp_path / "kwok.log", "w")
    # kwok is ended by spawn once the node is deleted, whatever the test or this set-up did.
    spawn([str(kc.binaries_dir() / "bin" / "kwok"), f"--kubeconfig={cluster.kubeconfig}",
           "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
           "--cidr=198.18.200.0/24", "--node-ip=198.18.201.1",
           *[f"--config={c}" for c in configs]], stdout=log, stderr=subprocess.STDOUT)
    core = client.CoreV1Api(cluster.api_client())
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": SIM_NODE, "annotations": {"kwok.x-k8s.io/node": "fake"},
                         "labels": {"kubernetes.io/hostname": SIM_NODE, "type": "kwok"}},
            "spec": {"taints": [{"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}]},
            "status": {"capacity": SIM_ALLOCATABLE, "allocatable": SIM_ALLOCATABLE}}
    core.create_node(node)
    try:
        deadline = time.monotonic() + 60  # a give-up guard: Ready in seconds here
        while True:
            n = core.read_node(SIM_NODE)
            conds = {c.type: c.status for c in n.status.conditions or []}
            # the node lifecycle controller lifts its not-ready taint a moment after Ready
            if conds.get("Ready") == "True" and not [t for t in n.spec.taints or []
                                                     if t.key.startswith("node.kubernetes.io/")]:
                break
            if time.monotonic() > deadline:
                pytest.fail(f"kwok node not Ready after 60 s: {(tmp_path / 'kwok.log').read_text()[-500:]}")
            time.sleep(0.1)
        yield core
    finally:
        for ns in _namespaces(cluster):
            core.delete_namespace(ns, grace_period_seconds=0)
        # Gone while kwok still runs (spawn ends it after this): it finishes the simulated node's
        # pods in seconds; without it only the pod GC does, 40-60 s after the node is deleted, and a
        # later test's _nothing_left may give up first. (A give-up guard: the next test says what is left.)
        deadline = time.monotonic() + 120
        while _namespaces(cluster, terminating=True) and time.monotonic() < deadline:
            time.sleep(0.2)
        core.delete_node(SIM_NODE)
        log.close()


#: Tolerating the simulated node's taint (a real worker has none), through the profile.
SIM_TOLERATIONS = [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}]


def _create(core, cluster, objects):
    from kubernetes import client

    custom = client.CustomObjectsApi(cluster.api_client())
    for o in objects:
        if o["kind"] == "Namespace":
            core.create_namespace(o)
        elif o["kind"] == "NetworkAttachmentDefinition":
            custom.create_namespaced_custom_object("k8s.cni.cncf.io", "v1", o["metadata"]["namespace"],
                                                   "network-attachment-definitions", o)
        else:
            core.create_namespaced_pod(o["metadata"]["namespace"], o)


def _scheduled(core, ns, timeout_s=60.0, name="pod1"):  # a give-up guard: the scheduler decides in ~1 s
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pod = core.read_namespaced_pod(name, ns)
        cond = {c.type: c for c in pod.status.conditions or []}.get("PodScheduled")
        if cond is not None and (cond.status == "True" or cond.reason == "Unschedulable"):
            return pod, cond
        time.sleep(0.1)
    pytest.fail("the scheduler did not decide")


@pytest.mark.lab
@pytest.mark.k8s
def test_the_real_scheduler_admits_a_rendered_sriov_pod_on_a_node_with_vfs_and_refuses_too_many(
        cluster, sim_node, clean_host):
    # the kernel pod on netdevice VFs (sriov_mode: netdevice)
    kw = {"node": SIM_NODE, "tolerations": SIM_TOLERATIONS, "sriov_mode": "netdevice"}
    kp = _lab_params(cluster, **kw).kubernetes
    sim = kb.KubernetesLab(_lab_params(cluster, **kw))
    assert sim.check(Scenario("sriov", Resources(pinning="exclusive", hugepages=True))) == [
        "sriov cannot run on this cluster: exclusive pinning needs the static CPU manager on sim-worker "
        "(kubelet cpuManagerPolicy: not readable)"]  # a simulated node has no kubelet to ask
    assert sim.check(Scenario("sriov", Resources(hugepages=True))) == []
    # the simulated node's taint keeps a pod without the toleration off it
    assert kb.KubernetesLab(_lab_params(cluster, node=SIM_NODE, sriov_mode="netdevice")).check(
        Scenario("sriov"))[0].endswith(
        "no Ready node without an untolerated taint matches node selector kubernetes.io/hostname=sim-worker")
    objects = render.manifests(Scenario("sriov", Resources(hugepages=True)), kp, "51a0f1")
    _create(sim_node, cluster, objects)
    pod, cond = _scheduled(sim_node, "nfvlab-51a0f1")
    assert cond.status == "True" and pod.spec.node_name == SIM_NODE
    greedy = render.manifests(Scenario("sriov"), kp, "51a0f2")
    res = greedy[-1]["spec"]["containers"][0]["resources"]
    res["requests"][kp.sriov_resource] = res["limits"][kp.sriov_resource] = "16"  # the node has 8 VFs
    _create(sim_node, cluster, greedy)
    _, cond = _scheduled(sim_node, "nfvlab-51a0f2")
    assert cond.status == "False" and "Insufficient intel.com/intel_sriov_netdevice" in cond.message
    pod = cluster.api_client().sanitize_for_serialization(sim_node.read_namespaced_pod("pod1", "nfvlab-51a0f2"))
    assert "Insufficient intel.com/intel_sriov_netdevice" in why_not_ready(sim_node, pod)


@pytest.mark.lab
@pytest.mark.k8s
def test_the_real_scheduler_admits_the_sriov_dpdk_pod_on_a_node_with_vfs_and_hugepages_and_refuses_without(
        cluster, sim_node, clean_host):
    # the draft's Figure 10 pod: testpmd on two vfio-pci VFs of the device plugin's resource, hugepages
    kw = {"node": SIM_NODE, "tolerations": SIM_TOLERATIONS}
    kp = _lab_params(cluster, **kw).kubernetes
    sc = Scenario("sriov", Resources(pinning="exclusive"))
    assert kb.KubernetesLab(_lab_params(cluster, **kw)).check(Scenario("sriov")) == []
    objects = render.manifests(sc, kp, "5d0f01")
    assert [x for o in objects for x in render.validate(o, kp)] == []
    _create(sim_node, cluster, objects)
    pod, cond = _scheduled(sim_node, "nfvlab-5d0f01")
    assert cond.status == "True" and pod.spec.node_name == SIM_NODE
    assert pod.status.qos_class == "Guaranteed"
    limits = pod.spec.containers[0].resources.limits
    assert (limits["intel.com/intel_sriov_dpdk"], limits["hugepages-2Mi"], limits["cpu"]) == ("2", "256Mi", "1")
    # a resource the node does not have: refused before anything exists, and the scheduler agrees
    none = {**kw, "sriov_dpdk_resource": "example.com/no_vfs"}
    assert kb.KubernetesLab(_lab_params(cluster, **none)).check(sc) == [
        "sriov cannot run on this cluster: node sim-worker has 0 allocatable example.com/no_vfs (a pod needs 2)"]
    _create(sim_node, cluster, render.manifests(sc, _lab_params(cluster, **none).kubernetes, "5d0f02"))
    _, cond = _scheduled(sim_node, "nfvlab-5d0f02")
    assert cond.status == "False" and "Insufficient example.com/no_vfs" in cond.message
    # more hugepages than the node has (4Gi): Pending, and the reason names them
    greedy = render.manifests(sc, kp, "5d0f03")
    res = greedy[-1]["spec"]["containers"][0]["resources"]
    res["requests"]["hugepages-2Mi"] = res["limits"]["hugepages-2Mi"] = "8Gi"
    _create(sim_node, cluster, greedy)
    pod = _scheduled(sim_node, "nfvlab-5d0f03")[0]
    why = why_not_ready(sim_node, cluster.api_client().sanitize_for_serialization(pod))
    assert "Insufficient hugepages-2Mi" in why and "Insufficient intel.com" not in why


def _label_node(core, node, labels):
    core.patch_node(node, {"metadata": {"labels": labels}})


@pytest.mark.lab
@pytest.mark.k8s
def test_pods_are_placed_by_node_labels_and_the_noisy_neighbour_joins_pod1_on_its_node(
        cluster, sim_node, clean_host):
    from nfvlab.traffic.embedded import EmbeddedGenerator

    from nfvlab.labs.kubernetes import host_images

    # Both nodes carry the pool label; the simulated one is tainted and the profile does not tolerate
    # it, so the real scheduler places pod1 on the real node; the noisy neighbour follows pod1.
    for n in (cluster.node_name, SIM_NODE):
        _label_node(sim_node, n, {"nfvlab.io/pool": "bench"})
    try:
        backend = _lab(cluster, placement={"pod1": {"node_labels": {"nfvlab.io/pool": "bench"}}},
                       noisy_image=host_images.STRESS_IMAGE)
        sc = Scenario("macvlan", Resources(pinning="shared", noisy_load_pct=30))
        assert backend.check(sc) == []
        assert [n["metadata"]["name"] for n in backend.nodes_for("pod1")] == [cluster.node_name]
        with backend.open(sc) as session:
            info = session.info
            result = clean_trial(EmbeddedGenerator(session.streams, latency_pps=100), 2000, 0.5, 128)
        for d in result.directions:
            check_exact(d, intended=1000)
        assert info["placement"] == {"pod1": cluster.node_name, "noisy": cluster.node_name}
        assert info["pods"]["pod1"]["node_selector"] == {"nfvlab.io/pool": "bench"}
        assert info["pods"]["noisy"]["node_selector"] == {"kubernetes.io/hostname": cluster.node_name}
        assert info["node_labels"]["nfvlab.io/pool"] == "bench"
        assert info["qos_class"] == info["pods"]["noisy"]["qos_class"] == "Burstable"  # shared = Burstable
        assert info["pods"]["noisy"]["load_pct"] == 30
        assert all(p["delete_s"] > 0 for p in info["pods"].values())
    finally:
        for n in (cluster.node_name, SIM_NODE):
            _label_node(sim_node, n, {"nfvlab.io/pool": None})
    _nothing_left(cluster)


@pytest.mark.lab
@pytest.mark.k8s
def test_a_device_plugin_model_on_the_clusters_nads_is_checked_against_allocatable_and_scheduled(
        cluster, sim_node, clean_host):
    from kubernetes import client

    custom = client.CustomObjectsApi(cluster.api_client())
    sim_node.create_namespace({"metadata": {"name": "nfvsim-nets"}})
    try:
        for side in "ab":  # NADs the cluster already has (an AF_XDP CNI's), named in the profile
            custom.create_namespaced_custom_object("k8s.cni.cncf.io", "v1", "nfvsim-nets", "network-attachment-definitions", {
                "apiVersion": render.NAD_API, "kind": "NetworkAttachmentDefinition",
                "metadata": {"name": f"afxdp-{side}", "annotations": {
                    "k8s.v1.cni.cncf.io/resourceName": "afxdp/myPool"}},
                "spec": {"config": json.dumps({"cniVersion": "0.3.0", "type": "afxdp", "mode": "primary"})}})
        kw = {"networks": {"afxdp-cni": ["nfvsim-nets/afxdp-a", "nfvsim-nets/afxdp-b"]},
              "device_resources": {"afxdp-cni": {"afxdp/myPool": 2}}, "tolerations": SIM_TOLERATIONS}
        # a simulated node carries no traffic: external cabling (the generator's MACs given)
        on_sim = {"placement": {"pod1": {"node_labels": {"type": "kwok"}}}, "cabling": "external",
                  "tg_macs": ["02:00:00:00:aa:01", "02:00:00:00:aa:02"]}
        sc = Scenario("afxdp-cni")
        assert _lab(cluster, **kw).check(sc) == [  # the real node has no AF_XDP pool
            f"afxdp-cni cannot run on this cluster: node {cluster.node_name} has 0 allocatable afxdp/myPool "
            "(a pod needs 2)"]
        assert _lab(cluster, **kw, **on_sim).check(sc) == []
        assert _lab(cluster, **kw, placement=on_sim["placement"]).check(sc) == [
            f"afxdp-cni cannot run on this cluster: with cabling local the NIC ports are on {cluster.node_name}, "
            "which the node selector type=kwok does not select (it selects sim-worker)"]
        assert _lab(cluster, **{**kw, "device_resources": {"afxdp-cni": {"afxdp/myPool": 8}}}, **on_sim).check(sc) == [
            "afxdp-cni cannot run on this cluster: node sim-worker has 4 allocatable afxdp/myPool (a pod needs 8)"]
        assert _lab(cluster, **{**kw, "networks": {"afxdp-cni": ["nfvsim-nets/afxdp-a", "nfvsim-nets/nope"]}},
                    **on_sim).check(sc) == [
            "afxdp-cni cannot run on this cluster: the cluster has no NetworkAttachmentDefinition nfvsim-nets/nope"]
        kp = _lab_params(cluster, **kw, **on_sim).kubernetes
        objects = render.manifests(sc, kp, "af0001")
        assert [o["kind"] for o in objects] == ["Namespace", "Pod"]
        assert [x for o in objects for x in render.validate(o, kp)] == []
        _create(sim_node, cluster, objects)
        pod, cond = _scheduled(sim_node, "nfvlab-af0001")
        assert cond.status == "True" and pod.spec.node_name == SIM_NODE
    finally:
        sim_node.delete_namespace("nfvsim-nets", grace_period_seconds=0)


@pytest.mark.lab
@pytest.mark.k8s
def test_the_primary_cni_is_detected_from_what_it_installs_and_ebpf_models_follow_it(cluster, clean_host):
    from kubernetes import client

    api = cluster.api_client()
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    none = _lab(cluster)
    assert none.primary_cni()["name"] is None
    assert none.check(Scenario("ebpf-tc")) == [
        "ebpf-tc cannot run on this cluster: ebpf-tc is the cluster's primary CNI in eBPF mode (Cilium, Calico "
        "eBPF), detected, never installed; found none (no ConfigMap kube-system/cilium-config, no calico-node "
        "or calico-vpp-node DaemonSet)"]
    core.create_namespaced_config_map("kube-system", {"metadata": {"name": "cilium-config"},
                                                      "data": {"kube-proxy-replacement": "true"}})
    try:
        lab = _lab(cluster)
        assert lab.describe()["primary_cni"] == {
            "name": "cilium", "ebpf": True, "version": None,
            "evidence": "ConfigMap kube-system/cilium-config (kube-proxy-replacement: true)"}
        assert "name the NADs that reach the pod in kubernetes.networks.ebpf-xdp" in lab.check(Scenario("ebpf-xdp"))[0]
    finally:
        core.delete_namespaced_config_map("cilium-config", "kube-system")

    def daemonset(name, env):  # selects no node: detection reads the object, nothing runs
        return {"metadata": {"name": name}, "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {
                "nodeSelector": {"nfvlab.io/no-such-node": "x"},
                "containers": [{"name": name, "image": "nfvlab.local/calico-node:v3.31.0", "env": env}]}}}}

    apps.create_namespaced_daemon_set("kube-system", daemonset("calico-node", [{"name": "FELIX_BPFENABLED",
                                                                                "value": "true"}]))
    try:
        assert _lab(cluster).primary_cni() == {"name": "calico", "ebpf": True, "version": "v3.31.0", "evidence":
                                               "DaemonSet kube-system/calico-node FELIX_BPFENABLED=true"}
        apps.patch_namespaced_daemon_set("calico-node", "kube-system", daemonset(
            "calico-node", [{"name": "FELIX_BPFENABLED", "value": "false"}]))
        assert "found calico (DaemonSet kube-system/calico-node FELIX_BPFENABLED=false)" in _lab(cluster).check(
            Scenario("ebpf-tc"))[0]
    finally:
        apps.delete_namespaced_daemon_set("calico-node", "kube-system")
    apps.create_namespaced_daemon_set("kube-system", daemonset("calico-vpp-node", []))
    try:
        memif = _lab(cluster, calico_vpp_memif_ports="udp:1024-65535")
        assert memif.primary_cni()["name"] == "calico-vpp"
        assert memif.check(Scenario("vpp")) == [
            "vpp cannot run on this cluster: the Calico/VPP memif pod renders (nfvlab lab render), but nfvlab "
            "drives traffic through secondary interfaces eth1/eth2, not the memif"]
    finally:
        apps.delete_namespaced_daemon_set("calico-vpp-node", "kube-system")
