"""Traffic generators behind one protocol (:class:`~nfvlab.traffic.base.TrafficGenerator`):
the embedded ``nfvlab-gen`` and TRex. :func:`nfvlab.traffic.select.generator_for` picks one."""
from nfvlab.traffic.base import GeneratorError, TrafficGenerator, identity_key
from nfvlab.traffic.stats import DirectionStats, LatencyStats

__all__ = ["DirectionStats", "GeneratorError", "LatencyStats", "TrafficGenerator", "identity_key"]
