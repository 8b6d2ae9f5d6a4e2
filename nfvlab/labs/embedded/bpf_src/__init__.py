"""BPF C sources of the eBPF models (package data)."""
