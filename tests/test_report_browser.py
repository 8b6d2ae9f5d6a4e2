"""The HTML report checked in a real browser (headless Chromium, the Debian package).

The report is made the way the ``report`` stage makes ``reports/report.html``
(papermill runs ``notebooks/report.ipynb``, nbconvert renders it without code),
from synthetic records in a temporary tree (``tests/test_report.py``), so the test
does not need a ``./run repro``. Chromium loads a copy of the page with a probe
script appended; the probe writes what it found into the DOM, and
``--dump-dom`` returns it after the page (and its images) loaded.
"""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_report import REPO, build_outputs

pytestmark = pytest.mark.slow  # a headless Chromium: not in ./run test-fast

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                                    "(Debian package `chromium`, scripts/debian-packages.txt)")

#: Runs in the page after load: facts about the rendered DOM, as JSON in <pre id="nfvlab-probe">.
PROBE = """
<script>
window.addEventListener("load", () => {
  const text = document.body.innerText;
  const imgs = Array.from(document.images);
  const tables = Array.from(document.querySelectorAll("table"));
  const facts = {
    images: imgs.length,
    broken_images: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src.slice(0, 80)),
    nan: (text.match(/.{0,40}\\bNaN\\b.{0,40}/g) || []),
    negative_bounds: (text.match(/\\[\\s*-\\d[\\d.]*\\s*,[^\\]]*\\]/g) || []),
    tables: tables.length,
    links: Array.from(document.querySelectorAll('a[href^="#"]:not(.anchor-link)')).map(a => a.getAttribute("href")),
    // As a browser resolves a fragment: the id as written, else percent-decoded.
    dead_links: Array.from(document.querySelectorAll('a[href^="#"]'))
      .map(a => a.getAttribute("href").slice(1))
      .filter(raw => {
        let decoded = raw;
        try { decoded = decodeURIComponent(raw); } catch (e) { /* a bare % stays as is */ }
        return raw && document.getElementById(raw) === null && document.getElementById(decoded) === null;
      }),
    // pandas' index: row headers (<th>) in the body, or a blank first header cell
    index_columns: tables.filter(t => {
        const first = t.querySelector("thead th");
        return t.querySelector("tbody th") !== null || (first !== null && first.innerText.trim() === "");
      }).map(t => t.innerText.slice(0, 60)),
  };
  const pre = document.createElement("pre");
  pre.id = "nfvlab-probe";
  pre.textContent = JSON.stringify(facts);
  document.body.appendChild(pre);
});
</script>
"""


def browser_facts(html: Path, tmp: Path) -> dict:
    """Load ``html`` in headless Chromium and return the probe's facts (see :data:`PROBE`).

    The copy lives in ``tmp``: a report's figures must be embedded (nbconvert does), a
    relative image path would not load and is reported broken.
    """
    page = tmp / f"probe_{html.name}"
    page.write_text(html.read_text(encoding="utf-8") + PROBE, encoding="utf-8")
    proc = subprocess.run(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         f"--user-data-dir={tmp / 'chromium-profile'}", "--virtual-time-budget=20000", "--dump-dom",
         page.resolve().as_uri()],
        check=False, capture_output=True, text=True, timeout=180)  # a failed load is reported below
    m = re.search(r'<pre id="nfvlab-probe">(.*?)</pre>', proc.stdout, re.DOTALL)
    if m is None:
        raise AssertionError(f"chromium returned no probe result (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(m.group(1).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
                      .replace("&quot;", '"'))


def problems(facts: dict) -> list[str]:
    """What a reviewer would reject, one line each; empty when the page passes."""
    out = []
    if facts["broken_images"]:
        out.append(f"{len(facts['broken_images'])} of {facts['images']} images did not load: "
                   f"{facts['broken_images'][:3]}")
    if facts["nan"]:
        out.append(f"'NaN' shown: {facts['nan'][:3]}")
    if facts["negative_bounds"]:
        out.append(f"negative interval bound: {facts['negative_bounds'][:3]}")
    if facts["index_columns"]:
        out.append(f"{len(facts['index_columns'])} tables with a raw index column: {facts['index_columns'][:2]}")
    if facts["dead_links"]:
        out.append(f"contents links to no heading: {facts['dead_links'][:3]}")
    return out


@needs_chromium
def test_checker_rejects_a_bad_page(tmp_path):
    """The checker can fail: NaN text, a negative bound, a pandas index column, a missing image, a dead link."""
    import pandas as pd

    bad = tmp_path / "bad.html"
    table = pd.DataFrame({"NDR [kpps]": ["79.2 [-6.8, 86.4]", "NaN"]}).to_html()  # index shown
    bad.write_text(f"<html><body><a href='#Nowhere-(1)'>1. Nowhere</a><h1>bad</h1>{table}"
                   "<img src='missing.png'></body></html>")
    facts = browser_facts(bad, tmp_path)
    found = problems(facts)
    assert facts["images"] == 1 and facts["tables"] == 1
    assert [p.split(" ")[0] for p in found] == ["1", "'NaN'", "negative", "1", "contents"], found
    good = tmp_path / "good.html"
    good.write_text("<h2 id='Nowhere-(1)'>x</h2><a href='#Nowhere-%281%29'>1. x</a>"
                    + pd.DataFrame({"NDR [kpps]": ["79.2 [0.0*, 86.4]"]}).style.hide(axis="index").to_html())
    assert problems(browser_facts(good, tmp_path)) == []


@needs_chromium
def test_report_html_passes_in_chromium(tmp_path):
    root = build_outputs(tmp_path / "outputs", a_noise=0.6)  # n = 3 and CV ~ 60 %: negative t bounds in the CSV
    from nfvlab.plots.reference import render_reference_figures

    render_reference_figures(root / "figures" / "reference")
    executed, reports = tmp_path / "executed" / "report.ipynb", tmp_path / "reports"
    executed.parent.mkdir()
    # As the `report` stage of dvc.yaml runs it: the py:percent notebook under the guardian
    # (papermill on the .ipynb where the pair is not there).
    params = ["-p", "tables_dir", str(root / "tables"), "-p", "figures_dir", str(root / "figures"),
              "-p", "records_dir", str(root / "raw")]
    if (REPO / "notebooks/report.py").exists() and (REPO / "nfvlab/notebook_run.py").exists():
        run = [sys.executable, "-m", "nfvlab.notebook_run", "--no-progress-bar",
               str(REPO / "notebooks/report.py"), str(executed), *params]
    else:
        run = [sys.executable, "-m", "papermill", "--no-progress-bar", str(REPO / "notebooks/report.ipynb"),
               str(executed), *params]
    subprocess.run(run, check=True, capture_output=True, cwd=REPO)
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--no-input", "--output-dir",
                    str(reports), "--output", "report",
                    "--TagRemovePreprocessor.remove_cell_tags=injected-parameters", str(executed)],
                   check=True, capture_output=True, cwd=REPO)
    html = reports / "report.html"
    facts = browser_facts(html, tmp_path)
    assert problems(facts) == []
    assert facts["images"] >= 12 + 4  # the reference figures and the experiments' figures
    assert facts["tables"] >= 10
    assert len(facts["links"]) >= 6  # the contents: every link reaches its heading (no dead_links above)
    text = html.read_text(encoding="utf-8")
    assert "0.0*, " in text  # the clipped lower bounds are there, marked
