"""The CNI lab's data paths (experiment E): how fast pods talk on this host. One run, printed.

1. pod-to-pod TCP goodput (iperf3, 2 streams, 1 s, as tests/test_labs_cni.py runs it) per data
   path: direct, vxlan and ipip (where the kernel has it) at link MTU 1500, sriov-analogue at 9000;
   target: above 100 Mbit/s each (what the tests asked before; a working path does far more);
2. segmentation offloads off, vxlan: goodput at link MTU 9000 over goodput at 1500 (per-packet costs
   make the MTU count, as on a NIC link); target: above 2 (measured 5.7 / 1.3 Gbit/s on 2 CPUs);
3. HTTP (wrk, 5 threads, 10 connections, 1 s, a 1000 B file) from node1 through the service DNAT
   and straight to the pod: requests in that second and errors; target: above 100 requests, 0 errors.

The tests check what the host cannot change (the bytes crossed the link or the tunnel, frames no
larger than the MTU with offloads off, every request answered); these are the speeds, which the
host's load does change. Figures describe this host (2 shared vCPUs, veth links). Asserts nothing.
Run as root:  .venv/bin/python bench/cni_paths.py
"""
from __future__ import annotations

import sys
import time

from nfvlab.labs.embedded.cni import SERVICE_IP, CniLab, tunnel_problem
from nfvlab.scenario.cni import CniPath, IperfParams, WrkParams
from nfvlab.traffic.tcp import run_iperf3, run_wrk, start_nginx

IPERF = IperfParams(parallel_streams=2, duration_s=1)
WRK = WrkParams(duration_s=1, file_bytes=(1000,))
GOODPUT_TARGET_BPS = 100e6
OFFLOAD_RATIO_TARGET = 2.0
REQUESTS_TARGET = 100


def goodput_bps(path: CniPath, **lab_kw) -> float:
    with CniLab(path, **lab_kw) as lab:
        r = run_iperf3(lab, server_ns=lab.ns("pod2"), server_ip=lab.address("pod2"), client_ns=lab.ns("pod1"),
                       params=IPERF)
    return r.goodput_bps


def main() -> int:
    t0 = time.monotonic()
    print(f"== 1. pod-to-pod TCP goodput ({IPERF.parallel_streams} streams, {IPERF.duration_s:g} s); "
          f"target > {GOODPUT_TARGET_BPS / 1e6:.0f} Mbit/s")
    paths = [CniPath("direct", 1500), CniPath("vxlan", 1500), CniPath("ipip", 1500), CniPath("sriov-analogue", 9000)]
    for path in paths:
        why = tunnel_problem(path.data_path) if path.data_path == "ipip" else None
        if why:
            print(f"{path.data_path:<15} MTU {path.link_mtu_bytes:>5}: not realizable here: {why}")
            continue
        g = goodput_bps(path)
        print(f"{path.data_path:<15} MTU {path.link_mtu_bytes:>5}: {g / 1e9:6.2f} Gbit/s "
              f"({'meets' if g > GOODPUT_TARGET_BPS else 'BELOW'} the target)")

    print(f"== 2. vxlan, segmentation offloads off: goodput at MTU 9000 / at 1500; target > {OFFLOAD_RATIO_TARGET:g}")
    g = {mtu: goodput_bps(CniPath("vxlan", mtu), segmentation_offload=False) for mtu in (1500, 9000)}
    ratio = g[9000] / g[1500]
    print(f"MTU 1500: {g[1500] / 1e9:.2f} Gbit/s, MTU 9000: {g[9000] / 1e9:.2f} Gbit/s, ratio {ratio:.2f} "
          f"({'meets' if ratio > OFFLOAD_RATIO_TARGET else 'BELOW'} the target)")

    print(f"== 3. HTTP from node1 ({WRK.threads} threads, {WRK.connections} connections, {WRK.duration_s:g} s, "
          f"{WRK.file_bytes[0]} B); target > {REQUESTS_TARGET} requests, 0 errors")
    with CniLab(CniPath("direct", 1500)) as lab:
        start_nginx(lab, ns=lab.ns("pod2"), bind_ip=lab.address("pod2"), file_bytes=WRK.file_bytes)
        for what, host in (("via the service", SERVICE_IP), ("to the pod", lab.address("pod2"))):
            r = run_wrk(lab, client_ns=lab.ns("node1"), url=f"http://{host}/f{WRK.file_bytes[0]}.bin", params=WRK)
            ok = r.requests > REQUESTS_TARGET and r.errors == 0
            print(f"{what:<16} {r.requests:>7} requests ({r.requests_per_s:,.0f}/s), {r.errors} errors "
                  f"({'meets' if ok else 'BELOW'} the target)")
    print(f"total {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
