"""No dead code in the package, its scripts, benchmarks and notebooks (vulture).

Tests are not scanned: a function only a test calls is dead. What vulture cannot see being
used (framework hooks, record fields, documented API) is listed with its user in
tests/dead_code_whitelist.py.
"""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VULTURE = str(Path(sys.executable).with_name("vulture"))
SCANNED = ["nfvlab", "scripts", "bench", *sorted(str(p.relative_to(REPO)) for p in (REPO / "notebooks").glob("*.py"))]


def _vulture(*paths: str) -> subprocess.CompletedProcess:
    return subprocess.run([VULTURE, *paths, "--min-confidence", "60"], cwd=REPO, capture_output=True, text=True)


def test_no_dead_code():
    out = _vulture(*SCANNED, "tests/dead_code_whitelist.py")
    assert out.returncode == 0 and not out.stdout, f"dead code (delete it, or list its user):\n{out.stdout}{out.stderr}"


def test_a_dead_function_would_be_caught(tmp_path):
    # The check can fail: an unused function in a scanned tree is reported.
    (tmp_path / "mod.py").write_text("def used():\n    return 1\n\n\ndef forgotten():\n    return 2\n\n\nused()\n")
    out = _vulture(str(tmp_path / "mod.py"))
    assert out.returncode != 0 and "unused function 'forgotten'" in out.stdout and "'used'" not in out.stdout
