"""Parameters of the TRex generator: :class:`nfvlab.params.TrexParams` (a lab profile's
``generator:`` block with ``kind: trex``), re-exported here for the driver.

Rates are always packets/s (TRex's absolute ``"<X>pps"`` multiplier): virtual ports
report a link speed of 0, so percentages of line rate do not work there.
"""
from nfvlab.params import TrexParams

__all__ = ["TrexParams"]
