"""An HTML template for `dvc plots show` that works offline (vega inlined, no CDN).

    python scripts/plots_offline.py                      # writes build/vega/offline.html
    dvc plots show --html-template build/vega/offline.html

`dvc plots show` writes a page that loads vega, vega-lite and vega-embed from a CDN,
so it is blank without internet. This fetches the same versions (those DVC's
renderer names) from the npm registry with `npm pack` (npm's normal client), and
writes a template with their minified builds inlined. Needs `npm` (Debian: `npm`);
without it, one line says so and nothing is written.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "build" / "vega" / "offline.html"
PAGE = """<!DOCTYPE html>
<html>
<head>
    {refresh_tag}
    <meta charset="utf-8">
    <title>nfvlab: DVC plots (offline)</title>
SCRIPTS
    <style>
        table {
            border-spacing: 15px;
        }
    </style>
</head>
<body>
    {plot_divs}
</body>
</html>
"""


def cdn_packages() -> list[tuple[str, str]]:
    """``(name, version)`` of the scripts DVC's vega renderer loads from the CDN, in its order."""
    from dvc_render.vega import VegaRenderer

    return re.findall(r"/npm/([a-z-]+)@([0-9.]+)", VegaRenderer.SCRIPTS)


def build(out: Path = OUT) -> Path:
    """Write the template to ``out``; return it."""
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("plots_offline: npm is not installed (Debian: apt-get install npm); nothing written")
    scripts = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, version in cdn_packages():
            tgz = subprocess.run([npm, "pack", "--silent", f"{name}@{version}"], cwd=tmp, check=True,
                                 capture_output=True, text=True).stdout.strip().splitlines()[-1]
            with tarfile.open(Path(tmp) / tgz) as tar:
                js = tar.extractfile(f"package/build/{name}.min.js").read().decode()
            # A literal "</script" inside the code would end the inline script early.
            js = js.replace("</script", "<\\/script")
            scripts.append(f"    <script>/* {name}@{version} */\n{js}\n    </script>")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(PAGE.replace("SCRIPTS", "\n".join(scripts)))
    return out


if __name__ == "__main__":
    print(build())
