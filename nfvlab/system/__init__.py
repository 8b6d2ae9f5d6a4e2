"""Thin host-level helpers shared by the lab backends and the generators:
netlink in network namespaces, compile-and-cache of shipped sources, host facts."""
