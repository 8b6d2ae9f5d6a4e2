# %% [markdown]
# # Experiment D: NFV service density (seed 001)
#
# Service instances x network functions per instance, CNF service chain (csc, snake forwarding through the switch) vs CNF service pipeline (csp), MRR at 64 B and IMIX. NFs are kernel routers; the worker's router is the switch and spreads flows over instances by ECMP.
#
# **Local numbers describe this host** (a few vCPUs, veth links, the generator's calibrated ceiling), never the draft's 40 GbE testbed. Configurations this host cannot realize are listed with the reason instead of a value.
#
# Run as is (JupyterLab, papermill) it measures a new run into `data/interactive/`, outside the pipeline; `measure = False` with `records = "data/raw/experiment_d.jsonl"` shows the pipeline's last run instead. `dvc repro` passes its own records file. Paths are relative to the repository root, whatever directory the kernel started in.

# %% tags=["parameters"]
# Parameters (papermill overrides these)
params_file = "params/quick/experiment_d.yaml"
lab_file = "params/lab.yaml"  # the lab profile
records = "data/interactive/experiment_d.jsonl"
measure = True  # False: only show what `records` holds
overrides = {}  # merged into the params file, e.g. {"repetitions": 1, "adaptive": None} (fixed n)

# %%
from nfvlab import experiment, notebook, results
from nfvlab import params as P

root = notebook.enter_repo_root()  # JupyterLab starts the kernel in notebooks/: paths are the repository's
p = P.load_experiment(params_file, lab_file, overrides)
if measure:
    # Under dvc repro the progress lines go to the stage's log, not into the saved notebook.
    with notebook.progress_elsewhere():
        run_id = experiment.run_experiment(p, records, source=params_file)

# %% [markdown]
# ## Not realizable on this host (and failed searches)

# %%
results.not_realizable_frame(records)

# %% [markdown]
# ## Results: tables (statistics over repetitions; published values beside), figures, claims

# %%
notebook.show(notebook.experiment_outputs("d", records, p.models))
