"""The TRex traffic generator: a TRex server (stateless mode) driven through a worker process.

:class:`TrexGenerator` implements :class:`nfvlab.traffic.base.TrafficGenerator`; its
parameters are :class:`TrexParams`. The TRex client library runs only inside the worker
(``worker.py``, under ``.venv-trex``'s python), never in this process. See docs/trex.md.
"""
from nfvlab.traffic.trex.config import TrexParams
from nfvlab.traffic.trex.generator import TrexGenerator

__all__ = ["TrexGenerator", "TrexParams"]
