"""The embedded local lab: model catalogue, topology builders, lifecycle."""
