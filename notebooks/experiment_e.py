# %% [markdown]
# # Experiment E: CNI data paths, TCP and HTTP (seed 002)
#
# Two "nodes" (network namespaces) cabled by one link whose MTU is swept, a pod on each, one CNI data path between them: direct routing (Calico without a tunnel), VXLAN (Flannel/Cilium-like), IPIP where the kernel has it, and the SR-IOV analogue (a direct port). TCP goodput with iperf3 (node to pod, pod to pod) and HTTP with wrk (5 threads, 10 connections) against nginx in the pod, pod to pod, host to pod and host to a ClusterIP-style service (nftables DNAT). Segmentation offloads are off unless the params say otherwise (docs/experiment-e.md).
#
# **Local numbers describe this host** (2 vCPUs, veth links), never the seed's Arm testbed. Data paths this host cannot build are listed with the reason instead of a value.
#
# Run as is (JupyterLab, papermill) it measures a new run into `data/interactive/`, outside the pipeline; `measure = False` with `records = "data/raw/experiment_e.jsonl"` shows the pipeline's last run instead. `dvc repro` passes its own records file. Paths are relative to the repository root, whatever directory the kernel started in.

# %% tags=["parameters"]
# Parameters (papermill overrides these)
params_file = "params/quick/experiment_e.yaml"
lab_file = "params/lab.yaml"  # the lab profile: the lab that realizes the data paths
records = "data/interactive/experiment_e.jsonl"
measure = True  # False: only show what `records` holds
overrides = {}  # merged into the params file, e.g. {"repetitions": 1, "adaptive": None} (fixed n)

# %%
from nfvlab import experiment, labs, notebook
from nfvlab import params as P

root = notebook.enter_repo_root()  # JupyterLab starts the kernel in notebooks/: paths are the repository's
p = P.load(params_file, P.CniExperimentParams, overrides)  # a bad grid fails here, before any lab exists
if measure:
    # Under dvc repro the progress lines go to the stage's log, not into the saved notebook.
    with notebook.progress_elsewhere():
        backend = labs.backend_for(P.load(lab_file, P.LabParams))
        run_id = experiment.run_experiment(p, records, backend=backend, source=params_file)

# %% [markdown]
# ## Results: tables (statistics over repetitions; what could not be measured), figures, claims

# %%
notebook.show(notebook.experiment_outputs("e", records, None))
