"""Traffic generation: the generator interface and its embedded implementation."""
from nfvlab.traffic.stats import DirectionStats, LatencyStats

__all__ = ["DirectionStats", "LatencyStats"]
