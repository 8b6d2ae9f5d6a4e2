"""Names vulture reports as unused although something it cannot see uses them (tests/test_dead_code.py).

vulture reads this file as code that uses each name; it is never imported. Every entry says who uses
it. Code that only a test calls is dead: delete it (or move it into the test) instead of listing it here.
"""
# ruff: noqa
# flake8: noqa
_ = object()

# Called by Python or a framework, not by our code.
__getattr__  # PEP 562: the lazy public names of the nfvlab package (nfvlab/__init__.py)
__dir__  # PEP 562, the same
model_config  # pydantic: the models' configuration
_._bounds  # pydantic validators (field_validator / model_validator), run when params are loaded
_._distinct
_._macs
_._client_path_is_v3
_._tg_macs
_._cabling
_._kind_settings
_._unique_fractions
_._unique_mtus
_._mtus_fit
_._density_switch
_._frame_sizes_of_this_lab
_._max_covers_first
_._control_in_grid
_._one  # K8sPlacement: node or node_labels
_._not_empty  # CniExperimentParams
_._seconds_number  # AdaptiveParams
_._looks_fit  # PairedParams
_._every_path_carries_pods
ProfileParams  # the schema of params/profile.yaml, which DVC's templating reads (tests/test_params.py checks it)

# Fields of records: serialized with dataclasses.asdict into every record, read by whoever reads records.
created_at  # LabState: when a lab's state record was made (lab status, lab clean)
p95_ns  # LatencyStats percentiles and TRex's jitter (docs/records.md)
p999_ns
jitter_ns
reordered_packets  # DirectionStats (docs/records.md)
stall_max_s  # Schedule: in every trial record's extra.schedule (docs/records.md)
stalls
stall_threshold_s
softirq_gap_s  # Schedule: in every trial record's extra.schedule (docs/records.md)
slip_own_s  # Schedule: in every trial record's extra.schedule (docs/records.md)
elapsed_s
sent_bps  # iperf3 / wrk results of experiment E (nfvlab/traffic/tcp.py, docs/records.md)
received_bytes
transfer_bytes
latency_mean_us
latency_p50_us
latency_p90_us
latency_p99_us
latency_max_us
full_length_low_loss_s  # RFC 9971 load classification inputs (nfvlab/search/goal.py)
full_length_high_loss_s
short_low_loss_s
short_high_loss_s

# Public API for readers of records and notebooks, documented where named.
_.histogram  # LatencyStats.histogram(): a record's HDR histogram decoded (docs/records.md)
_.received_rate_pps  # DirectionStats, beside offered_rate_pps
_.classification  # RFC 9971 load classification of classify_load (docs/methodology.md)
_.last_trial  # TrexGenerator: everything TRex reported for the last trial (docs/trex.md)

# The known-answer DUTs measurement code is tested on (the brief: measurement is tested on data paths
# whose answer is known): the synthetic DUT's truth and the CNI lab's shaped link.
_.expected_loss_ratio  # SyntheticDut (nfvlab/search/synthetic.py)
_.n_calls
n_calls
_.shape_link  # CniLab: a tbf of known rate on the node link (tests/test_tcp.py)

# Documented API for users' notebooks (docs/records.md, "Reading"): the tidy frame of every trial.
trials_frame

# tarfile.TarInfo fields set for a reproducible image layer (host_images.layer): tarfile reads them.
_.mtime
_.gid
_.gname
_.linkname
