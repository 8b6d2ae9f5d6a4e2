"""Plot families: matplotlib ``Figure`` objects on Agg canvases, no pyplot state.

* :mod:`nfvlab.plots.throughput` -- throughput vs frame size line plots.
* :mod:`nfvlab.plots.heatmap` -- annotated matrix heatmaps with non-values as text.
* :mod:`nfvlab.plots.bars` -- grouped bars with CIs, text where there is no value.
* :mod:`nfvlab.plots.reference` -- one PNG per published reference table.
"""
from nfvlab.plots import bars, heatmap, reference, throughput  # noqa: F401
from nfvlab.plots.bars import grouped_bars  # noqa: F401
from nfvlab.plots.heatmap import matrix_heatmap  # noqa: F401
from nfvlab.plots.reference import render_reference_figures  # noqa: F401
from nfvlab.plots.throughput import throughput_vs_frame_size  # noqa: F401
