"""What is benchmarked, as pure data: models, resources, topology, density cells.

Nothing here touches the host; a lab backend (:mod:`nfvlab.labs`) decides
whether and how a :class:`Scenario` can be realized.
"""
from nfvlab.scenario.catalogue import DEFAULT_MODEL, MODEL_NAMES, MODELS, Model
from nfvlab.scenario.resources import CorePlan, NotRealizable, Resources
from nfvlab.scenario.scenario import DensityCell, KnownPath, Scenario
from nfvlab.scenario.topology import TG_NET, Port, Stream

__all__ = ["CorePlan", "DEFAULT_MODEL", "DensityCell", "KnownPath", "MODELS", "MODEL_NAMES", "Model",
           "NotRealizable", "Port", "Resources", "Scenario", "Stream", "TG_NET"]
