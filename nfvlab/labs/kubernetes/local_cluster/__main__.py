"""``python -m nfvlab.labs.kubernetes.local_cluster``: the same as ``nfvlab cluster``."""
from nfvlab.labs.kubernetes.local_cluster.command import main

raise SystemExit(main())
