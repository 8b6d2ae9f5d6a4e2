"""``nfvlab experiment run X --dry-run``: the plan of a measurement stage, or of every stage of the
profile (``all``), from :mod:`nfvlab.plan`; nothing is built or measured. Not part of
:mod:`nfvlab.stage`, so that the measurement stages do not depend on it."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

from nfvlab import params as P
from nfvlab import plan
from nfvlab.measure import InputError
from nfvlab.stage import _Parser, load  # the stage's one-line argument errors


def main(argv: Optional[list[str]] = None, prog: str = "nfvlab experiment run --dry-run") -> int:
    """Print the plan; exit 2 with one line for bad input."""
    ap = _Parser(prog=prog, description="the plan of a measurement stage: its grid, its searches (E: tool "
                                        "runs) and trials, and the time they took in the records' last run")
    ap.add_argument("experiment", help="the experiment's letter (a, b, ...), or 'all': every measurement stage "
                                       "of dvc.yaml in the profile params/profile.yaml names")
    ap.add_argument("--params", type=Path, help="the experiment's params file (not with 'all')")
    ap.add_argument("--records", type=Path, help="the records file whose last run the times come from")
    ap.add_argument("--lab-profile", type=Path, default=Path("params/lab.yaml"), metavar="FILE")
    ap.add_argument("--local-cluster", action="store_true", help="as the run would have it (no effect on the plan)")
    a = ap.parse_args(argv)
    if a.experiment == "all":
        stages = plan.profile_stages()
        if not stages:
            print("nfvlab: error: no measurement stage in dvc.yaml here (run it from the repository)", file=sys.stderr)
            return 2
    elif a.params is None or a.records is None:
        print("nfvlab: error: --dry-run of one experiment needs --params and --records (or give 'all')",
              file=sys.stderr)
        return 2
    else:
        stages = [(f"experiment {a.experiment}", [a.experiment, "--params", str(a.params), "--lab-profile",
                                                   str(a.lab_profile), "--records", str(a.records)])]
    plans = []
    try:
        for name, args in stages:
            opt, words = {}, iter(args[1:])
            for word in words:
                if word != "--local-cluster":  # the one flag without a value
                    opt[word] = next(words)
            for flag in ("--params", "--lab-profile"):
                if not Path(opt[flag]).is_file():
                    raise InputError(f"{flag} {opt[flag]}: no such file")
            p, _ = load(args[0], opt["--params"], opt["--lab-profile"])
            plans.append(plan.stage_plan(name, p, opt["--records"]))
    except (P.ParamsError, InputError) as err:
        print(f"nfvlab: error: {err}", file=sys.stderr)
        return 2
    print(plan.plan_text(plans, grid=a.experiment != "all"))
    return 0
