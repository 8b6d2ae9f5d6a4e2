"""host-routing on the local node (``cabling: local``): the node's kernel routes between its NIC ports
and the pod's point-to-point links, Calico-like (draft §4.1.1), as the embedded lab's worker does.

The ptp CNI makes each of the pod's links (a veth: the pod's end addressed, the node's end holding the
gateway as a /32, a host route to the pod; :data:`render.ROUTED_LINK`). What a Calico node's routing
adds for traffic from outside the cluster nfvlab adds on the node (this host), before the pod exists
(:func:`prepare`) and once it is Ready (:func:`route_to_pod`):

- each NIC port an address (:data:`render.NODE_NIC_IP`), the generator's port behind it a permanent
  neighbour, its network (198.19.x.0/24) a route;
- per NIC port, a policy rule (``iif nicN``) to a table whose default route is the pod's end of the
  link on that side (the same destination is routed to the pod when it comes from the NIC, to the NIC
  when it comes back from the pod); the pod's address a permanent neighbour;
- IPv4 forwarding on, reverse-path filtering off on these links (the pod's replies come back on
  another link than the route to their source).

What outlives the run's links is recorded before it is changed (:attr:`RunState.host_rules`,
:attr:`RunState.host_sysctls`) and undone by :func:`undo` at teardown and by ``nfvlab lab clean``; the
addresses, neighbours and routes go with the NIC ports and the pod's links.
"""
from __future__ import annotations

from pathlib import Path

from nfvlab.labs.kubernetes.render import NODE_NIC_IP, ROUTED_LINK, TG_IP
from nfvlab.scenario.topology import TG_NET
from nfvlab.system import netns as nl

#: Host-wide sysctls the node's routing sets (recorded, restored at teardown): value to set.
SYSCTLS = {"net/ipv4/ip_forward": "1", "net/ipv4/conf/all/rp_filter": "0"}
#: Policy routing table and rule priority per side (rules outlive the links they name).
TABLE = {0: 18101, 1: 18102}


def rules(nics: list[str]) -> list[dict]:
    """The policy rules :func:`route_to_pod` adds: ``iif`` the NIC port towards generator port ``side``."""
    return [{"iifname": nic, "table": TABLE[side], "priority": TABLE[side]} for side, nic in enumerate(nics)]


def sysctl_values() -> dict[str, str]:
    """The current values of :data:`SYSCTLS` (what :func:`undo` restores)."""
    return {key: Path("/proc/sys", key).read_text().strip() for key in SYSCTLS}


def _set_sysctl(key: str, value: str) -> None:
    Path("/proc/sys", key).write_text(value)


def prepare(nics: list[str], tg_macs: list[str]) -> None:
    """The node's side towards the generator: NIC port addresses, neighbours, routes; forwarding on."""
    for side, nic in enumerate(nics):
        nl.add_address(None, nic, NODE_NIC_IP[side])
        nl.add_neighbour(None, nic, TG_IP[side], tg_macs[side])
        nl.add_route(None, f"{TG_NET[side]}.0/24", TG_IP[side], nic)
        _set_sysctl(f"net/ipv4/conf/{nic}/rp_filter", "0")
    for key, value in SYSCTLS.items():
        _set_sysctl(key, value)


def route_to_pod(nics: list[str], pod_macs: dict[int, str]) -> dict[int, str]:
    """The node's side towards the pod (Ready, so the ptp CNI made its links): per side, traffic from
    the NIC port routed to the pod's end of the link. Returns side -> the node's end of the link."""
    links = {}
    for side, rule in enumerate(rules(nics)):
        pod_ip, gateway = ROUTED_LINK[side][0].split("/")[0], ROUTED_LINK[side][1]
        link = nl.link_with_address(None, gateway)
        if link is None:
            raise RuntimeError(f"no link on the node has {gateway} (the ptp CNI's end of the pod's link)")
        _set_sysctl(f"net/ipv4/conf/{link}/rp_filter", "0")
        nl.add_neighbour(None, link, pod_ip, pod_macs[side], replace=True)
        # onlink: the ptp CNI's route to the pod has scope host, through which a gateway is ignored
        nl.add_route(None, "0.0.0.0/0", pod_ip, link, table=rule["table"], onlink=True)
        nl.add_rule_iif(None, rule["iifname"], rule["table"], rule["priority"])
        links[side] = link
    return links


def undo(host_rules: list[dict], host_sysctls: dict[str, str]) -> list[str]:
    """Remove the rules and restore the sysctls a run recorded; returns errors (one line each)."""
    errors = []
    for rule in host_rules:
        try:
            nl.delete_rule_iif(None, rule["iifname"], rule["table"], rule["priority"])
        except Exception as err:
            errors.append(f"rule iif {rule['iifname']} table {rule['table']}: {err}")
    for key, value in host_sysctls.items():
        try:
            _set_sysctl(key, value)
        except OSError as err:
            errors.append(f"sysctl {key}: {err}")
    return errors
