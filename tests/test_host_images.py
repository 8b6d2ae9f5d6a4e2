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
    # Every library testpmd loads is there, at its host path, as on the host: a symlink to the same
    # name, or the regular file. A regular file is always at its real host path: a symlink copied
    # as a file would make EAL load one driver (or bus) twice, and probing a port then fails.
    for lib in hi.libraries(shutil.which("dpdk-testpmd")):
        top = "/" + lib.split("/")[1]  # merged /usr: /lib is a link to usr/lib, in the image too
        if os.path.islink(top):
            assert members[top[1:]].issym() and members[top[1:]].linkname == os.readlink(top)
            lib = os.path.realpath(top) + lib[len(top):]
        m = members[lib.lstrip("/")]
        assert (m.issym() and m.linkname == os.readlink(lib)) if os.path.islink(lib) else m.isreg(), lib
    for name, m in members.items():
        if m.isreg() and name != "bin/busybox":
            assert os.path.realpath("/" + name) == "/" + name, name
    # EAL's plugin directory (it loads all it finds there) holds the chosen drivers and the
    # libraries testpmd links from it anyway, with their link chains, nothing else.
    pmd_dir = hi.DPDK_PMD_DIR.lstrip("/") + "/"
    wanted = {f"{hi.DPDK_PMD_DIR}/{p}.so" for p in hi.DPDK_PMDS}
    wanted |= {os.path.join(os.path.realpath(os.path.dirname(lib)), os.path.basename(lib))
               for lib in hi.libraries(shutil.which("dpdk-testpmd"))
               if os.path.realpath(os.path.dirname(lib)) == hi.DPDK_PMD_DIR}
    chains = set()
    for path in wanted:
        chains.add(path.lstrip("/"))
        while os.path.islink(path):
            path = os.path.join(os.path.dirname(path), os.readlink(path))
            chains.add(os.path.normpath(path).lstrip("/"))
    assert {n for n in members if n.startswith(pmd_dir)} == chains
    assert members["bin/busybox"].isreg() and members["bin/sh"].issym() and members["bin/sh"].linkname == "busybox"
    assert members["tmp"].mode == 0o1777 and members["var/run"].isdir()
    assert all(m.mtime == 0 and m.uid == 0 for m in members.values())


def test_a_missing_program_is_one_line_naming_its_package(tmp_path):
    image = hi.HostImage(hi.OVS_IMAGE, ("/nonexistent/ovs-vswitchd-dpdk",))
    with pytest.raises(hi.ImageError, match=r"^image nfvlab.local/ovs-dpdk:1: /nonexistent/ovs-vswitchd-dpdk is "
                                            r"missing on this host \(Debian package openvswitch-switch-dpdk\)"):
        hi.write_archive(image, tmp_path / "x.tar")
    assert not os.listdir(tmp_path)
