// SPDX-License-Identifier: BSD-3-Clause
/*
 * tc_redirect.c - the ebpf-tc model's forwarder (draft 4.1.3, Cilium-like).
 *
 * Attached at clsact ingress (direct-action) of one worker port. Every frame
 * is redirected, untouched, to one target device - a fixed L2 patch, no
 * lookup, no bridge and no routing table in the worker:
 *   NIC port ingress  -> bpf_redirect_peer(host veth): straight into the
 *                        pod's namespace (Cilium's fast path, no backlog);
 *   host veth ingress -> bpf_redirect(NIC port): out of the NIC port.
 *
 * Each attachment loads its own copy of the object (tc does not share maps
 * unless they are pinned, and this lab pins nothing), so the maps below are
 * per port. nfvlab fills `cfg` after loading (bpftool map update).
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include "nfvlab_stats.h"

enum { CFG_IFINDEX = 0, CFG_PEER = 1, CFG_N };

/* cfg[CFG_IFINDEX]: target ifindex (in the worker namespace; 0: drop all);
 * cfg[CFG_PEER]: 1 to use bpf_redirect_peer, 0 for bpf_redirect (egress). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CFG_N);
	__type(key, __u32);
	__type(value, __u32);
} cfg SEC(".maps");

static __always_inline __u32 cfg_get(__u32 key)
{
	__u32 *v = bpf_map_lookup_elem(&cfg, &key);

	return v ? *v : 0;
}

SEC("tc")
int tc_redirect(struct __sk_buff *skb)
{
	__u32 ifindex = cfg_get(CFG_IFINDEX);
	long verdict;

	if (!ifindex) { /* not configured yet: keep frames out of the worker's stack */
		count(STATS_DROPPED);
		return TC_ACT_SHOT;
	}
	verdict = cfg_get(CFG_PEER) ? bpf_redirect_peer(ifindex, 0) : bpf_redirect(ifindex, 0);
	count(verdict == TC_ACT_REDIRECT ? STATS_REDIRECTED : STATS_DROPPED);
	return verdict == TC_ACT_REDIRECT ? TC_ACT_REDIRECT : TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
