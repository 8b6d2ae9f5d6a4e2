// SPDX-License-Identifier: BSD-3-Clause
/*
 * xdp_redirect.c - the ebpf-xdp model's forwarder (draft 4.1.3).
 *
 * Attached in native (driver) mode to one worker port: every frame is
 * redirected, untouched, through a one-entry devmap to its target device
 * (NIC port -> host veth of the pod, host veth -> NIC port). Devmap rather
 * than bpf_redirect(): the kernel bulks devmap transmits per NAPI poll.
 *
 * A veth drops XDP-redirected frames unless the *receiving* peer of the
 * target has NAPI (an XDP program or GRO); nfvlab turns GRO on there.
 * "xdp.frags": the lab's links have a 9000 B MTU, above what single-buffer
 * XDP on veth allows; this program never reads packet data, so multi-buffer
 * frames are fine.
 *
 * Each attachment loads its own copy of the object (no pinning), so the maps
 * are per port; nfvlab fills `tx_port` after loading (bpftool map update).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "nfvlab_stats.h"

/* tx_port[0]: target device (ifindex in the worker namespace). */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} tx_port SEC(".maps");

SEC("xdp.frags")
int xdp_redirect(struct xdp_md *ctx)
{
	/* Flags XDP_DROP: the verdict when slot 0 holds no device. */
	long verdict = bpf_redirect_map(&tx_port, 0, XDP_DROP);
	count(verdict == XDP_REDIRECT ? STATS_REDIRECTED : STATS_DROPPED);
	return verdict;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
