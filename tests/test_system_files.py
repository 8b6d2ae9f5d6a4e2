"""nfvlab.system.files: atomic JSON writes leave the old file or the new one, and no temporary file."""
import json
import os

import pytest

from nfvlab.system import files


def test_writes_sorted_json_and_replaces_the_old_file(tmp_path):
    path = tmp_path / "state.json"
    files.write_json_atomic(path, {"b": 1, "a": [1, 2]})
    first = path.read_bytes()
    files.write_json_atomic(path, {"a": [1, 2], "b": 1})
    assert path.read_bytes() == first  # same data, other key order: byte-identical
    assert json.loads(first) == {"a": [1, 2], "b": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_an_unserializable_value_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "state.json"
    files.write_json_atomic(path, {"generation": 1})
    with pytest.raises(TypeError):
        files.write_json_atomic(path, {"generation": 2, "bad": object()})
    assert json.loads(path.read_text()) == {"generation": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_a_signal_between_write_and_rename_leaves_no_temporary(tmp_path, monkeypatch):
    # What Ctrl-C (or the lab's Terminated) does while the file is being made durable.
    path = tmp_path / "state.json"
    files.write_json_atomic(path, {"generation": 1})

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        files.write_json_atomic(path, {"generation": 2})
    assert json.loads(path.read_text()) == {"generation": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_the_directory_is_fsynced_after_the_rename(tmp_path, monkeypatch):
    # Without the directory's fsync a crash after the rename may bring back the old entry.
    import stat

    synced = []
    real_fsync = os.fsync

    def recording(fd):
        synced.append((stat.S_ISDIR(os.fstat(fd).st_mode), sorted(os.listdir(tmp_path))))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording)
    files.write_json_atomic(tmp_path / "state.json", {"generation": 1})
    # The file's data first (only the temporary exists), then the directory once the rename is done.
    assert synced == [(False, ["state.json.tmp"]), (True, ["state.json"])]
