/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nfvlab_tx.h - the layout shared by nfvlab_gen_xdp.c and nfvlab_tx.bpf.c, the
 * XDP transmit path (--tx xdp).
 *
 * nfvlab-gen runs nfvlab_tx.bpf.c with BPF_PROG_TEST_RUN in live-frames mode
 * (BPF_F_TEST_XDP_LIVE_FRAMES, Linux >= 5.18): the kernel runs the program in a
 * loop on recycled page-pool frames, and each run either redirects one frame
 * to a stream's tx port (XDP_REDIRECT -> the port's ndo_xdp_xmit) or, when no
 * frame is due, drops the empty frame (a "tick"). Pacing is the program's:
 * frame n of a stream is due n * gap after t0 (+ slip), on bpf_ktime_get_ns(),
 * the CLOCK_MONOTONIC that nfvlab-gen's probes use. No sk_buff is built on the
 * sending side, which is what makes this path cheaper than AF_PACKET.
 */
#ifndef NFVLAB_TX_H
#define NFVLAB_TX_H

#include <linux/types.h>
#include "nfvlab_count.h"

#define NFVL_TX_MAX_SIZES 16
#define NFVL_TX_HDR_LEN 42   /* Ethernet 14 + IPv4 20 + UDP 8 */
#define NFVL_TX_SIG_PREFIX 10 /* magic, trial id, stream, kind: the signature without its sequence */
#define NFVL_TX_MAX_FRAME 1514 /* without FCS: one frame per page, no fragments */
#define NFVL_TX_STALL_NS 1000000ULL /* a gap between two runs of the loop this long is a stall */
#define NFVL_TX_LATE_NS 20000ULL /* ... this long: the loop was off its CPU (its own lateness, see due()) */
/* ... except a gap between two batches up to this long: the kernel's softirq work (see nfvl_tx_state).
 * It runs them for at most MAX_SOFTIRQ_TIME, 2 ms rounded up to a jiffy (4 ms at HZ 250), then defers. */
#define NFVL_TX_SOFTIRQ_NS 5000000ULL

struct nfvl_tx_hdr {
	__u8 h[48];          /* NFVL_TX_HDR_LEN used */
};

struct nfvl_tx_stream_cfg {
	__u64 intended;      /* load frames to send */
	__u64 gap_fp;        /* ns between frames, << 16 */
	__u64 burst;         /* most frames due at once while on schedule (the AF_PACKET path's burst) */
	__u64 burst_ns;      /* (burst - 1) * gap: the most lag after which `burst` frames go in a row */
	__u64 slip_budget_ns; /* how far the schedule may slip after stalls */
	__u64 duration_ns;
	__u32 ifindex;       /* the tx port (in nfvlab-gen's network namespace at load time) */
	__u32 flows;
	__u32 hdr_base;      /* index of this stream's first header in tx_hdrs: [size][flow] */
	__u8 sig[NFVL_TX_SIG_PREFIX];
	__u8 pad[2];
};

/* Value of the tx_cfg map (one entry), written before the loop starts. */
struct nfvl_tx_cfg {
	__u32 nstreams;
	__u32 period;        /* entries of tx_mix: the size index of each position of the mix */
	__u32 nsizes;
	__u32 batch;         /* runs of the loop between two bottom-half enables (the test run's batch_size) */
	__u16 frame_len[NFVL_TX_MAX_SIZES]; /* bytes on the wire without FCS, per size index */
	struct nfvl_tx_stream_cfg s[NFVL_MAX_STREAMS];
};

struct nfvl_tx_stream_state {
	__u64 sent;          /* load frames redirected to the port: sequence numbers 0 .. sent-1 */
	__u64 next_fp;       /* due time of frame `sent`, ns after t0 (before slip), << 16 */
	__u64 slip_ns;
	__u64 max_lag_ns;    /* largest lag behind schedule seen */
	__u64 last_send_ns;  /* ns after t0 of the last frame */
	__u64 done;          /* 1: sent everything, or stopped short at the deadline or the window's end */
	__u64 slip_own_ns;   /* the part of slip_ns the loop's own time off its CPU caused */
	__u64 run;           /* frames sent in runs in a row (no run without a frame between) */
	__u64 max_batch;     /* the longest such run of sends */
};

/* Value of the mmapped tx_state map (one entry): written by the program, read by nfvlab-gen. */
struct nfvl_tx_state {
	__u64 t0_ns;         /* set by nfvlab-gen once the loop runs: CLOCK_MONOTONIC start of the schedules */
	__u64 stop;          /* set by nfvlab-gen: send nothing more */
	__u64 ticks;         /* runs that sent nothing (before t0, or no frame due) */
	__u64 rr;            /* round-robin start among the streams */
	/* Stalls (nfvlab_gen_pacing.c, Stalls): gaps between runs of the loop longer than NFVL_TX_STALL_NS
	 * within the trial's window, i.e. time the loop's thread was not running. Not a stall: a gap
	 * between two batches of up to NFVL_TX_SOFTIRQ_NS. The kernel runs the loop in batches with
	 * bottom halves off and, between two, runs the softirqs that became pending: on veth that is
	 * the DUT's receive and queueing work, which veth puts on the sender's CPU (as the socket path's
	 * sends run it inside their system call, which is not a stall either). The frames it kept
	 * from leaving on time are the DUT's doing: loss, never a fault. */
	__u64 last_run_ns;   /* CLOCK_MONOTONIC of the last run */
	__u64 stall_total_ns;
	__u64 stall_max_ns;
	__u64 stalls;
	__u64 call_runs;     /* runs in this test-run call (nfvlab-gen zeroes it before each call) */
	__u64 softirq_gap_ns; /* gaps between batches not counted as stalls (softirq work), in the window */
	__u64 softirq_gaps;
	struct nfvl_tx_stream_state s[NFVL_MAX_STREAMS];
};

#endif
