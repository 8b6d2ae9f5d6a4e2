# %% [markdown]
# # nfvlab report: experiments A-F beside the published results
#
# Every experiment's tables, claims and figures, assembled from `data/tables`, `figures` and the raw records' provenance (written by `nfvlab analyze`, `nfvlab figures reference` and the experiment stages).

# %% tags=["parameters"]
# Parameters (papermill overrides these)
tables_dir = "data/tables"
figures_dir = "figures"
records_dir = "data/raw"

# %%
from IPython.display import Image, Markdown, display

from nfvlab import notebook, report

root = notebook.enter_repo_root()  # JupyterLab starts the kernel in notebooks/: paths are the repository's
for title, text, table, figures in report.sections(tables_dir, figures_dir, records_dir):
    display(Markdown(f"## {title}\n\n{text}"))
    if table is not None:
        display(table)
    for png in figures:
        display(Image(filename=str(png)))
