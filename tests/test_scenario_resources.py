"""The core plan: who runs where, and what a host cannot provide (pure, fake topologies)."""
import pytest

from nfvlab.scenario.resources import NotRealizable, Resources, plan, ratio

TWO = (0, 1)
ONE_NODE = {0: TWO}


def test_two_cpus_put_the_pmd_alone_and_the_pod_on_the_control_cpu():
    p = plan(vswitch=True, busy_pods=("pod1",), cpus=TWO, nodes=ONE_NODE)
    assert (p.generator, p.vswitch, p.pods["pod1"]) == ({0}, {1}, {0})


def test_without_a_vswitch_the_pod_forwarder_gets_the_free_cpu():
    p = plan(vswitch=False, busy_pods=("pod1",), cpus=TWO, nodes=ONE_NODE)
    assert p.pods["pod1"] == {1}


def test_pinning_modes_on_two_cpus():
    none = plan(vswitch=True, busy_pods=("pod1",), resources=Resources(pinning="none", noisy_load_pct=50),
                cpus=TWO, nodes=ONE_NODE)
    assert none.pods["pod1"] == frozenset() and none.noisy == frozenset()  # float anywhere
    shared = plan(vswitch=True, busy_pods=("pod1",), resources=Resources(pinning="shared", noisy_load_pct=50),
                  cpus=TWO, nodes=ONE_NODE)
    assert shared.pods["pod1"] == shared.noisy == {0}
    with pytest.raises(NotRealizable, match="exclusive pinning needs 4 CPUs.*this host has 2"):
        plan(vswitch=True, busy_pods=("pod1",), resources=Resources(pinning="exclusive", noisy_load_pct=50),
             cpus=TWO, nodes=ONE_NODE)


def test_exclusive_pinning_on_four_cpus_gives_everyone_their_own():
    p = plan(vswitch=True, busy_pods=("pod1",), resources=Resources(pinning="exclusive", noisy_load_pct=50),
             cpus=(0, 1, 2, 3), nodes={0: (0, 1, 2, 3)})
    roles = [p.generator, p.vswitch, p.pods["pod1"], p.noisy]
    assert all(len(r) == 1 for r in roles)
    assert len(frozenset().union(*roles)) == 4


def test_numa_scenarios_place_roles_on_their_nodes():
    nodes = {0: (0, 1, 2), 1: (3, 4, 5)}
    cpus = tuple(range(6))
    s2 = plan(vswitch=True, busy_pods=("pod1",), resources=Resources(numa="s2"), cpus=cpus, nodes=nodes)
    assert s2.generator <= set(nodes[0]) and s2.vswitch <= set(nodes[0]) and s2.pods["pod1"] <= set(nodes[1])
    s5 = plan(vswitch=True, busy_pods=("pod1", "pod2"), resources=Resources(numa="s5"), cpus=cpus, nodes=nodes)
    assert s5.vswitch <= set(nodes[1]) and s5.pods["pod1"] <= set(nodes[1]) and s5.pods["pod2"] <= set(nodes[0])
    with pytest.raises(NotRealizable, match="this host has 1 NUMA node"):
        plan(vswitch=True, busy_pods=("pod1",), resources=Resources(numa="s2"), cpus=TWO, nodes=ONE_NODE)
    with pytest.raises(NotRealizable, match="not defined for 1-pod"):
        plan(vswitch=True, busy_pods=("pod1",), resources=Resources(numa="s6"), cpus=TWO, nodes=ONE_NODE)


def test_core_ratios():
    assert ratio("2:1") == 2 and ratio("1:2") == 0.5
    with pytest.raises(ValueError, match="not a ratio"):
        ratio("2-1")
    two_pmds = plan(vswitch=True, busy_pods=(), resources=Resources(pcdr4sw="2:1"), cpus=(0, 1, 2), nodes={0: (0, 1, 2)})
    assert two_pmds.vswitch == {1, 2}
    with pytest.raises(NotRealizable, match="pcdr4sw 2:1 needs 2 CPU"):
        plan(vswitch=True, busy_pods=(), resources=Resources(pcdr4sw="2:1"), cpus=TWO, nodes=ONE_NODE)
    half = plan(vswitch=False, busy_pods=("pod1", "pod2"), resources=Resources(pcdr4nf="1:2"),
                cpus=(0, 1, 2), nodes={0: (0, 1, 2)})
    assert half.pods["pod1"] == half.pods["pod2"] == {1}  # two NF dataplanes per core


def test_kernel_pods_have_nothing_to_pin():
    with pytest.raises(NotRealizable, match="forward in the kernel"):
        plan(vswitch=False, busy_pods=(), resources=Resources(pinning="shared"), cpus=TWO, nodes=ONE_NODE)


def test_busy_roles_name_every_thread_besides_the_generator_and_where_it_may_run():
    user = plan(vswitch=True, busy_pods=("pod1",), cpus=TWO, nodes=ONE_NODE)
    assert user.busy_roles() == {"vSwitch control threads": {0}, "pod1 forwarder": {0}}
    cni = plan(vswitch=False, busy_pods=("pod1",), cpus=TWO, nodes=ONE_NODE)
    assert cni.busy_roles() == {"pod1 forwarder": {1}}
    floating = plan(vswitch=False, busy_pods=("pod1",), resources=Resources(pinning="none", noisy_load_pct=50),
                    cpus=TWO, nodes=ONE_NODE)
    assert floating.busy_roles(noisy=True) == {"pod1 forwarder": frozenset(), "noisy neighbour": frozenset()}
    assert plan(vswitch=False, busy_pods=(), cpus=TWO, nodes=ONE_NODE).busy_roles() == {}
