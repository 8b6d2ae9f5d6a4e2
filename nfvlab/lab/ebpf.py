"""(being written) Builders of the ebpf networking models."""
BUILDERS: dict = {}
