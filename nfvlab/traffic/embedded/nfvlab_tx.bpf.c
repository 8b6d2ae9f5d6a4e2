// SPDX-License-Identifier: BSD-3-Clause
/*
 * nfvlab_tx.bpf.c - the XDP transmit path of nfvlab-gen (--tx xdp); see
 * nfvlab_tx.h for how it is run.
 *
 * Each run picks the first stream (round-robin) whose next frame is due,
 * writes that frame's header (precomputed per size and flow in tx_hdrs) and
 * signature (nfvlab_count.h) into the page, sets its length and redirects it
 * to the stream's tx port. Pacing follows the AF_PACKET path (nfvlab_gen_pacing.c,
 * Pacing): a stream that fell behind never catches up in a burst; its schedule
 * slips so that at most `burst` frames go out in a row, the slip the loop's own
 * time off its CPU caused is counted (slip_own_ns: gaps of at least
 * NFVL_TX_LATE_NS, not softirq work), and what it has not sent at the window's
 * end (the duration plus the slip budget) is unsent; at the deadline a stream
 * sends its remainder only if that fits one burst, and what it leaves is a shortfall.
 * Only the one thread that runs the loop writes the state, so no atomics.
 */
#include <linux/bpf.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include "nfvlab_tx.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfvl_tx_cfg);
} tx_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfvl_tx_state);
} tx_state SEC(".maps");

/* nfvlab-gen sets max_entries: streams x sizes x flows headers, and the mix's period. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfvl_tx_hdr);
} tx_hdrs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} tx_mix SEC(".maps");

/* Is stream i's next frame due at `el` ns after t0? Slips its schedule when it is behind (see the
 * file's comment); `own_ns`: how long before this run the loop was off its CPU (0: not so). */
static __always_inline int due(const struct nfvl_tx_stream_cfg *c, struct nfvl_tx_stream_state *s, __u64 el,
			       __u64 own_ns)
{
	if (s->done)
		return 0;
	if (s->sent >= c->intended) {
		s->done = 1;
		return 0;
	}
	__u64 at = (s->next_fp >> 16) + s->slip_ns;
	if (el < at)
		return 0;
	__u64 lag = el - at;
	if (el - s->slip_ns >= c->duration_ns) {
		/* The deadline: the tail that fell due in the last moments goes, a backlog does not. */
		if (c->intended - s->sent > c->burst) {
			s->done = 1;
			return 0;
		}
		return 1;
	}
	if (el >= c->duration_ns + c->slip_budget_ns) {
		s->done = 1;  /* the window's end, behind beyond the budget: the rest is unsent */
		return 0;
	}
	if (lag > s->max_lag_ns)
		s->max_lag_ns = lag;
	if (lag > c->burst_ns) {
		__u64 want = lag - c->burst_ns, own = own_ns < lag ? own_ns : lag;
		s->slip_ns += want;
		s->slip_own_ns += own < want ? own : want;
	}
	return 1;
}

