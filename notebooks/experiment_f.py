# %% [markdown]
# # Experiment F: memif vs a tap pod interface, MTU 1500 and 9000 (seed 003)
#
# A single-core forwarding pod (DPDK testpmd) behind the user-space vSwitch (OVS-DPDK, the local stand-in for Calico/VPP) gets either memif interfaces or kernel tap interfaces it reads through the kernel (the seed's tun). Frame-size scaling at MTU 1500 and MTU 9000 (jumbo frames up to 9018 B end to end; larger-than-MTU frames are skipped with a note). The seed's DSA-offload figures need hardware the claims table says this host lacks.
#
# **Local numbers describe this host** (a few vCPUs, veth links, the generator's calibrated ceiling), never the draft's 40 GbE testbed. Configurations this host cannot realize are listed with the reason instead of a value.
#
# Run as is (JupyterLab, papermill) it measures a new run into `data/interactive/`, outside the pipeline; `measure = False` with `records = "data/raw/experiment_f.jsonl"` shows the pipeline's last run instead. `dvc repro` passes its own records file. Paths are relative to the repository root, whatever directory the kernel started in.

# %% tags=["parameters"]
# Parameters (papermill overrides these)
params_file = "params/quick/experiment_f.yaml"
lab_file = "params/lab.yaml"  # the lab profile
records = "data/interactive/experiment_f.jsonl"
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
notebook.show(notebook.experiment_outputs("f", records, p.models))
