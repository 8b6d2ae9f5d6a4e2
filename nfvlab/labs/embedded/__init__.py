"""The embedded local lab: each scenario built from network namespaces, veths and real data paths
(Linux bridge, routing, macvlan, eBPF/XDP, OVS-DPDK with testpmd pods) on this host."""
from nfvlab.labs.embedded.backend import EmbeddedLab
from nfvlab.labs.embedded.lab import LAB_MTU, Lab

__all__ = ["EmbeddedLab", "LAB_MTU", "Lab"]
