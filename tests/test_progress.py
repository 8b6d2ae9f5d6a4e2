"""A run's progress lines (nfvlab.progress)."""
from nfvlab.progress import Progress


def test_progress_lines_count_estimate_and_stay_one_line_each():
    import io

    out = io.StringIO()
    bar = Progress("x", 4, stream=out)
    for _ in range(3):
        bar.trial()
    bar.update("macvlan 64 B rep 0", "ndr 1 pps")
    line = out.getvalue().strip()
    assert line.startswith("x: 1/4 macvlan 64 B rep 0: ndr 1 pps; 3 trials, elapsed ")
    assert line.endswith(" left") and "\r" not in line and "\n" not in line
