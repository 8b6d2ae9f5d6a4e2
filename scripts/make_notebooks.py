"""Write the experiment notebooks B, C, D (run once by a developer; output is committed).

They are deliberately thin: parameters, one library call that measures, and
displays of library-made tables, so everything they do is reachable by tests.
"""
from pathlib import Path

import nbformat as nbf

INTRO = {
    "b": ("Experiment B: CPU pinning x NUMA with a noisy neighbour (draft Appendix B, Figure 13)",
          "One pod on the user-space vSwitch (OVS-DPDK with vhost-user, the local stand-in for the "
          "draft's VPP) next to a noisy-neighbour pod running stress-ng. CPU pinning none / shared / "
          "exclusive (the CMK modes) x NUMA scenarios s1..s4, zero-loss throughput at 1518 B."),
    "c": ("Experiment C: two-pod chains, user-space only vs combined (draft Appendix C, Figures 16 and 17)",
          "pod1 -> vSwitch -> pod2. User-space only: every pod port is a vhost-user port of OVS-DPDK. "
          "Combined: north-south traffic on direct ports (the local analogue of SR-IOV VFs), east-west "
          "through OVS-DPDK. Zero-loss throughput over frame sizes and NUMA scenarios s1..s6."),
    "d": ("Experiment D: NFV service density (seed 001)",
          "Service instances x network functions per instance, CNF service chain (csc, snake "
          "forwarding through the switch) vs CNF service pipeline (csp), MRR at 64 B and IMIX. NFs are "
          "kernel routers; the worker's router is the switch and spreads flows over instances by ECMP."),
}
NOTE = ("**Local numbers describe this host** (a few vCPUs, veth links, the generator's calibrated "
        "ceiling), never the draft's 40 GbE testbed. Configurations this host cannot realize are "
        "listed with the reason instead of a value.")


def notebook(letter: str) -> nbf.NotebookNode:
    title, text = INTRO[letter]
    nb = nbf.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbf.v4.new_code_cell(
        "# Parameters (papermill overrides these)\n"
        f'params_file = "params/quick/experiment_{letter}.yaml"\n'
        'lab_file = "params/lab.yaml"  # the lab profile\n'
        f'records = "data/raw/experiment_{letter}.jsonl"\n'
        "overrides = {}  # merged into the params file, e.g. {\"repetitions\": 1}")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [
        nbf.v4.new_markdown_cell(f"# {title}\n\n{text}\n\n{NOTE}"),
        params,
        nbf.v4.new_code_cell(
            "from IPython.display import Markdown, display\n\n"
            "from nfvlab import analysis, experiment, results\n"
            "from nfvlab import params as P\n\n"
            "p = P.load_experiment(params_file, lab_file, overrides)\n"
            "run_id = experiment.run_experiment(p, records, source=params_file)\n"
            "run_id"),
        nbf.v4.new_markdown_cell("## Results (statistics over repetitions; published values beside)"),
        nbf.v4.new_code_cell(
            f'for name, table in analysis.tables("{letter}", records, p.models).items():\n'
            "    display(Markdown(f\"### {name}\"))\n"
            "    display(table)"),
        nbf.v4.new_markdown_cell("## Not realizable on this host (and failed searches)"),
        nbf.v4.new_code_cell("results.not_realizable_frame(records)"),
    ]
    return nb


if __name__ == "__main__":
    out = Path(__file__).resolve().parents[1] / "notebooks"
    for letter in INTRO:
        nbf.write(notebook(letter), out / f"experiment_{letter}.ipynb")
