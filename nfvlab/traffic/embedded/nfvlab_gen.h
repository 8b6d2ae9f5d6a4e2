/*
 * nfvlab_gen.h - what the sources of nfvlab-gen share: limits, the frame
 * layout, the run's configuration and state (struct config, one per run), the
 * process-wide flags, small time and byte-order helpers, and each source's
 * entry points. nfvlab_gen.c describes the generator and lists its sources.
 */
#ifndef NFVLAB_GEN_H
#define NFVLAB_GEN_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <net/if.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "nfvlab_count.h"
#include "nfvlab_tx.h"

#define MAX_STREAMS NFVL_MAX_STREAMS
#define MAX_SIZES 16
#define MAX_PERIOD 10000
#define MAX_BATCH 64    /* most frames per sendmmsg: a burst is at most this (stream_burst) */
#define MIN_FRAME 64
#define MAX_FRAME 9018
#define FCS_LEN 4
#define HDR_LEN 42 /* Ethernet 14 + IPv4 20 + UDP 8 */
#define SIG_END (HDR_LEN + NFVL_SIG_LEN) /* 60: a 64 B frame without FCS is all header and signature */
#define LOAD_PORT 1024
#define PROBE_PORT 7878
#define PROBE_MAGIC "NFVL"
#define SPIN_NS 50000LL      /* SCHED_OTHER: sleep only when the next packet is further away */
#define SPIN_FIFO_NS 2000LL  /* SCHED_FIFO: a sleep wakes within a few microseconds */
#define MAX_SLIP 0.01        /* fraction of the duration a schedule may slip after stalls */
#define STALL_NS 1000000LL   /* the TX loop off schedule this long, outside a send, is a stall */
#define NS_PER_S 1000000000LL
#define MAX_SLEEP_NS 10000000LL /* bound sleeps so a signal is noticed quickly */
#define NO_SAMPLE INT64_MIN     /* a clock step can make real samples negative */

struct port {
    char spec[128];          /* as given, "NS:IFACE", echoed in the JSON */
    char ns[100];            /* "." = the namespace we run in */
    char ifname[IFNAMSIZ];
};

struct stream {
    struct port tx, rx;
    double rate;
    uint8_t smac[6], dmac[6];
    struct in_addr sip, dip;
    /* runtime */
    int txfd, rxfd;
    uint8_t *hdrs;           /* [size index][flow] precomputed headers */
    uint8_t sig[NFVL_SIG_LEN]; /* load signature; the sequence number is filled per frame */
    uint8_t probe[MAX_FRAME];
    size_t probe_len;
    long long intended, attempted, sent, send_errors;
    long long probes_intended, probes_attempted, probes_sent;
    int64_t last_send_ns;
    int burst;               /* most load frames sent in one pass while on schedule */
    int64_t slip_ns;         /* how far this stream's schedule slipped after falling behind */
    int64_t slip_own_ns;     /* ... of which the loop was off its CPU: the generator's own (Pacing) */
    int max_batch;           /* most load frames sent at once (one send call; XDP: one run of sends) */
    long long max_backlog;   /* largest lag behind schedule seen, frames */
    bool finished;
    int64_t *probe_tx_ns;    /* send time (CLOCK_REALTIME) per probe sequence, 0 = not sent */
    int64_t *samples;        /* latency per probe sequence, NO_SAMPLE = not seen */
    long long nsamples;
    pthread_t rx_thread;
    int counter;             /* index of the rx port's counter, -1 = not counted */
};

/* The counting BPF program on one rx port (shared by the streams received there). */
struct counter {
    const struct port *port;
    struct nfvl_cfg cfg;
    int prog_fd, seq_fd, port_fd;
    uint64_t *bits;          /* the mmapped bitmap */
    size_t bits_len;
    int link_fd;             /* tcx link (detached when closed, also by exit), -1 = none */
    bool tc_attached, tc_hook_created;
    int ifindex;
    /* read after traffic */
    struct nfvl_seq_stats seq[NFVL_SLOTS];
    unsigned long long received[NFVL_SLOTS], port_stats[NFVL_PORT_N];
};

