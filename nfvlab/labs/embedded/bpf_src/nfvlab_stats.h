/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nfvlab_stats.h - the frame counters every nfvlab BPF program keeps.
 *
 * stats[STATS_REDIRECTED]: frames handed to the target device;
 * stats[STATS_DROPPED]: frames dropped (no target configured, redirect refused).
 * nfvlab reads them (bpftool map dump) to prove frames took the BPF path.
 */
#ifndef NFVLAB_STATS_H
#define NFVLAB_STATS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

enum { STATS_REDIRECTED = 0, STATS_DROPPED = 1, STATS_N };

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, STATS_N);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void count(__u32 slot)
{
	__u64 *n = bpf_map_lookup_elem(&stats, &slot);

	if (n) /* atomic: several CPUs may run the program at once */
		__sync_fetch_and_add(n, 1);
}

#endif
