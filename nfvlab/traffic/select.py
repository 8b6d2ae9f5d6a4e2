"""Pick the traffic generator the lab profile names (:class:`~nfvlab.params.GeneratorParams`)."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Optional

from nfvlab.params import GeneratorParams, TrafficParams, TrexParams
from nfvlab.scenario import Port, Stream
from nfvlab.scenario.topology import default_ips
from nfvlab.traffic.base import GeneratorError, TrafficGenerator


def generator_for(params: GeneratorParams, streams: list[Stream], traffic: TrafficParams,
                  tracker: Optional[object] = None, busy_roles: Optional[dict] = None) -> TrafficGenerator:
    """A generator of ``params.kind`` driving ``streams`` with ``traffic``'s flows and probes.

    ``busy_roles``: the lab's threads that compete for CPU (``session.busy_roles``), which
    the embedded generator's ``tx: auto`` weighs with ``traffic``'s frame sizes.
    """
    if params.kind == "embedded":
        from nfvlab.traffic.embedded import EmbeddedGenerator

        return EmbeddedGenerator(streams, flows=traffic.flows, latency_pps=traffic.latency_pps,
                                 cpu=params.cpu, tx=params.tx, tracker=tracker,
                                 frame_sizes=traffic.frame_sizes, busy_roles=busy_roles)
    if params.kind == "trex":
        from nfvlab.traffic.trex import TrexGenerator

        # Flows and probes are the lab profile's (TRex's own settings), not the experiment's.
        return TrexGenerator(streams, params)
    raise GeneratorError(f"generator kind {params.kind!r} is not implemented")


def identity_for(params: GeneratorParams, tx: Optional[str] = None) -> dict:
    """The identity (:meth:`TrafficGenerator.identity`) of the generator ``params`` names, without ports.

    ``tx``: the embedded generator's TX path (default ``params.tx``; ``auto`` names the path it
    takes wherever it can, the first of :func:`tx_paths`).
    """
    if params.kind == "embedded":
        from nfvlab.traffic.embedded.generator import identity

        tx = tx or params.tx
        return identity(params.cpu, tx_paths(params)[0] if tx == "auto" else tx)
    if params.kind == "trex":
        from nfvlab.traffic.trex import TrexGenerator

        gen = TrexGenerator(_port_streams(params), params)
        try:
            return gen.identity()
        finally:
            gen.close()
    raise GeneratorError(f"generator kind {params.kind!r} is not implemented")


def tx_paths(params: GeneratorParams) -> tuple[str, ...]:
    """The embedded generator's TX paths ``params`` may use, the preferred first (``auto``: both, or
    only ``socket`` where the kernel refuses the XDP path); () for TRex."""
    if params.kind != "embedded":
        return ()
    if params.tx != "auto":
        return (params.tx,)
    from nfvlab.traffic.embedded.generator import auto_tx_paths

    return auto_tx_paths()


def _port_streams(params: TrexParams) -> list[Stream]:
    """Placeholder streams naming only TRex's ports (enough to connect and ask its identity)."""
    p = [Port("trex", str(x)) for x in params.ports]
    mac = "02:00:00:00:00:00"
    return [Stream(p[0], p[1], mac, mac, *default_ips(0)), Stream(p[1], p[0], mac, mac, *default_ips(1))]


@contextmanager
def bench(backend, generator: GeneratorParams, scenario, traffic: TrafficParams
          ) -> Iterator[tuple[object, TrafficGenerator]]:
    """Open ``scenario`` on ``backend`` and a generator on its streams: yields ``(session, generator)``;
    the generator is closed before the lab is torn down, on success, error or Ctrl-C."""
    with backend.open(scenario) as session:
        gen = generator_for(generator, session.streams, traffic, session.tracker, session.busy_roles)
        try:
            yield session, gen
        finally:
            close = getattr(gen, "close", None)  # TRex: release the ports, end the worker; nfvlab-gen: end its process
            if close is not None:
                close()
