"""``nfvlab lab``: models, up, down, status, render, clean."""
from __future__ import annotations

import json

from nfvlab import params as P
from nfvlab.commands.common import CliError, _lab_params, _scenario


def cmd_lab(a) -> int:
    from nfvlab.labs.embedded import EmbeddedLab, state
    from nfvlab.labs.embedded.lab import down

    if a.lab_cmd == "models":
        rows = _models(_lab_params(a))
        if a.json:
            print(json.dumps(rows, indent=1))
        else:
            for r in rows:
                mark = "yes" if r["realizable"] else f"no: {r['reason']}"
                print(f"{r['name']:<16} §{r['section']:<6} {r['title']:<48} {mark}")
        return 0
    if a.lab_cmd == "up":
        scenario = _scenario(a)
        backend = EmbeddedLab()
        reasons = backend.check(scenario)
        if reasons:
            raise CliError(reasons[0])
        with backend.open(scenario, persistent=True) as session:
            lab_id = session.info["lab_id"]
            st = next(s for s in state.all_states() if s.lab_id == lab_id)
            info = {"lab_id": lab_id, "model": a.model, "setup_s": session.info["setup_s"],
                    "namespaces": st.namespaces, **st.info}
        print(json.dumps(info, indent=1) if a.json else
              f"lab {lab_id} ({a.model}) is up: {', '.join(info['namespaces'])}; "
              f"`nfvlab lab down {lab_id}` removes it")
        return 0
    if a.lab_cmd == "down":
        ids = [s.lab_id for s in state.all_states()] if a.all else [a.lab_id]
        if not a.all and not a.lab_id:
            raise CliError("lab down: give a lab id (see `nfvlab lab status`) or --all")
        for i in ids:
            if not down(i):
                raise CliError(f"lab down: no lab {i!r} (see `nfvlab lab status`)")
            print(f"lab {i} removed")
        return 0
    if a.lab_cmd == "status":
        rows = [{"lab_id": s.lab_id, "model": s.model, "status": s.status, "persistent": s.persistent,
                 "owner_alive": s.owner_alive(), "namespaces": s.namespaces} for s in state.all_states()]
        if a.json:
            print(json.dumps(rows, indent=1))
        elif not rows:
            print("no labs")
        else:
            for r in rows:
                print(f"{r['lab_id']} {r['model']:<14} {r['status']:<13} "
                      f"{'kept' if r['persistent'] else 'run'} owner {'alive' if r['owner_alive'] else 'gone'}")
        return 0
    if a.lab_cmd == "render":
        return _render(a)
    if a.lab_cmd == "clean":
        from nfvlab.labs.kubernetes import backend as k8s

        removed = k8s.clean()  # cluster namespaces of dead runs (their owners hold no lock)
        with state.HostLock("lab clean"):
            removed += state.clean(include_persistent=a.all)
        print("\n".join(f"removed {x}" for x in removed) if removed else "nothing to clean")
        return 0
    raise AssertionError(a.lab_cmd)


def _models(lab: P.LabParams) -> list[dict]:
    """``nfvlab lab models``: each model of the catalogue, whether ``lab`` realizes it and why not."""
    from nfvlab import labs
    from nfvlab.labs.embedded import realize
    from nfvlab.scenario import MODELS, Scenario

    feats = realize.kernel_features() if lab.kind == "embedded" else None
    backend = labs.backend_for(lab) if lab.kind != "embedded" else None
    rows = []
    for mdl in MODELS:
        row = {"name": mdl.name, "section": mdl.section, "family": mdl.family, "title": mdl.title,
               "cni_analogue": mdl.cni_analogue, "lab_kind": lab.kind}
        if backend is None:
            ok, why = realize.realizable(mdl.name, feats)
            row.update(realizable=ok, reason=why or None, local=realize.REALIZATIONS[mdl.name].how)
        else:
            why = backend.check(Scenario(mdl.name))
            row.update(realizable=not why, reason=why[0] if why else None)
        rows.append(row)
    return rows


def _render(a) -> int:
    """``nfvlab lab render``: the manifests a Kubernetes run of ``--model`` would create, as YAML."""
    import yaml

    from nfvlab.labs.kubernetes import render

    lab = _lab_params(a)
    if lab.kind != "kubernetes" or lab.kubernetes is None:
        raise CliError("lab render: give --lab-profile with kind: kubernetes (see docs/kubernetes.md)")
    scenario = _scenario(a)
    if not render.renders(scenario, lab.kubernetes):
        why = render.NOT_RENDERED_WHY.get(scenario.model, "nfvlab renders networks for "
                                          + ", ".join(render.rendered_models()))
        raise CliError(f"lab render: {scenario.model} has no rendered networks on Kubernetes: {why} (name two "
                       f"NetworkAttachmentDefinitions the cluster has in kubernetes.networks.{scenario.model})")
    why = render.density_reasons(scenario, lab.kubernetes)
    if why:
        raise CliError(f"lab render: {scenario.label} cannot run on this cluster: {why[0]}")
    objects = render.manifests(scenario, lab.kubernetes)
    problems = [x for m in objects for x in render.validate(m, lab.kubernetes)]
    if problems:
        raise CliError(f"lab render: {problems[0]}")
    print(yaml.safe_dump_all(objects, sort_keys=False), end="")
    return 0