SEC("xdp")
int nfvl_tx(struct xdp_md *ctx)
{
	__u32 zero = 0;
	const struct nfvl_tx_cfg *cfg = bpf_map_lookup_elem(&tx_cfg, &zero);
	struct nfvl_tx_state *st = bpf_map_lookup_elem(&tx_state, &zero);
	if (!cfg || !st)
		return XDP_DROP;
	__u64 now = bpf_ktime_get_ns(), t0 = st->t0_ns, last = st->last_run_ns;
	__u64 run = st->call_runs++;
	/* The first run of a batch (not of the call): bottom halves were on since the last run. */
	int batch_start = run > 0 && cfg->batch && run % cfg->batch == 0;
	st->last_run_ns = now;
	/* The loop off its CPU for a while: the generator's own lateness, unless softirq work. */
	__u64 own = last && now >= last + NFVL_TX_LATE_NS && !(batch_start && now - last <= NFVL_TX_SOFTIRQ_NS)
		? now - last : 0;
	/* A stall: the loop did not run for a while inside the trial's window (stream 0's deadline
	 * plus the slip budget; every stream has the same duration and budget), unless it was the
	 * kernel's softirq work between two batches (nfvlab_tx.h). The part inside the window counts,
	 * also of a stall that ends after it (whose frames the deadline then drops): so it is counted
	 * before the stop flag, which may have been set meanwhile. */
	if (t0 && last && now > last + NFVL_TX_STALL_NS) {
		__u64 end = t0 + cfg->s[0].duration_ns + cfg->s[0].slip_budget_ns;
		__u64 from = last > t0 ? last : t0, to = now < end ? now : end;
		if (to > from + NFVL_TX_STALL_NS && batch_start && now - last <= NFVL_TX_SOFTIRQ_NS) {
			st->softirq_gap_ns += to - from;
			st->softirq_gaps++;
		} else if (to > from + NFVL_TX_STALL_NS) {
			__u64 gap = to - from;
			st->stall_total_ns += gap;
			if (gap > st->stall_max_ns)
				st->stall_max_ns = gap;
			st->stalls++;
		}
	}
	if (st->stop)
		return XDP_DROP;
	if (!t0 || now < t0) {
		st->ticks++;  /* nfvlab-gen sees the loop run, then sets t0 */
		return XDP_DROP;
	}
	__u64 el = now - t0;
	__u32 first = st->rr & 1, pick = NFVL_MAX_STREAMS;
	for (__u32 j = 0; j < NFVL_MAX_STREAMS; j++) {
		__u32 i = j ^ first;
		if (i < cfg->nstreams && due(&cfg->s[i], &st->s[i], el, own)) {
			pick = i;
			break;
		}
	}
	if (pick >= NFVL_MAX_STREAMS) {
		st->ticks++;
		for (__u32 j = 0; j < NFVL_MAX_STREAMS; j++)
			st->s[j].run = 0;  /* a run that sent nothing ends every stream's run of sends */
		return XDP_DROP;
	}
	const struct nfvl_tx_stream_cfg *c = &cfg->s[pick];
	struct nfvl_tx_stream_state *s = &st->s[pick];
	__u64 k = s->sent;
	__u32 pos = cfg->period ? (__u32)(k % cfg->period) : 0;
	__u32 *z = bpf_map_lookup_elem(&tx_mix, &pos);
	if (!z || *z >= NFVL_TX_MAX_SIZES || !c->flows)
		return XDP_ABORTED;
	__u32 zi = *z & (NFVL_TX_MAX_SIZES - 1); /* a bound the verifier sees (the map could change) */
	__u32 hk = c->hdr_base + zi * c->flows + (__u32)(k % c->flows);
	const struct nfvl_tx_hdr *h = bpf_map_lookup_elem(&tx_hdrs, &hk);
	if (!h)
		return XDP_ABORTED;
	int len = (int)(ctx->data_end - ctx->data), want = cfg->frame_len[zi];
	if (len != want && bpf_xdp_adjust_tail(ctx, want - len))
		return XDP_ABORTED;
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	if (data + NFVL_TX_HDR_LEN + NFVL_SIG_LEN > end)
		return XDP_ABORTED;
	__builtin_memcpy(data, h->h, NFVL_TX_HDR_LEN);
	__builtin_memcpy(data + NFVL_TX_HDR_LEN, c->sig, NFVL_TX_SIG_PREFIX);
	__u64 seq = bpf_cpu_to_be64(k);
	__builtin_memcpy(data + NFVL_TX_HDR_LEN + NFVL_TX_SIG_PREFIX, &seq, 8);
	s->sent = k + 1;
	s->next_fp += c->gap_fp;
	if (++s->run > s->max_batch)
		s->max_batch = s->run;
	s->last_send_ns = el;
	st->rr = pick + 1;
	return bpf_redirect(c->ifindex, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
