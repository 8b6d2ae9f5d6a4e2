"""The cluster's credentials: the admin's bearer token, the service-account key pair and the kubeconfig."""
from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

from nfvlab.labs.kubernetes.local_cluster.components import API_URL
from nfvlab.labs.kubernetes.local_cluster.host import _run


def make_credentials(pki: Path) -> str:
    """The admin's token (``tokens.csv``, the apiserver's token auth) and the service-account key pair
    (``sa.key``, ``sa.pub``) under ``pki``; returns the token."""
    token = secrets.token_hex(16)
    (pki / "tokens.csv").write_text(f'{token},admin,admin,"system:masters"\n')
    _run(["openssl", "genrsa", "-out", pki / "sa.key", "2048"])
    _run(["openssl", "rsa", "-in", pki / "sa.key", "-pubout", "-out", pki / "sa.pub"])
    return token


def write_kubeconfig(path: Path, ca_file: Path, token: str) -> None:
    """A kubeconfig for the admin (token auth, the apiserver's own CA), readable by root only."""
    ca = base64.b64encode(ca_file.read_bytes()).decode()
    path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: nfvlab
  cluster:
    server: {API_URL}
    certificate-authority-data: {ca}
users:
- name: admin
  user:
    token: {token}
contexts:
- name: nfvlab
  context: {{cluster: nfvlab, user: admin}}
current-context: nfvlab
""")
    os.chmod(path, 0o600)
