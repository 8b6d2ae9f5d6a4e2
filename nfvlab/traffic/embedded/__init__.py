"""The embedded generator: ``nfvlab-gen`` (C, AF_PACKET) on ports the lab created or the user named."""
from nfvlab.traffic.embedded.binary import count_object, gen_binary, tx_object
from nfvlab.traffic.embedded.generator import EmbeddedGenerator

__all__ = ["EmbeddedGenerator", "count_object", "gen_binary", "tx_object"]
