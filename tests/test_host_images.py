"""Images made from this host's files (nfvlab.labs.kubernetes.host_images): what is inside, reproducibly."""
import io
import json
import os
import shutil
import tarfile

import pytest

from nfvlab.labs.kubernetes import host_images as hi


def _layer_names(tar_path):
    with tarfile.open(tar_path) as t:
        manifest = json.loads(t.extractfile("manifest.json").read())[0]
        config = json.loads(t.extractfile(manifest["Config"]).read())
        layer = tarfile.open(fileobj=io.BytesIO(t.extractfile(manifest["Layers"][0]).read()))
        return manifest, config, {m.name: m for m in layer.getmembers()}


@pytest.mark.skipif(shutil.which("dpdk-testpmd") is None, reason="needs Debian's dpdk package")
def test_the_dpdk_image_holds_testpmd_its_libraries_the_port_drivers_and_a_shell(tmp_path):
    image = hi.dpdk_image()
    first = hi.write_archive(image, tmp_path / "a.tar")
    # Same host files, same bytes: the image id does not change between cluster starts.
    assert hi.write_archive(image, tmp_path / "b.tar") == first
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()
    manifest, config, members = _layer_names(tmp_path / "a.tar")
    assert manifest["RepoTags"] == [hi.DPDK_IMAGE] and first == "sha256:" + manifest["Config"][:-5]
    assert config["config"]["Entrypoint"] == ["/bin/sh"]
    testpmd = shutil.which("dpdk-testpmd").lstrip("/")
    assert members[testpmd].isreg() and members[testpmd].mode & 0o111
    # Every library testpmd loads is there as a regular file (symlinks resolved).
    for lib in hi.libraries(shutil.which("dpdk-testpmd")):
        assert members[lib.lstrip("/")].isreg(), lib
    # EAL's plugin directory (it loads all it finds there) holds the chosen drivers and the
    # libraries testpmd links from it anyway, nothing else.
    pmd_dir = hi.DPDK_PMD_DIR.lstrip("/") + "/"
    linked = {lib.lstrip("/") for lib in hi.libraries(shutil.which("dpdk-testpmd")) if lib.startswith(hi.DPDK_PMD_DIR)}
    assert {n for n in members if n.startswith(pmd_dir)} == {f"{pmd_dir}{p}.so" for p in hi.DPDK_PMDS} | linked
    assert members["bin/busybox"].isreg() and members["bin/sh"].issym() and members["bin/sh"].linkname == "busybox"
    assert members["tmp"].mode == 0o1777 and members["var/run"].isdir()
    assert all(m.mtime == 0 and m.uid == 0 for m in members.values())


def test_a_missing_program_is_one_line_naming_its_package(tmp_path):
    image = hi.HostImage(hi.OVS_IMAGE, ("/nonexistent/ovs-vswitchd-dpdk",))
    with pytest.raises(hi.ImageError, match=r"^image nfvlab.local/ovs-dpdk:1: /nonexistent/ovs-vswitchd-dpdk is "
                                            r"missing on this host \(Debian package openvswitch-switch-dpdk\)"):
        hi.write_archive(image, tmp_path / "x.tar")
    assert not os.listdir(tmp_path)