struct config {
    double duration;
    int sizes[MAX_SIZES], weights[MAX_SIZES], nsizes;
    uint8_t seq[MAX_PERIOD]; /* size index of each position in the mix */
    int period;
    int flows;
    double latency_pps;
    int settle_ms;
    int cpu;                 /* -1 = no pinning */
    int sndbuf;              /* 0 = kernel default */
    const char *sched;       /* "auto", "fifo" or "other": the TX thread's scheduling policy */
    const char *sched_used;  /* "fifo" or "other" */
    bool qdisc_bypass;       /* PACKET_QDISC_BYPASS on the tx sockets */
    int nstreams;
    struct stream streams[MAX_STREAMS];
    uint32_t trial_id;
    bool have_trial_id;
    const char *count_obj;   /* BPF object of the counter, NULL = no counting */
    const char *count_hook;  /* "auto", "tcx" or "tc" */
    bool pass_load;          /* counted load frames go on to the port's stack */
    int ncounters;
    struct counter counters[MAX_STREAMS];
    const char *hook_used;   /* "tcx", "tc" or "none" */
    const char *tx;          /* "socket" (AF_PACKET) or "xdp" (nfvlab_tx.bpf.c, see nfvlab_gen_xdp.c) */
    const char *tx_obj;      /* BPF object of the XDP transmit path */
    bool serving;            /* one of many trials of a --serve process: its counters stay attached */
    double inject_stall_ms;  /* test hook: the TX loop stops this long ... */
    double inject_stall_at_s; /* ... this far into the trial (a stall of known size) */
    /* runtime: the TX loop's stalls (see Stalls in nfvlab_gen_pacing.c) */
    int64_t stall_total_ns, stall_max_ns;
    long long stalls;
    int64_t softirq_gap_ns;  /* XDP path: gaps between batches taken as softirq work, not stalls ... */
    long long softirq_gaps;  /* ... and how many (nfvlab_tx.h) */
};

struct rx_arg {
    struct stream *s;
    int idx;
    uint32_t trial_id;
};

/* nfvlab_gen.c: the run's flags and the namespace it started in. */
extern volatile sig_atomic_t g_interrupted;
extern atomic_int g_rx_stop;
extern int g_home_ns;              /* fd of the namespace we started in */
extern struct config *g_cfg;       /* for the exit-time detach of legacy tc filters */

_Noreturn void fail(int code, const char *fmt, ...);
#define bad_arg(...) fail(2, __VA_ARGS__)
#define setup_fail(...) fail(3, __VA_ARGS__)

/* ---------- time ---------- */

static inline int64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static inline int64_t mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

static inline void sleep_until_mono(int64_t t)
{
    struct timespec ts = {.tv_sec = t / NS_PER_S, .tv_nsec = t % NS_PER_S};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

/* ---------- byte order (frames and their signature, nfvlab_count.h) ---------- */

static inline void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t)(v >> 8), p[1] = (uint8_t)v; }

static inline void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16), put16(p + 2, v & 0xffff); }

static inline uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

static inline void put_seq(uint8_t *sig, uint64_t seq) { put32(sig + 10, (uint32_t)(seq >> 32)), put32(sig + 14, (uint32_t)seq); }

static inline uint64_t get_seq(const uint8_t *sig) { return (uint64_t)get32(sig + 10) << 32 | get32(sig + 14); }

/* nfvlab_gen_args.c */
void parse_args(struct config *c, int argc, char **argv);

/* nfvlab_gen_frames.c */
void build_frames(struct config *c, struct stream *s, int idx);

/* nfvlab_gen_socket.c */
void enter_ns(const char *ns);
void leave_ns(void);
void open_tx(const struct config *c, struct stream *s, int idx);
void open_rx(struct stream *s, int idx);
void send_probe(struct stream *s);
void send_load(const struct config *c, struct stream *s, int n, int64_t t0);

/* nfvlab_gen_latency.c */
void start_rx_threads(struct config *c, struct rx_arg *args);

/* nfvlab_gen_pacing.c */
int stream_burst(double rate);
void set_tx_sched(struct config *c);
void run_tx(struct config *c, int64_t t0, int64_t spin_ns, bool load);

/* nfvlab_gen_count.c */
int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap);
struct bpf_map *need_map(struct bpf_object *obj, const char *name);
void setup_counters(struct config *c);
void read_counters(struct config *c);
bool all_counted(const struct config *c);

/* nfvlab_gen_xdp.c */
void setup_xdp_tx(struct config *c);
void run_xdp_tx(struct config *c);
void xdp_request_stall(int64_t ns);
int probe_xdp_live(void);
unsigned long long xdp_ticks(void);

/* nfvlab_gen_report.c */
void print_json(struct config *c);

#endif
