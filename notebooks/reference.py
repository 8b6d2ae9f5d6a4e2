# %% [markdown]
# # Reference data: what the seed documents published
#
# The numbers every nfvlab reproduction is compared against: the draft's Figures 10-17 (40GbE testbed, TRex) and the NFV service density note's MRR matrices (10GbE, nfvbench). They are *published* values, transcribed in `data/reference/` (see `docs/reference-data.md`); nothing here is measured on this host. The figures go to `out_dir` (default outside the pipeline's `figures/reference`, which the `reference_figures` stage writes).

# %% tags=["parameters"]
# Parameters (papermill overrides these)
out_dir = "data/interactive/reference"
dpi = 100

# %%
from IPython.display import Image, display

from nfvlab import notebook, reference
from nfvlab.plots.reference import render_reference_figures

root = notebook.enter_repo_root()  # JupyterLab starts the kernel in notebooks/: paths are the repository's
reference.table_names()

# %% [markdown]
# ## Draft Figure 10: zero-loss throughput per networking model (Gbps)

# %%
reference.models_throughput().pivot(index="frame_size", columns="model", values="throughput_gbps")

# %% [markdown]
# ## Draft Figure 13: CPU pinning x NUMA scenario at 1518 B (Gbps)

# %%
reference.pinning_numa().pivot(index="pinning", columns="scenario", values="throughput_gbps")

# %% [markdown]
# ## Density note: which cells were measured, not measured, impossible

# %%
reference.density_mrr().groupby(["testbed", "status"]).size().unstack(fill_value=0)

# %% [markdown]
# ## All reference figures

# %%
paths = render_reference_figures(root / out_dir, dpi=dpi)
for p in paths[:3]:
    display(Image(filename=str(p)))
[p.name for p in paths]
