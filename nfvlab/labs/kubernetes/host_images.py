"""Container images for the local cluster, made from this host's files (no registry).

A local cluster's node is this host, so its pods run the host's own binaries: each image is
one layer holding the programs, every shared library they load (``ldd``) and the data files
they read, written as a docker-archive that containerd imports (``ctr images import``).
Reproducible: sorted entries, mtime 0, owner root, so the same host files give the same image id.

- :data:`STRESS_IMAGE`: the noisy neighbour (``stress-ng``).
- :data:`DPDK_IMAGE`: the draft's DPDK pod (Figure 9's l2fwd): ``dpdk-testpmd``, the DPDK
  drivers a pod port uses (virtio_user, memif, af_xdp, af_packet; EAL loads them from the
  plugin directory), libxdp's BPF objects (af_xdp), and a static busybox for the start script.
- :data:`OVS_IMAGE`: the local node's OVS-DPDK vSwitch (ovsdb-server, ovs-vswitchd-dpdk,
  ovs-vsctl/ofctl/appctl, the schema, the DPDK drivers of its ports) and busybox.
"""
from __future__ import annotations

import glob
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

STRESS_IMAGE = "nfvlab.local/stress-ng:1"
DPDK_IMAGE = "nfvlab.local/dpdk:1"
OVS_IMAGE = "nfvlab.local/ovs-dpdk:1"
BUSYBOX = "/bin/busybox"
#: EAL's plugin directory (Debian's DPDK 22.11 loads every driver found there at start-up).
DPDK_PMD_DIR = "/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0"
#: The DPDK drivers a pod port needs (bus, mempool and the four port kinds), nothing more: EAL
#: would load every driver in the directory, with their libraries (ibverbs...).
DPDK_PMDS = ("librte_bus_vdev", "librte_mempool_ring", "librte_net_virtio", "librte_net_memif",
             "librte_net_af_xdp", "librte_net_af_packet")
#: libxdp's BPF objects: its default AF_XDP program and the dispatcher it attaches it with (the
#: af_xdp PMD and OVS's afxdp ports load them through libxdp).
LIBXDP_OBJECTS = "/usr/lib/x86_64-linux-gnu/bpf/xsk_def_xdp_prog*.o"
LIBXDP_DISPATCHER = "/usr/lib/x86_64-linux-gnu/bpf/xdp-dispatcher.o"
OVS_PROGRAMS = ("/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk", "/usr/sbin/ovsdb-server",
                "/usr/bin/ovsdb-tool", "/usr/bin/ovs-vsctl", "/usr/bin/ovs-ofctl", "/usr/bin/ovs-appctl")
OVS_SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
#: glibc loads it at run time (pthread_cancel, unwinding), so ldd does not list it; without it a
#: DPDK process aborts when it cancels a thread.
LIBGCC_S = "/lib/x86_64-linux-gnu/libgcc_s.so.1"


class ImageError(RuntimeError):
    """A host file an image needs is missing (one line naming it and its Debian package)."""


@dataclass(frozen=True)
class HostImage:
    """An image made from host files: its name, the programs (with their libraries), data files,
    whether a static busybox provides ``/bin/sh``, and the docker config (Entrypoint/Cmd/Env)."""

    name: str
    programs: tuple[str, ...]
    files: tuple[str, ...] = ()
    busybox: bool = False
    config: Optional[dict] = None


def libraries(path: str) -> list[str]:
    """Shared libraries ``path`` loads (``ldd``), absolute paths."""
    out = subprocess.run(["ldd", path], capture_output=True, text=True)
    return re.findall(r"(/\S+) \(0x", out.stdout)


def _closure(paths: list[str]) -> list[str]:
    """``paths`` and every library they (and their libraries) load."""
    seen: set[str] = set()
    todo = list(paths)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        if not p.endswith(".o"):
            todo.extend(libraries(p))
    return sorted(seen)


def _libxdp_objects() -> tuple[str, ...]:
    return (*sorted(glob.glob(LIBXDP_OBJECTS)), LIBXDP_DISPATCHER)


def dpdk_image() -> HostImage:
    """The DPDK pod's image (:data:`DPDK_IMAGE`)."""
    testpmd = shutil.which("dpdk-testpmd") or "/usr/bin/dpdk-testpmd"
    pmds = [f"{DPDK_PMD_DIR}/{name}.so" for name in DPDK_PMDS]
    return HostImage(DPDK_IMAGE, (testpmd, *pmds, LIBGCC_S), _libxdp_objects(), busybox=True,
                     config={"Entrypoint": ["/bin/sh"], "Env": ["PATH=/usr/bin:/bin"], "WorkingDir": "/"})


#: The DPDK drivers the vSwitch's ports use (vhost-user is OVS's own, linked): NIC ports on
#: packet sockets or pcap, memif ports.
OVS_PMDS = ("librte_bus_vdev", "librte_mempool_ring", "librte_net_af_packet", "librte_net_pcap", "librte_net_memif")


def ovs_image() -> HostImage:
    """The local node's vSwitch image (:data:`OVS_IMAGE`)."""
    pmds = tuple(f"{DPDK_PMD_DIR}/{name}.so" for name in OVS_PMDS)
    # libxdp's default XDP program: OVS's afxdp ports load it (ovs-afxdp)
    return HostImage(OVS_IMAGE, (*OVS_PROGRAMS, *pmds, LIBGCC_S), (OVS_SCHEMA, *_libxdp_objects()), busybox=True,
                     config={"Entrypoint": ["/bin/sh"], "Env": ["PATH=/usr/sbin:/usr/bin:/bin"],
                             "WorkingDir": "/"})


