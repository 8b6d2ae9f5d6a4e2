"""What each ``nfvlab`` command does, one module per command family; :mod:`nfvlab.cli` parses the
command line and calls them (``nfvlab experiment run`` is :mod:`nfvlab.stage`, ``nfvlab cluster``
:mod:`nfvlab.labs.kubernetes.local_cluster`)."""
