"""Service density topologies on real namespaces: lossless, through every NF, spread by ECMP."""
import pytest

from conftest import NO_RESIDUE, check_exact, clean_trial, interface_counters
from test_lab import locked_residue
from nfvlab.labs.embedded import Lab
from nfvlab.scenario import DensityCell, Scenario
from nfvlab.traffic.embedded import EmbeddedGenerator

pytestmark = pytest.mark.lab


def _lab(topology, instances, nfs):
    return Lab(Scenario("host-routing", density=DensityCell(topology, instances, nfs)))


@pytest.mark.parametrize("topology", ["csc", "csp"])
def test_every_nf_of_every_instance_forwards_and_nothing_is_lost(clean_host, topology):
    with _lab(topology, 2, 3) as lab:
        pods = [ns for ns in lab.state.namespaces if "-pod" in ns]
        assert len(pods) == 6
        before = {}
        gen = EmbeddedGenerator(lab.streams, flows=64, latency_pps=100, tracker=lab)
        # the pods' counters are judged over the last trial only (the one asserted)
        result = clean_trial(gen, 4000, 1.0, 128, bidirectional=True,
                             before_each=lambda: before.update({p: interface_counters(p, ["eth1", "eth2"])
                                                                for p in pods}))
        after = {p: interface_counters(p, ["eth1", "eth2"]) for p in pods}
    for d in result.directions:
        check_exact(d, intended=4000)
    fwd = {p: after[p]["eth1"]["rx_packets"] - before[p]["eth1"]["rx_packets"] for p in pods}
    # Forward traffic enters every NF on eth1; ECMP gives each instance a share,
    # and within an instance every NF sees the same frames (a chain, no shortcut).
    inst1, inst2 = [fwd[p] for p in pods[:3]], [fwd[p] for p in pods[3:]]
    assert len(set(inst1)) == 1 and len(set(inst2)) == 1, fwd
    assert inst1[0] > 0 and inst2[0] > 0, "ECMP sent no flow to one instance"
    assert inst1[0] + inst2[0] == result.directions[0].sent_packets
    assert locked_residue() == NO_RESIDUE


def test_bad_shapes_are_refused_before_anything_exists(clean_host):
    with pytest.raises(ValueError, match="topology"):
        with _lab("ring", 1, 1):
            pass
    with pytest.raises(ValueError, match="at most 100"):
        with _lab("csc", 10, 11):
            pass
    assert locked_residue() == NO_RESIDUE
