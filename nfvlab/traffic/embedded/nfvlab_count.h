/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nfvlab_count.h - the test-frame signature and the receive counters, shared by
 * nfvlab-gen (nfvlab_gen_frames.c stamps frames, nfvlab_gen_count.c reads the
 * counters) and nfvlab_count.bpf.c (which counts frames at the rx port's ingress).
 *
 * Every frame nfvlab-gen sends, load and latency probe alike, is IPv4/UDP and
 * starts its UDP payload with an 18-byte signature (all a 64 B frame has room
 * for: 64 - 4 FCS - 42 headers):
 *
 *   0  magic     "NFVL"
 *   4  trial id  u32, big-endian: random per run unless --trial-id is given
 *   8  stream    u8, index of the --stream option
 *   9  kind      u8, NFVL_KIND_LOAD or NFVL_KIND_PROBE
 *  10  seq       u64, big-endian: per stream and kind, 0, 1, 2, ... in sending order
 *
 * A frame is a test frame of this trial when the magic and the trial id match,
 * its stream is one received on that port, and seq is below what the stream
 * sends of that kind; anything else arriving at the port is foreign.
 */
#ifndef NFVLAB_COUNT_H
#define NFVLAB_COUNT_H

#include <linux/types.h>

#define NFVL_MAGIC 0x4e46564cU /* "NFVL" as a big-endian u32 */
#define NFVL_SIG_LEN 18
#define NFVL_MAX_STREAMS 2
#define NFVL_KIND_LOAD 0
#define NFVL_KIND_PROBE 1
#define NFVL_KINDS 2
#define NFVL_SLOTS (NFVL_MAX_STREAMS * NFVL_KINDS) /* seq_stats key = stream * NFVL_KINDS + kind */

/* Value of the `cfg` map (one entry), written by nfvlab-gen before it attaches the program. */
struct nfvl_cfg {
	__u32 trial_id;
	__u32 expect;    /* bit i set: stream i is received on this port */
	__u32 drop_load; /* 1: counted load frames are dropped after counting (no use to the port's stack) */
	__u32 pad;
	__u64 count[NFVL_MAX_STREAMS][NFVL_KINDS];     /* valid sequence numbers are 0 .. count-1 */
	__u64 first_bit[NFVL_MAX_STREAMS][NFVL_KINDS]; /* bit of seq 0 in `bitmap` (a multiple of 64) */
};

/* Value of the `seq_stats` map, per stream and kind. The number of unique
 * frames received is the number of bits set in that stream's bitmap range. */
struct nfvl_seq_stats {
	__u64 duplicates; /* frames whose sequence number had been seen before */
	__u64 reordered;  /* first sightings of a sequence number below the highest seen */
	__u64 next;       /* highest sequence number seen + 1 (0: none yet) */
};

/* Keys of the `port_stats` map (u64 values). */
enum {
	NFVL_FOREIGN = 0, /* frames without this trial's signature for a stream of this port */
	NFVL_STALE = 1,   /* of those, nfvlab frames of another trial (magic ok, trial id not) */
	NFVL_PORT_N
};

#endif
