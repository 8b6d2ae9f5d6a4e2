"""The embedded generator: ``nfvlab-gen`` (C, AF_PACKET) on ports the lab created or the user named."""
from nfvlab.traffic.embedded.binary import gen_binary
from nfvlab.traffic.embedded.generator import EmbeddedGenerator

__all__ = ["EmbeddedGenerator", "gen_binary"]
