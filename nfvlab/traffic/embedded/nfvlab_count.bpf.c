// SPDX-License-Identifier: BSD-3-Clause
/*
 * nfvlab_count.bpf.c - counts the test frames arriving at one of nfvlab-gen's
 * rx ports (tcx / clsact ingress, direct action).
 *
 * nfvlab-gen loads one copy per rx port, sizes `bitmap` to one bit per frame
 * the port's streams can send, fills `cfg`, attaches the program before the
 * first frame leaves and reads the maps after traffic has stopped. Per stream
 * and kind (load, probe) it keeps a bitmap of sequence numbers seen (unique
 * frames = bits set), duplicates and reordered frames; per port it counts
 * foreign frames (see nfvlab_count.h). Several CPUs may run the program at
 * once, so every update is atomic.
 *
 * Verdicts: a counted load frame is dropped (it has served its purpose and
 * would only cost the port's IP stack work); probes go on to nfvlab-gen's rx
 * socket and foreign frames go on untouched (TC_ACT_UNSPEC: the next program
 * or filter of the port still sees them).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include "nfvlab_count.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfvl_cfg);
} cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NFVL_SLOTS);
	__type(key, __u32);
	__type(value, struct nfvl_seq_stats);
} seq_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NFVL_PORT_N);
	__type(key, __u32);
	__type(value, __u64);
} port_stats SEC(".maps");

/* One bit per sequence number; nfvlab-gen sets max_entries (64-bit words) and mmaps it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} bitmap SEC(".maps");

struct frame {
	__u8 eth[14];
	__u8 ip[20];
	__u8 udp[8];
	__u8 sig[NFVL_SIG_LEN];
};

static __always_inline int foreign(__u32 key)
{
	__u32 all = NFVL_FOREIGN;
	__u64 *n = bpf_map_lookup_elem(&port_stats, &all);

	if (n)
		__sync_fetch_and_add(n, 1);
	if (key != NFVL_FOREIGN) {
		n = bpf_map_lookup_elem(&port_stats, &key);
		if (n)
			__sync_fetch_and_add(n, 1);
	}
	return TC_ACT_UNSPEC;
}

static __always_inline __u32 be32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

SEC("tc")
int nfvl_count(struct __sk_buff *skb)
{
	struct frame f;
	__u32 zero = 0, ihl, stream, kind, slot, word;
	__u64 seq, bit, mask, old, cur;
	struct nfvl_cfg *c = bpf_map_lookup_elem(&cfg, &zero);
	struct nfvl_seq_stats *st;
	__u64 *w;

	if (!c)
		return TC_ACT_UNSPEC;
	if (skb->protocol != bpf_htons(ETH_P_IP) || bpf_skb_load_bytes(skb, 0, &f, sizeof(f)) < 0)
		return foreign(NFVL_FOREIGN);
	ihl = f.ip[0] & 0xf;
	if ((f.ip[0] >> 4) != 4 || ihl < 5 || f.ip[9] != IPPROTO_UDP || ((f.ip[6] & 0x3f) | f.ip[7]))
		return foreign(NFVL_FOREIGN); /* not IPv4/UDP, or a fragment */
	if (ihl != 5 && bpf_skb_load_bytes(skb, 14 + ihl * 4 + 8, f.sig, sizeof(f.sig)) < 0)
		return foreign(NFVL_FOREIGN); /* IP options: the signature sits further on */
	if (be32(f.sig) != NFVL_MAGIC)
		return foreign(NFVL_FOREIGN);
	if (be32(f.sig + 4) != c->trial_id)
		return foreign(NFVL_STALE);
	stream = f.sig[8];
	kind = f.sig[9];
	if (stream >= NFVL_MAX_STREAMS || kind >= NFVL_KINDS || !(c->expect & (1U << stream)))
		return foreign(NFVL_FOREIGN);
	seq = (__u64)be32(f.sig + 10) << 32 | be32(f.sig + 14);
	if (seq >= c->count[stream][kind])
		return foreign(NFVL_FOREIGN);

	bit = c->first_bit[stream][kind] + seq;
	word = (__u32)(bit >> 6);
	w = bpf_map_lookup_elem(&bitmap, &word);
	slot = stream * NFVL_KINDS + kind;
	st = bpf_map_lookup_elem(&seq_stats, &slot);
	if (!w || !st)
		return foreign(NFVL_FOREIGN);
	mask = 1ULL << (bit & 63);
	old = __sync_fetch_and_or(w, mask);
	if (old & mask) {
		__sync_fetch_and_add(&st->duplicates, 1);
	} else {
		cur = st->next;
		if (seq < cur) {
			__sync_fetch_and_add(&st->reordered, 1);
		} else {
			/* next = max(next, seq + 1), against concurrent writers (bounded loop) */
			for (int i = 0; i < 4 && cur <= seq; i++) {
				__u64 prev = __sync_val_compare_and_swap(&st->next, cur, seq + 1);

				if (prev == cur)
					break;
				cur = prev;
			}
		}
	}
	return kind == NFVL_KIND_LOAD && c->drop_load ? TC_ACT_SHOT : TC_ACT_UNSPEC;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
