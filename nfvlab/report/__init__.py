"""The study report: provenance, claims, then every experiment's tables and figures, in order.

``notebooks/report.ipynb`` only displays :func:`sections`; the logic lives here so
tests reach it. An experiment whose tables are not written yet gets a "not run
yet" section instead of failing. Tables are shown formatted (:func:`format_table`):
rates in kpps with their interval, CV in %, units in the headers, "—" with the
reason where there is no value, "unknown" where a flag was not recorded, no
index column; the tidy functions (:func:`provenance_table`, :func:`claims_summary`,
:func:`run_changes`) return numbers for tests and notebooks.

* :mod:`nfvlab.report.assemble` -- :func:`sections`: the whole report, in order.
* :mod:`nfvlab.report.section` -- :class:`Section`, one item of it; a table's items.
* :mod:`nfvlab.report.values` -- cell values as text (intervals, flags, numbers, column names).
* :mod:`nfvlab.report.tables` -- tables as text, split when wide, styled; their captions.
* :mod:`nfvlab.report.files` -- where the records, tables and figures of each experiment are.
* :mod:`nfvlab.report.provenance` -- where and how the latest runs were measured, from the records.
* :mod:`nfvlab.report.claims` -- the claims' verdicts, counted and listed.
* :mod:`nfvlab.report.changes` -- run-to-run changes of the mean rates.
* :mod:`nfvlab.report.validity` -- the invalid trials of the latest run.
* :mod:`nfvlab.report.latency` -- latency percentiles as text.
* :mod:`nfvlab.report.lab_comparison` -- an experiment on the embedded and the Kubernetes lab.
* :mod:`nfvlab.report.experiment` -- a searched experiment's sections (A-D, F).
* :mod:`nfvlab.report.cni` -- experiment E's sections.
* :mod:`nfvlab.report.anchors` -- the contents list and its links.
"""
from nfvlab.report.anchors import anchor, contents
from nfvlab.report.assemble import sections
from nfvlab.report.changes import CHANGE_FLAG, run_changes
from nfvlab.report.claims import claims_summary, claims_table
from nfvlab.report.cni import cni_sections
from nfvlab.report.lab_comparison import two_labs
from nfvlab.report.latency import latency_text
from nfvlab.report.provenance import provenance_table
from nfvlab.report.section import Section
from nfvlab.report.tables import format_table, split_columns
from nfvlab.report.values import CLIPPED_NOTE, flag_text, interval_text

__all__ = ["CHANGE_FLAG", "CLIPPED_NOTE", "Section", "anchor", "claims_summary", "claims_table", "cni_sections",
           "contents", "flag_text", "format_table", "interval_text", "latency_text", "provenance_table",
           "run_changes", "sections", "split_columns", "two_labs"]
