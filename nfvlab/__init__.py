"""nfvlab."""
