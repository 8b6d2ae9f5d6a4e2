"""User-named ports as a lab (nfvlab.labs.external): argument checks and TRex port streams."""
from __future__ import annotations

import pytest

from nfvlab.labs.base import LabError
from nfvlab.labs.external import ExternalPorts, parse_port
from nfvlab.scenario import Scenario


@pytest.mark.parametrize("text, message", [
    ("eth0", "use NS:IFACE"),
    ("trex:x", "TRex ports are trex:N"),
    ("trex:256", "TRex ports are trex:N"),
    ("ns:this-name-is-far-too-long", "use NS:IFACE"),
])
def test_bad_ports_get_one_line_naming_the_argument(text, message):
    with pytest.raises(LabError) as e:
        parse_port(text)
    assert message in str(e.value) and repr(text) in str(e.value) and "\n" not in str(e.value)


def test_trex_and_host_ports_cannot_be_mixed():
    with pytest.raises(LabError, match="not one of each"):
        ExternalPorts(["trex:0", "ns1:eth0"])


def test_trex_ports_need_the_duts_macs_and_use_them_per_direction():
    lab = ExternalPorts(["trex:0", "trex:3"])
    assert lab.check(Scenario("external")) == ["--dmac: with TRex ports give the DUT's two MACs, one per direction"]
    lab = ExternalPorts(["trex:0", "trex:3"], ["02:00:00:00:0d:01", "02:00:00:00:0d:02"])
    assert lab.check(Scenario("external")) == []
    a, b = lab.streams()
    assert (a.tx.iface, a.rx.iface, a.smac, a.dmac) == ("0", "3", "02:00:00:00:00:01", "02:00:00:00:0d:01")
    assert (b.tx.iface, b.rx.iface, b.smac, b.dmac) == ("3", "0", "02:00:00:00:00:04", "02:00:00:00:0d:02")


def test_experiment_es_data_paths_are_never_realized_on_user_named_ports():
    from nfvlab.scenario.cni import CniPath, CniScenario

    lab = ExternalPorts(["trex:0", "trex:1"], ["02:00:00:00:00:aa", "02:00:00:00:00:bb"])
    sc = CniScenario(CniPath("direct", 1500))
    (why,) = lab.check(sc)
    assert why.startswith("direct@1500: user-named ports are a data path built outside nfvlab")
    with pytest.raises(LabError, match="^direct@1500: user-named ports"), lab.open(sc):
        pass
