"""The Kubernetes lab: scenarios deployed as pods, NetworkAttachmentDefinitions and Multus
secondary networks on a real cluster (docs/kubernetes.md)."""
from nfvlab.labs.kubernetes.backend import KubernetesLab

__all__ = ["KubernetesLab"]