def stress_image() -> HostImage:
    binary = shutil.which("stress-ng") or "/usr/bin/stress-ng"
    return HostImage(STRESS_IMAGE, (binary,),
                     config={"Entrypoint": [binary], "Env": ["PATH=/usr/bin:/bin"], "WorkingDir": "/"})


#: Debian package of each image's main program (for the error naming what to install).
PACKAGES = {DPDK_IMAGE: "dpdk", OVS_IMAGE: "openvswitch-switch-dpdk", STRESS_IMAGE: "stress-ng"}


def _add(t: tarfile.TarFile, path: str, arcname: Optional[str] = None, data: Optional[bytes] = None,
         link: Optional[str] = None) -> None:
    if link is not None:
        info = tarfile.TarInfo(arcname or path.lstrip("/"))
        info.type, info.linkname, info.mode = tarfile.SYMTYPE, link, 0o777
    elif data is not None:
        info = tarfile.TarInfo(arcname or path.lstrip("/"))
        info.size, info.mode = len(data), 0o644
    else:
        info = t.gettarinfo(os.path.realpath(path), arcname=arcname or path.lstrip("/"))
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    if info.isreg() and data is None:
        with open(os.path.realpath(path), "rb") as f:
            t.addfile(info, f)
    else:
        t.addfile(info, io.BytesIO(data) if data is not None else None)


def _links(paths: list[str]) -> tuple[dict[str, str], list[str]]:
    """The symlinks among ``paths`` and their chains (path -> link text), and the regular files
    they end at. Links stay links: DPDK's plugin directory holds ``x.so -> x.so.23 -> x.so.23.0``,
    and EAL loads every file there; copies would load one driver (or bus) twice, as distinct
    objects, and a device would be probed on a bus its driver is not registered with."""
    links: dict[str, str] = {}
    files = []

    def real_dir(p: str) -> str:
        # Merged /usr: /lib -> usr/lib, /lib64 -> usr/lib64 stay links too (ldd names libraries
        # under /lib, EAL its plugins under /usr/lib: one file either way, as on the host). /bin
        # is left alone: the image's /bin is busybox's.
        parts = Path(p).parts
        for i in range(2, len(parts)):
            d = str(Path(*parts[:i]))
            if os.path.islink(d) and d not in ("/bin", "/sbin"):
                links[d] = os.readlink(d)
                return real_dir(os.path.join(os.path.realpath(d), *parts[i:]))
        return p

    for p in paths:
        p = real_dir(p)
        while os.path.islink(p) and p not in links:
            links[p] = os.readlink(p)
            p = real_dir(os.path.normpath(os.path.join(os.path.dirname(p), links[p])))
        if not os.path.islink(p):
            files.append(p)
    return links, sorted(set(files) - set(links))


def layer(image: HostImage) -> bytes:
    """The image's one layer: programs, libraries and files at their host paths (symlinks as
    symlinks, see :func:`_links`), busybox applets as links, /tmp and /etc/passwd."""
    missing = [p for p in (*image.programs, *image.files, *([BUSYBOX] if image.busybox else []))
               if not os.path.exists(p)]
    if missing:
        raise ImageError(f"image {image.name}: {missing[0]} is missing on this host "
                         f"(Debian package {PACKAGES.get(image.name, 'busybox-static')}): run `./run setup`")
    links, paths = _links(sorted(set(_closure(list(image.programs))) | set(image.files)))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        dirs = sorted({str(Path(p).parent) for p in (*paths, *links)}
                      | {"/tmp", "/etc", "/bin", "/run", "/var/run", "/dev"})
        for d in dirs:
            parts = Path(d).parts[1:]
            for i in range(1, len(parts) + 1):
                sub = "/".join(parts[:i])
                if sub not in t.getnames():
                    info = tarfile.TarInfo(sub)
                    info.type, info.mode = tarfile.DIRTYPE, 0o1777 if sub == "tmp" else 0o755
                    t.addfile(info)
        for p in paths:
            if not p.startswith("/bin/") or not image.busybox:
                _add(t, p)
        for p, target in sorted(links.items()):
            _add(t, p, link=target)
        if image.busybox:
            _add(t, BUSYBOX, "bin/busybox")
            applets = subprocess.run([BUSYBOX, "--list"], capture_output=True, text=True).stdout.split()
            for a in sorted(set(applets) - {"busybox"}):
                if f"/bin/{a}" not in paths:
                    _add(t, f"/bin/{a}", f"bin/{a}", link="busybox")
        _add(t, "/etc/passwd", "etc/passwd", data=b"root:x:0:0:root:/root:/bin/sh\n")
        _add(t, "/etc/group", "etc/group", data=b"root:x:0:\n")
    return buf.getvalue()


def write_archive(image: HostImage, out: Path) -> str:
    """Write ``image`` as a docker-archive to ``out``; returns its image id (``sha256:...``)."""
    blob = layer(image)
    diff_id = hashlib.sha256(blob).hexdigest()
    config = json.dumps({"architecture": "amd64", "os": "linux", "created": "1970-01-01T00:00:00Z",
                         "config": image.config or {}, "rootfs": {"type": "layers", "diff_ids": ["sha256:" + diff_id]}},
                        sort_keys=True, separators=(",", ":")).encode()
    cid = hashlib.sha256(config).hexdigest()
    repo, tag = image.name.rsplit(":", 1)
    files = {f"{diff_id}/layer.tar": blob, f"{cid}.json": config,
             "manifest.json": json.dumps([{"Config": f"{cid}.json", "RepoTags": [image.name],
                                           "Layers": [f"{diff_id}/layer.tar"]}]).encode(),
             "repositories": json.dumps({repo: {tag: diff_id}}).encode()}
    tmp = out.with_name(out.name + ".tmp")
    with tarfile.open(tmp, "w") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    tmp.replace(out)
    return "sha256:" + cid
