"""nfvlab works installed from a built wheel (not only as an editable checkout).

Package data (the generator's and the BPF programs' C sources) is found with
importlib.resources; a wheel is built, installed into a scratch venv without
the repository on its path, and used as a user would: `nfvlab lab models`, the
BPF objects compiled from the installed sources, and one trial.
"""
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import barely_sent, check_exact, copy_checkout, until_unspoiled
from nfvlab.trial import TrialResult


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    src = copy_checkout(tmp / "src")  # setuptools writes build/ and egg-info into the source tree
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp / "dist"), str(src)], check=True, capture_output=True, timeout=300,
                   env={**os.environ, "HOME": str(tmp)})
    wheel = next((tmp / "dist").glob("nfvlab-*.whl"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    # The dependencies come from this venv's site-packages (read-only, via a .pth line);
    # nfvlab itself only from the wheel.
    site = Path(sysconfig.get_paths()["purelib"])
    scratch_site = next((venv / "lib").glob("python3*/site-packages"))
    (scratch_site / "deps.pth").write_text(str(site) + "\n")
    subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    return venv, tmp


def _run(venv, tmp, *args, **kw):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["NFVLAB_CACHE"] = str(tmp / "cache")  # compile the installed sources afresh
    return subprocess.run(args, cwd=tmp, capture_output=True, text=True, timeout=180, env=env, **kw)


def test_the_wheel_holds_the_package_and_its_c_sources(wheel_venv):
    venv, tmp = wheel_venv
    out = _run(venv, tmp, str(venv / "bin/python"), "-c",
               "import nfvlab, nfvlab.labs.embedded.bpf as b, nfvlab.system.build as s; "
               "print(nfvlab.__file__); print(b.source_dir()); "
               "print(s.package_file('nfvlab.traffic.embedded', 'nfvlab_gen.c'))", check=True)
    lines = out.stdout.split()
    assert all(str(venv) in x for x in lines), lines  # nothing from the checkout
    assert Path(lines[1], "tc_redirect.c").exists() and Path(lines[1], "nfvlab_stats.h").exists()


@pytest.mark.lab
def test_lab_models_bpf_objects_and_one_trial_from_the_wheel(wheel_venv, clean_host):
    venv, tmp = wheel_venv
    models = json.loads(_run(venv, tmp, str(venv / "bin/nfvlab"), "lab", "models", "--json", check=True).stdout)
    realizable = {m["name"] for m in models if m["realizable"]}
    assert {"linux-bridge", "macvlan", "ebpf-tc"} <= realizable
    obj = _run(venv, tmp, str(venv / "bin/python"), "-c",
               "from nfvlab.labs.embedded import bpf; from nfvlab.traffic.embedded import tx_object; "
               "print(bpf.compile_object('tc_redirect')); print(tx_object())", check=True)
    assert all(Path(p).is_file() and str(tmp / "cache") in p for p in obj.stdout.split()), obj.stdout
    # The socket TX path (the XDP TX object is compiled above): each try builds a lab, and the XDP
    # loop, which never sleeps, meets a just-built lab's deferred work trial after trial (test_cli).
    profile = tmp / "lab.socket.yaml"
    profile.write_text("kind: embedded\ngenerator: {kind: embedded, cpu: 0, tx: socket}\n")

    def trial():
        out = _run(venv, tmp, str(venv / "bin/nfvlab"), "trial", "--model", "ebpf-tc", "--rate-pps", "2000",
                   "--duration-s", "0.5", "--lab-profile", str(profile), "--json")
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    # Counts are asked of what was sent (its --json record), whatever the host did to the schedule.
    d = until_unspoiled(trial, lambda got: barely_sent(TrialResult.from_dict(got)),
                        what="the wheel's nfvlab trial --json (ebpf-tc, 2000 pps)")
    for x in TrialResult.from_dict(d).directions:
        check_exact(x, intended=1000)
    assert d["intended_packets"] == 2000 and d["sent_packets"] == sum(x["sent_packets"] for x in d["directions"])
