"""What the pod boundary costs: each model's NDR on the Kubernetes lab over its NDR on the embedded lab.

One run, printed: per model both labs realize, the NDR at 64 B found by MLRsearch (bidirectional,
1 s trials, 2 % width) on the embedded lab (pods are namespaces), then on the local Kubernetes
cluster (real kubelet, containerd, Multus; the same data path in pods, started for this run), and
the ratio Kubernetes / embedded. Same host, same generator, same core plan, same search: the
difference is what Kubernetes puts between the generator and the forwarder (CNI-made ports,
cgroups, the container runtime). The draft's question is whether it costs little (goal >= 0.8).

Numbers describe this host (2 shared vCPUs, veth links), not a 40 GbE testbed.
Run as root:  .venv/bin/python bench/k8s_vs_embedded.py [MODEL ...]
"""
from __future__ import annotations

import sys
import time

import yaml

from nfvlab import calibrate, measure
from nfvlab.labs.embedded import EmbeddedLab
from nfvlab.labs.kubernetes import KubernetesLab
from nfvlab.labs.kubernetes import local_cluster as kc
from nfvlab.params import GeneratorParams, LabParams, SearchParams, TrafficParams, validate
from nfvlab.scenario import Scenario
from nfvlab.search import SearchError
from nfvlab.traffic.select import identity_for

FRAME_SIZE = 64
MODELS = ("macvlan", "linux-bridge", "host-routing", "smartnic-direct", "ovs-dpdk-vhost", "ovs-dpdk-memif",
          "ovs-dpdk-tap", "ovs-afxdp", "afxdp-cni", "chain-userspace", "chain-combined")
# Experiment A's quick goal (params/quick/experiment_a.yaml): a load decided by 2 s of 1 s trials,
# half of which may exceed (one spoiled trial cannot move a bound).
SEARCH = SearchParams(method="mlrsearch", pdr_loss_ratio=None, relative_width=0.02,
                      initial_trial_duration_s=0.5, final_trial_duration_s=1.0, duration_sum_s=2.0,
                      exceed_ratio=0.5)
LAB_PROFILE = "params/lab.kubernetes.yaml"


def ndr_pps(backend, scenario: Scenario, gen_params: GeneratorParams, ceiling_pps: float) -> tuple[float, float]:
    """(NDR, set-up time) of ``scenario`` on ``backend``, pps and s."""
    traffic = TrafficParams(frame_sizes=[FRAME_SIZE])
    with measure.bench(backend, gen_params, scenario, traffic) as (session, gen):
        meas = measure.measurer(gen, FRAME_SIZE, traffic)
        res = measure.search(meas, FRAME_SIZE, SEARCH, progress=False, ceiling_pps=ceiling_pps,
                             max_rate_pps=measure.default_max_rate("10GbE", FRAME_SIZE, ceiling_pps))[0]
        return res.throughput_pps, session.info["setup_s"]


def main(models: list[str]) -> int:
    t0 = time.monotonic()
    why = kc.unavailable_reason()
    if why:
        print(f"no local Kubernetes cluster: {why}")
        return 1
    embedded, gen_params = EmbeddedLab(), GeneratorParams()
    cal = calibrate.Calibration.load()
    identity = identity_for(gen_params)
    if cal.ceiling(identity, FRAME_SIZE) is None:
        r, identity = calibrate.generator_ceiling(embedded, gen_params, FRAME_SIZE)
        cal.put(identity, FRAME_SIZE, r, bidirectional=True)
        cal.save()
    ceiling = cal.ceiling(identity, FRAME_SIZE)
    with open(LAB_PROFILE) as f:
        profile = yaml.safe_load(f)
    print(f"generator ceiling at {FRAME_SIZE} B: {ceiling / 1e3:.1f} kpps")
    print(f"{'model':<16} {'embedded kpps':>13} {'k8s kpps':>9} {'k8s/emb':>8} {'k8s setup s':>11}")
    # The profile names the local cluster's kubeconfig and node. The Kubernetes lab takes the host
    # lock for each run (it cables this host), so the cluster must not hold it.
    with kc.LocalCluster(lock=False, log=lambda m: None) as k8s:
        kc.install_nad_crd(k8s)
        kube = KubernetesLab(validate(LabParams, profile, LAB_PROFILE))
        for name in models:
            scenario = Scenario(name)
            why = embedded.check(scenario) or kube.check(scenario)
            if why:
                print(f"{name:<16} not realizable on both labs: {why[0]}")
                continue
            try:
                emb, _ = ndr_pps(embedded, scenario, gen_params, ceiling)
                k8s_ndr, setup_s = ndr_pps(kube, scenario, gen_params, ceiling)
            except SearchError as err:
                print(f"{name:<16} search failed: {err}")
                continue
            print(f"{name:<16} {emb / 1e3:>13.1f} {k8s_ndr / 1e3:>9.1f} {k8s_ndr / emb:>8.2f} {setup_s:>11.1f}")
    print(f"total {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or list(MODELS)))
