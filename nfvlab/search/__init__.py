"""Throughput searches over an injected :class:`~nfvlab.trial.Measurer`.

* :func:`mrr` -- maximum receive rate (trials at max load);
* :func:`rfc2544_search`, :func:`ndr_pdr_bisect` -- RFC 2544 binary search;
* :func:`mlrsearch` -- MLRsearch (RFC 9971) via PyPI ``MLRsearch``;
* :class:`GoalParams`, :func:`classify_load`, :func:`conditional_throughput_pps`
  -- RFC 9971 search goals, load classification, conditional throughput;
* :func:`loss_sweep` -- loss versus offered load, 0.1 % to 100 %;
* :class:`SyntheticDut` -- a model DUT with a known answer, for tests and docs.
"""
from nfvlab.search.bisect import ndr_pdr_bisect, rfc2544_search
from nfvlab.search.goal import GoalParams, classify_load, conditional_throughput_pps
from nfvlab.search.mlr import DEFAULT_GOALS, mlrsearch
from nfvlab.search.mrr import mrr
from nfvlab.search.result import (
    FLAGS,
    IRREGULAR_FLAGS,
    LoadNotOfferedError,
    MinRateFailedError,
    SearchError,
    SearchResult,
    SearchTimeoutError,
    GeneratorFaultError,
    total_cost,
)
from nfvlab.search.sweep import DEFAULT_FRACTIONS, loss_sweep
from nfvlab.search.synthetic import SyntheticDut

__all__ = [
    "DEFAULT_FRACTIONS",
    "DEFAULT_GOALS",
    "FLAGS",
    "GoalParams",
    "IRREGULAR_FLAGS",
    "LoadNotOfferedError",
    "MinRateFailedError",
    "SearchError",
    "SearchResult",
    "SearchTimeoutError",
    "GeneratorFaultError",
    "SyntheticDut",
    "classify_load",
    "conditional_throughput_pps",
    "loss_sweep",
    "mlrsearch",
    "mrr",
    "ndr_pdr_bisect",
    "rfc2544_search",
    "total_cost",
]
