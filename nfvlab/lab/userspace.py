"""(being written) Builders of the userspace networking models."""
BUILDERS: dict = {}
