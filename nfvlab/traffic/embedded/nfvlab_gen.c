/*
 * nfvlab-gen: rate-controlled Ethernet/IPv4/UDP generator on AF_PACKET sockets.
 *
 * One trial per run: every stream sends llround(rate * duration) frames spread
 * evenly over the duration, plus latency probes received back on the stream's
 * rx port. Every frame carries the trial's signature (nfvlab_count.h: magic,
 * trial id, stream, kind, sequence number). With --count-obj, a BPF program at
 * each rx port's ingress counts per stream the unique test frames received,
 * duplicates and reordered frames, and per port the foreign frames (anything
 * without this trial's signature); counters are read once traffic has stopped
 * and --settle-ms has passed. Prints one JSON object on stdout.
 *
 * Pacing (see "Pacing" below): the TX thread runs SCHED_FIFO where permitted
 * (--sched), sends at most the frames due in PACE_NS at once, and after a
 * stall slips its schedule (by at most MAX_SLIP of the duration: "slip_s")
 * rather than sending a catch-up burst.
 *
 * Exit codes: 0 ok, 2 bad arguments, 3 setup failure, 130 interrupted.
 * Frame sizes include the 4-byte FCS (RFC 2544), which veth does not carry,
 * so a frame of size N is sent as N-4 bytes.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <math.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nfvlab_count.h"
#include "nfvlab_tx.h"

#define MAX_STREAMS NFVL_MAX_STREAMS
#define MAX_SIZES 16
#define MAX_PERIOD 10000
#define MAX_PROBES 10000000LL /* keeps the send-time and sample arrays under ~160 MB */
#define MAX_COUNTED_BITS (1ULL << 32) /* bitmap per rx port: 512 MiB at most */
#define MAX_BATCH 64    /* frames per sendmmsg when behind schedule (32..256 measured alike) */
#define MIN_FRAME 64
#define MAX_FRAME 9018
#define FCS_LEN 4
#define HDR_LEN 42 /* Ethernet 14 + IPv4 20 + UDP 8 */
#define SIG_END (HDR_LEN + NFVL_SIG_LEN) /* 60: a 64 B frame without FCS is all header and signature */
#define LOAD_PORT 1024
#define PROBE_PORT 7878
#define PROBE_MAGIC "NFVL"
#define TCX_INGRESS 46       /* BPF_TCX_INGRESS (Linux 6.6), newer than Debian 12's headers */
#define TCX_F_BEFORE (1U << 3) /* BPF_F_BEFORE: ahead of the port's other programs */
#define TC_HANDLE 0x4e46     /* legacy clsact filter handle/priority of the counter */
#define TC_PRIORITY 1
#define SPIN_NS 50000LL      /* SCHED_OTHER: sleep only when the next packet is further away */
#define SPIN_FIFO_NS 2000LL  /* SCHED_FIFO: a sleep wakes within a few microseconds */
#define PACE_NS 50000LL      /* a pass sends at most the frames due in this time (burst bound) */
#define MIN_BURST 2          /* ... but at least this many: one frame late is no stall */
#define MAX_SLIP 0.01        /* fraction of the duration a schedule may slip after stalls */
#define STALL_NS 1000000LL   /* the TX loop off schedule this long, outside a send, is a stall */
#define RT_PRIORITY 10       /* SCHED_FIFO priority of the TX thread: below threaded IRQs (50) */
#define MAX_SLEEP_NS 10000000LL /* bound sleeps so a signal is noticed quickly */
#define NS_PER_S 1000000000LL
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
    int64_t slip_ns;         /* how far this stream's schedule slipped after stalls */
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
    struct bpf_object *obj;
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
    const char *tx;          /* "socket" (AF_PACKET) or "xdp" (nfvlab_tx.bpf.c, see XDP TX) */
    const char *tx_obj;      /* BPF object of the XDP transmit path */
    double inject_stall_ms;  /* test hook: the TX loop stops this long ... */
    double inject_stall_at_s; /* ... this far into the trial (a stall of known size) */
    /* runtime: the TX loop's stalls (see Stalls) */
    int64_t stall_total_ns, stall_max_ns;
    long long stalls;
};

static volatile sig_atomic_t g_interrupted;
static atomic_int g_rx_stop;
static uint8_t g_zero[MAX_FRAME];  /* shared payload tail of load frames */
static int g_home_ns = -1;         /* fd of the namespace we started in */
static struct config *g_cfg;       /* for the exit-time detach of legacy tc filters */

/* ---------- errors ---------- */

static _Noreturn void fail(int code, const char *fmt, ...)
{
    va_list ap;
    fputs("nfvlab-gen: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

#define bad_arg(...) fail(2, __VA_ARGS__)
#define setup_fail(...) fail(3, __VA_ARGS__)

/* ---------- argument parsing ---------- */

static bool parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static int parse_int_arg(const char *opt, const char *s, long lo, long hi)
{
    long v;
    if (!parse_long(s, lo, hi, &v))
        bad_arg("%s '%s' is invalid: allowed integers %ld..%ld", opt, s, lo, hi);
    return (int)v;
}

static void parse_sizes(struct config *c, const char *list)
{
    char buf[512], *save = NULL;
    if (strlen(list) >= sizeof buf)
        bad_arg("--sizes list too long");
    strcpy(buf, list);
    c->nsizes = 0;
    c->period = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        long size, weight = 1;
        if (c->nsizes == MAX_SIZES)
            bad_arg("--sizes has more than %d entries", MAX_SIZES);
        if (colon)
            *colon = '\0';
        if (!parse_long(tok, MIN_FRAME, MAX_FRAME, &size) ||
            (colon && !parse_long(colon + 1, 1, 1000, &weight)))
            bad_arg("--sizes entry '%s%s%s' is invalid: use SIZE:WEIGHT with SIZE %d..%d and WEIGHT 1..1000",
                    tok, colon ? ":" : "", colon ? colon + 1 : "", MIN_FRAME, MAX_FRAME);
        if (c->period + weight > MAX_PERIOD)
            bad_arg("--sizes weights sum to more than %d", MAX_PERIOD);
        for (long i = 0; i < weight; i++)
            c->seq[c->period++] = (uint8_t)c->nsizes;
        c->sizes[c->nsizes] = (int)size;
        c->weights[c->nsizes++] = (int)weight;
    }
    if (c->nsizes == 0)
        bad_arg("--sizes is empty: use e.g. 64:7,570:4,1518:1");
}

static void parse_port(struct port *p, const char *key, const char *v)
{
    const char *colon = strchr(v, ':');
    size_t nslen = colon ? (size_t)(colon - v) : 0;
    if (!colon || nslen == 0 || nslen >= sizeof p->ns || !colon[1] ||
        strlen(colon + 1) >= IFNAMSIZ || strlen(v) >= sizeof p->spec)
        bad_arg("--stream %s='%s' is invalid: use NS:IFACE (NS '.' = current namespace)", key, v);
    memcpy(p->ns, v, nslen);
    p->ns[nslen] = '\0';
    /* The spec is echoed into the JSON unescaped and the name into a path. */
    if (strpbrk(v, "/\"\\") || !strcmp(p->ns, ".."))
        bad_arg("--stream %s='%s' is invalid: names must not contain '/', '\"' or '\\'", key, v);
    for (const char *q = v; *q; q++)
        if ((unsigned char)*q < 0x20)
            bad_arg("--stream %s: control characters are not allowed", key);
    strcpy(p->ifname, colon + 1);
    strcpy(p->spec, v);
}

static void parse_mac(uint8_t mac[6], const char *key, const char *v)
{
    unsigned m[6];
    char tail;
    if (sscanf(v, "%2x:%2x:%2x:%2x:%2x:%2x%c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5], &tail) != 6)
        bad_arg("--stream %s='%s' is invalid: use aa:bb:cc:dd:ee:ff", key, v);
    for (int i = 0; i < 6; i++)
        mac[i] = (uint8_t)m[i];
}

static void parse_stream(struct stream *s, const char *spec)
{
    static const char *const keys[] = {"tx", "rx", "rate", "smac", "dmac", "sip", "dip"};
    char buf[1024], *save = NULL;
    unsigned seen = 0;
    if (strlen(spec) >= sizeof buf)
        bad_arg("--stream value too long");
    strcpy(buf, spec);
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *v = strchr(tok, '=');
        int k = -1;
        if (v)
            *v++ = '\0';
        for (int i = 0; i < 7; i++)
            if (!strcmp(tok, keys[i]))
                k = i;
        if (!v || k < 0)
            bad_arg("--stream item '%s' is invalid: allowed keys tx, rx, rate, smac, dmac, sip, dip as key=value", tok);
        if (seen & (1u << k))
            bad_arg("--stream key '%s' given twice", tok);
        seen |= 1u << k;
        switch (k) {
        case 0: parse_port(&s->tx, tok, v); break;
        case 1: parse_port(&s->rx, tok, v); break;
        case 2:
            if (!parse_double(v, &s->rate) || s->rate <= 0 || s->rate > 1e9)
                bad_arg("--stream rate='%s' is invalid: packets/s, > 0 and <= 1e9", v);
            break;
        case 3: parse_mac(s->smac, tok, v); break;
        case 4: parse_mac(s->dmac, tok, v); break;
        case 5:
        case 6:
            if (inet_pton(AF_INET, v, k == 5 ? &s->sip : &s->dip) != 1)
                bad_arg("--stream %s='%s' is invalid: use an IPv4 address A.B.C.D", tok, v);
            break;
        }
    }
    for (int i = 0; i < 7; i++)
        if (!(seen & (1u << i)))
            bad_arg("--stream '%s' lacks %s=: required keys are tx, rx, rate, smac, dmac, sip, dip", spec, keys[i]);
}

static const char usage[] =
    "usage: nfvlab-gen --duration-s D [--frame-size N | --sizes S:W,... | --imix]\n"
    "                  [--flows F] [--latency-pps L] [--settle-ms S] [--cpu C] [--sndbuf BYTES]\n"
    "                  [--trial-id ID] [--count-obj BPF_OBJECT [--count-hook auto|tcx|tc] [--pass-load]]\n"
    "                  [--sched auto|fifo|other] [--qdisc-bypass] [--tx socket|xdp --tx-obj BPF_OBJECT]\n"
    "                  [--inject-stall-ms MS --inject-stall-at-s T]   (test hook: a stall of known size)\n"
    "                  --stream 'tx=NS:IF,rx=NS:IF,rate=PPS,smac=MAC,dmac=MAC,sip=IP,dip=IP' [--stream ...]\n";

static void set_sizes(struct config *c, bool *have_size, const char *opt, const char *list)
{
    if (*have_size)
        bad_arg("%s: give only one of --frame-size, --sizes, --imix", opt);
    *have_size = true;
    parse_sizes(c, list);
}

/* Applies one "--opt value" pair (val is NULL for the flag --imix). */
static void apply_option(struct config *c, const char *opt, const char *val, bool *have_size)
{
    if (!strcmp(opt, "--imix")) {
        set_sizes(c, have_size, opt, "64:7,570:4,1518:1");
    } else if (!strcmp(opt, "--pass-load")) {
        c->pass_load = true;
    } else if (!strcmp(opt, "--qdisc-bypass")) {
        c->qdisc_bypass = true;
    } else if (!strcmp(opt, "--sched")) {
        if (strcmp(val, "auto") && strcmp(val, "fifo") && strcmp(val, "other"))
            bad_arg("--sched '%s' is invalid: auto, fifo or other", val);
        c->sched = val;
    } else if (!strcmp(opt, "--tx")) {
        if (strcmp(val, "socket") && strcmp(val, "xdp"))
            bad_arg("--tx '%s' is invalid: socket or xdp", val);
        c->tx = val;
    } else if (!strcmp(opt, "--tx-obj")) {
        if (!*val)
            bad_arg("--tx-obj is empty: give the compiled nfvlab_tx.bpf.o");
        c->tx_obj = val;
    } else if (!strcmp(opt, "--trial-id")) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(val, &end, 0);
        if (errno || end == val || *end || *val == '-' || v > UINT32_MAX)
            bad_arg("--trial-id '%s' is invalid: an integer 0..4294967295", val);
        c->trial_id = (uint32_t)v;
        c->have_trial_id = true;
    } else if (!strcmp(opt, "--count-obj")) {
        if (!*val)
            bad_arg("--count-obj is empty: give the compiled nfvlab_count.bpf.o");
        c->count_obj = val;
    } else if (!strcmp(opt, "--count-hook")) {
        if (strcmp(val, "auto") && strcmp(val, "tcx") && strcmp(val, "tc"))
            bad_arg("--count-hook '%s' is invalid: auto, tcx or tc", val);
        c->count_hook = val;
    } else if (!strcmp(opt, "--duration-s")) {
        if (!parse_double(val, &c->duration) || c->duration <= 0 || c->duration > 86400)
            bad_arg("--duration-s '%s' is invalid: seconds, > 0 and <= 86400", val);
    } else if (!strcmp(opt, "--frame-size")) {
        set_sizes(c, have_size, opt, "64");
        c->sizes[0] = parse_int_arg(opt, val, MIN_FRAME, MAX_FRAME);
    } else if (!strcmp(opt, "--sizes")) {
        set_sizes(c, have_size, opt, val);
    } else if (!strcmp(opt, "--flows")) {
        c->flows = parse_int_arg(opt, val, 1, 65535);
    } else if (!strcmp(opt, "--latency-pps")) {
        if (!parse_double(val, &c->latency_pps) || c->latency_pps < 0 || c->latency_pps > 100000)
            bad_arg("--latency-pps '%s' is invalid: probes/s, 0..100000 (0 disables probes)", val);
    } else if (!strcmp(opt, "--settle-ms")) {
        c->settle_ms = parse_int_arg(opt, val, 0, 60000);
    } else if (!strcmp(opt, "--cpu")) {
        c->cpu = parse_int_arg(opt, val, 0, CPU_SETSIZE - 1);
    } else if (!strcmp(opt, "--sndbuf")) {
        c->sndbuf = parse_int_arg(opt, val, 4096, 1 << 30);
    } else if (!strcmp(opt, "--inject-stall-ms")) {
        if (!parse_double(val, &c->inject_stall_ms) || c->inject_stall_ms <= 0 || c->inject_stall_ms > 10000)
            bad_arg("--inject-stall-ms '%s' is invalid: milliseconds, > 0 and <= 10000", val);
    } else if (!strcmp(opt, "--inject-stall-at-s")) {
        if (!parse_double(val, &c->inject_stall_at_s) || c->inject_stall_at_s < 0)
            bad_arg("--inject-stall-at-s '%s' is invalid: seconds into the trial, >= 0", val);
    } else if (!strcmp(opt, "--stream")) {
        if (c->nstreams == MAX_STREAMS)
            bad_arg("at most %d --stream options are allowed", MAX_STREAMS);
        parse_stream(&c->streams[c->nstreams++], val);
    } else {
        bad_arg("unknown option %s (see --help)", opt);
    }
}

static void parse_args(struct config *c, int argc, char **argv)
{
    bool have_size = false;
    memset(c, 0, sizeof *c);
    parse_sizes(c, "64");
    c->flows = 1;
    c->latency_pps = 1000;
    c->settle_ms = 100;
    c->cpu = -1;
    c->count_hook = "auto";
    c->sched = "auto";
    c->tx = "socket";
    for (int i = 1; i < argc; i++) {
        char opt[64];
        const char *arg = argv[i], *val = NULL, *eq = strchr(arg, '=');
        int optlen = eq ? (int)(eq - arg) : (int)strlen(arg);
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            fputs(usage, stdout);
            exit(0);
        }
        if (strncmp(arg, "--", 2) || optlen >= (int)sizeof opt)
            bad_arg("unexpected argument '%s' (see --help)", arg);
        snprintf(opt, sizeof opt, "%.*s", optlen, arg);
        if (!strcmp(opt, "--imix") || !strcmp(opt, "--pass-load") || !strcmp(opt, "--qdisc-bypass")) {
            if (eq)
                bad_arg("%s takes no value", opt);
        } else if (eq) {
            val = eq + 1;
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            bad_arg("%s needs a value (see --help)", opt);
        }
        apply_option(c, opt, val, &have_size);
    }
    if (c->duration <= 0)
        bad_arg("--duration-s is required (seconds, > 0)");
    if (c->nstreams == 0)
        bad_arg("--stream is required (1 or 2 streams)");
    if (!strcmp(c->tx, "xdp")) {
        if (!c->tx_obj)
            bad_arg("--tx xdp needs --tx-obj (the compiled nfvlab_tx.bpf.o)");
        for (int z = 0; z < c->nsizes; z++)
            if (c->sizes[z] - FCS_LEN > NFVL_TX_MAX_FRAME)
                bad_arg("--tx xdp sends frames of %d..%d B (one page each), not %d B", MIN_FRAME,
                        NFVL_TX_MAX_FRAME + FCS_LEN, c->sizes[z]);
        for (int i = 1; i < c->nstreams; i++)
            if (strcmp(c->streams[i].tx.ns, c->streams[0].tx.ns))
                bad_arg("--tx xdp needs every tx port in one network namespace (%s, %s)",
                        c->streams[0].tx.spec, c->streams[i].tx.spec);
    }
    if (llround(c->latency_pps * c->duration) > MAX_PROBES)
        bad_arg("--latency-pps x --duration-s exceeds %lld probes per stream", MAX_PROBES);
    if (c->count_obj) {
        double bits = 0;
        for (int i = 0; i < c->nstreams; i++)
            bits += c->streams[i].rate * c->duration + c->latency_pps * c->duration + 128;
        if (bits > (double)MAX_COUNTED_BITS)
            bad_arg("rate x --duration-s is %.3g frames: exact counting (a bit per frame) allows %.3g per trial",
                    bits, (double)MAX_COUNTED_BITS);
    }
}

/* ---------- frames ---------- */

static uint16_t ip_checksum(const uint8_t *p, size_t len)
{
    uint32_t sum = 0;
    for (size_t i = 0; i + 1 < len; i += 2)
        sum += (uint32_t)p[i] << 8 | p[i + 1];
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

static void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t)(v >> 8), p[1] = (uint8_t)v; }

static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16), put16(p + 2, v & 0xffff); }

static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* The signature of a frame of this trial (nfvlab_count.h); the sequence number is put by put_seq. */
static void build_sig(uint8_t *sig, uint32_t trial_id, int idx, int kind)
{
    memcpy(sig, PROBE_MAGIC, 4);
    put32(sig + 4, trial_id);
    sig[8] = (uint8_t)idx;
    sig[9] = (uint8_t)kind;
    memset(sig + 10, 0, 8);
}

static void put_seq(uint8_t *sig, uint64_t seq) { put32(sig + 10, (uint32_t)(seq >> 32)), put32(sig + 14, (uint32_t)seq); }

static uint64_t get_seq(const uint8_t *sig) { return (uint64_t)get32(sig + 10) << 32 | get32(sig + 14); }

/* Ethernet + IPv4 + UDP header of a frame of `size` bytes (FCS included). */
static void build_header(uint8_t *h, const struct stream *s, int size, unsigned sport, unsigned dport)
{
    unsigned ip_len = (unsigned)size - FCS_LEN - 14;
    memcpy(h, s->dmac, 6);
    memcpy(h + 6, s->smac, 6);
    put16(h + 12, ETH_P_IP);
    uint8_t *ip = h + 14;
    memset(ip, 0, 20);
    ip[0] = 0x45;
    put16(ip + 2, ip_len);
    put16(ip + 6, 0x4000);   /* DF: a constant ID is then legal (RFC 6864) */
    ip[8] = 64;
    ip[9] = IPPROTO_UDP;
    memcpy(ip + 12, &s->sip, 4);
    memcpy(ip + 16, &s->dip, 4);
    put16(ip + 10, ip_checksum(ip, 20));
    uint8_t *udp = ip + 20;
    put16(udp, sport);
    put16(udp + 2, dport);
    put16(udp + 4, ip_len - 20);
    put16(udp + 6, 0);       /* no checksum: legal for IPv4 and keeps frames constant */
}

/*
 * Only headers are precomputed per (size, flow); the signature is written per
 * frame and the rest of the payload is one shared zero buffer, sent as three
 * iovecs. Full frames for 65535 flows of 9018 B would need ~600 MB, headers
 * need 42 B each.
 */
static void build_frames(struct config *c, struct stream *s, int idx)
{
    s->hdrs = malloc((size_t)c->nsizes * c->flows * HDR_LEN);
    if (!s->hdrs)
        setup_fail("out of memory for %d x %d frame headers", c->nsizes, c->flows);
    for (int z = 0; z < c->nsizes; z++)
        for (int f = 0; f < c->flows; f++)
            build_header(s->hdrs + ((size_t)z * c->flows + f) * HDR_LEN, s, c->sizes[z],
                         LOAD_PORT + (unsigned)f, LOAD_PORT);
    build_sig(s->sig, c->trial_id, idx, NFVL_KIND_LOAD);
    s->probe_len = (size_t)c->sizes[0] - FCS_LEN;
    memset(s->probe, 0, sizeof s->probe);
    build_header(s->probe, s, c->sizes[0], LOAD_PORT, PROBE_PORT);
    build_sig(s->probe + HDR_LEN, c->trial_id, idx, NFVL_KIND_PROBE);
}

/* ---------- sockets ---------- */

static void enter_ns(const char *ns)
{
    char path[160];
    if (!strcmp(ns, "."))
        return;
    snprintf(path, sizeof path, "/var/run/netns/%s", ns);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        setup_fail("cannot open network namespace '%s' (%s): %s", ns, path, strerror(errno));
    if (setns(fd, CLONE_NEWNET) < 0)
        setup_fail("cannot enter network namespace '%s': %s", ns, strerror(errno));
    close(fd);
}

static void leave_ns(void)
{
    if (setns(g_home_ns, CLONE_NEWNET) < 0)
        setup_fail("cannot return to the original network namespace: %s", strerror(errno));
}

/*
 * A packet socket on port p, created inside p's namespace (a socket stays in
 * the namespace it was created in). Bound with `proto`: 0 receives nothing.
 * `filter` is attached before bind so no unfiltered frame is ever queued.
 */
static int open_port(const struct port *p, uint16_t proto, const struct sock_fprog *filter, int *mtu)
{
    enter_ns(p->ns);
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (fd < 0)
        setup_fail("cannot create packet socket for %s: %s (needs CAP_NET_RAW)", p->spec, strerror(errno));
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, p->ifname);
    if (ioctl(fd, SIOCGIFINDEX, &ifr) < 0)
        setup_fail("no interface '%s' in namespace '%s': %s", p->ifname, p->ns, strerror(errno));
    int ifindex = ifr.ifr_ifindex;
    if (mtu && ioctl(fd, SIOCGIFMTU, &ifr) == 0)
        *mtu = ifr.ifr_mtu;
    if (filter && setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, filter, sizeof *filter) < 0)
        setup_fail("cannot attach BPF filter on %s: %s", p->spec, strerror(errno));
    struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(proto), .sll_ifindex = ifindex};
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0)
        setup_fail("cannot bind packet socket to %s: %s", p->spec, strerror(errno));
    leave_ns();
    return fd;
}

static void open_tx(const struct config *c, struct stream *s)
{
    int mtu = 0, maxsize = 0;
    s->txfd = open_port(&s->tx, 0, NULL, &mtu);
    for (int z = 0; z < c->nsizes; z++)
        maxsize = c->sizes[z] > maxsize ? c->sizes[z] : maxsize;
    if (mtu && maxsize - FCS_LEN - 14 > mtu)
        setup_fail("frame size %d needs MTU >= %d on %s, which has %d", maxsize, maxsize - FCS_LEN - 14,
                   s->tx.spec, mtu);
    if (c->sndbuf && setsockopt(s->txfd, SOL_SOCKET, SO_SNDBUFFORCE, &c->sndbuf, sizeof c->sndbuf) < 0)
        setup_fail("cannot set SO_SNDBUFFORCE=%d on %s: %s", c->sndbuf, s->tx.spec, strerror(errno));
    int one = 1;
    if (c->qdisc_bypass && setsockopt(s->txfd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) < 0)
        setup_fail("cannot set PACKET_QDISC_BYPASS on %s: %s", s->tx.spec, strerror(errno));
    /* Bounds a send blocked on a stalled queue: it fails with EAGAIN instead. */
    struct timeval tmo = {.tv_sec = 0, .tv_usec = 100000};
    setsockopt(s->txfd, SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof tmo);
}

/* Accept only incoming IPv4/UDP non-fragments to PROBE_PORT whose payload starts with the magic. */
static struct sock_filter probe_filter[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SKF_AD_OFF + SKF_AD_PKTTYPE),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACKET_OUTGOING, 12, 0),
    BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IP, 0, 10),
    BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 23),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, 0, 8),
    BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 20),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x1fff, 6, 0),
    BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 14),
    BPF_STMT(BPF_LD | BPF_H | BPF_IND, 14 + 2),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROBE_PORT, 0, 3),
    BPF_STMT(BPF_LD | BPF_W | BPF_IND, 14 + 8),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x4e46564c /* "NFVL" */, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, 0xffff),
    BPF_STMT(BPF_RET | BPF_K, 0),
};

static void open_rx(struct stream *s)
{
    struct sock_fprog prog = {.len = sizeof probe_filter / sizeof probe_filter[0], .filter = probe_filter};
    s->rxfd = open_port(&s->rx, ETH_P_IP, &prog, NULL);
    int one = 1, rcvbuf = 4 << 20;
    if (setsockopt(s->rxfd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) < 0)
        setup_fail("cannot enable SO_TIMESTAMPNS on %s: %s", s->rx.spec, strerror(errno));
    setsockopt(s->rxfd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
    /* RX threads poll the stop flag at this period. */
    struct timeval tmo = {.tv_sec = 0, .tv_usec = 20000};
    setsockopt(s->rxfd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof tmo);
}

/* ---------- time ---------- */

static int64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static int64_t mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

/* Offset from start at which packet number n (1-based) of a `rate` schedule is due. */
static int64_t due_time_ns(long long n, double rate) { return (int64_t)ceil((double)n * 1e9 / rate); }

static long long due_count(double rate, int64_t elapsed_ns, long long intended)
{
    long long n = (long long)floor(rate * (double)elapsed_ns / 1e9);
    return n < intended ? n : intended;
}

/* ---------- RX (latency) ---------- */

/*
 * A probe carries no timestamp (a 64 B frame has no room beside the
 * signature): the TX thread keeps each probe's send time, stored before the
 * send, so it is visible here once the probe has come back through the kernel.
 */
static void record_probe(struct stream *s, int idx, uint32_t trial_id, const uint8_t *frame, ssize_t len,
                         int64_t rx_ns)
{
    size_t ihl = len > 14 ? (size_t)(frame[14] & 0xf) * 4 : 0;
    const uint8_t *sig = frame + 14 + ihl + 8;
    if (ihl < 20 || (ssize_t)(14 + ihl + 8 + NFVL_SIG_LEN) > len || memcmp(sig, PROBE_MAGIC, 4) ||
        get32(sig + 4) != trial_id || sig[8] != idx || sig[9] != NFVL_KIND_PROBE)
        return;             /* another trial's or stream's probe, or truncated */
    uint64_t seq = get_seq(sig);
    if (seq >= (uint64_t)s->probes_intended || s->samples[seq] != NO_SAMPLE)
        return;             /* out of range or duplicate */
    int64_t tx_ns = __atomic_load_n(&s->probe_tx_ns[seq], __ATOMIC_ACQUIRE);
    if (tx_ns == 0)
        return;             /* never sent: cannot happen for a probe of this trial */
    s->samples[seq] = rx_ns - tx_ns;
    s->nsamples++;
}

struct rx_arg {
    struct stream *s;
    int idx;
    uint32_t trial_id;
};

static void *rx_main(void *p)
{
    struct rx_arg *a = p;
    uint8_t frame[MAX_FRAME + 64];
    char ctrl[256];
    while (!atomic_load(&g_rx_stop)) {
        struct iovec iov = {frame, sizeof frame};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl, .msg_controllen = sizeof ctrl};
        ssize_t n = recvmsg(a->s->rxfd, &mh, 0);
        if (n < 0)
            continue;       /* timeout: re-check the stop flag */
        int64_t rx_ns = -1;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
                struct timespec ts;
                memcpy(&ts, CMSG_DATA(cm), sizeof ts);
                rx_ns = (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
            }
        if (rx_ns < 0)      /* no kernel timestamp: next best is now */
            rx_ns = clock_ns(CLOCK_REALTIME);
        record_probe(a->s, a->idx, a->trial_id, frame, n, rx_ns);
    }
    return NULL;
}

/* ---------- TX ---------- */

static void send_probe(struct stream *s)
{
    long long seq = s->probes_attempted++;
    put_seq(s->probe + HDR_LEN, (uint64_t)seq);
    __atomic_store_n(&s->probe_tx_ns[seq], clock_ns(CLOCK_REALTIME), __ATOMIC_RELEASE);
    if (send(s->txfd, s->probe, s->probe_len, 0) == (ssize_t)s->probe_len)
        s->probes_sent++;
}

/*
 * Send the next n load frames in one sendmmsg. Frames are taken from the
 * sequence by `sent`, not by schedule position, so the sent frames are always
 * a prefix of the size/flow sequence and byte counts stay predictable; their
 * sequence numbers are 0 .. sent-1 (a frame that failed is not sent, and its
 * number goes to the next one).
 */
static void send_load(const struct config *c, struct stream *s, int n, int64_t t0)
{
    struct mmsghdr msgs[MAX_BATCH];
    struct iovec iov[MAX_BATCH][3];
    uint8_t sig[MAX_BATCH][NFVL_SIG_LEN];
    for (int j = 0; j < n; j++) {
        long long k = s->sent + j;
        int z = c->seq[k % c->period];
        int flow = (int)(k % c->flows);
        memcpy(sig[j], s->sig, NFVL_SIG_LEN);
        put_seq(sig[j], (uint64_t)k);
        iov[j][0] = (struct iovec){s->hdrs + ((size_t)z * c->flows + flow) * HDR_LEN, HDR_LEN};
        iov[j][1] = (struct iovec){sig[j], NFVL_SIG_LEN};
        iov[j][2] = (struct iovec){g_zero, (size_t)c->sizes[z] - FCS_LEN - SIG_END};
        msgs[j].msg_hdr = (struct msghdr){.msg_iov = iov[j], .msg_iovlen = iov[j][2].iov_len ? 3 : 2};
    }
    int r = sendmmsg(s->txfd, msgs, (unsigned)n, 0);
    if (r > 0) {
        s->sent += r;
        s->attempted += r;
        s->last_send_ns = mono_ns() - t0;
    }
    if (r < n && !g_interrupted) {
        /* sendmmsg stops at the first failing frame: count it as not sent. */
        s->send_errors++;
        s->attempted++;
    }
}

/*
 * Pacing. Each stream has its own schedule: frame n is due n / rate after the
 * start, plus the stream's slip. A pass sends what is due, at most `burst`
 * frames (the frames due in PACE_NS), so frames leave in the spacing the rate
 * asks for and never in a longer burst while the thread keeps up. After a
 * stall (the thread was preempted, the VM descheduled), the frames that fell
 * due meanwhile are not sent as one catch-up burst, which a DUT with a
 * shallow buffer would drop although the offered rate is within its capacity:
 * the schedule slips by the stall instead, so the frames keep their spacing
 * and the trial ends that much later. Slip is bounded by MAX_SLIP of the
 * duration (reported per stream, and the offered rate, sent / tx_elapsed_s,
 * shows it); beyond that the stream catches up in sendmmsg batches of up to
 * MAX_BATCH, and what is still unsent at its deadline is a shortfall, counted
 * as loss. Probes are paced on the same (slipped) clock.
 */
static int stream_burst(double rate)
{
    double b = floor(rate * (double)PACE_NS / 1e9);
    return b < MIN_BURST ? MIN_BURST : b > MAX_BATCH ? MAX_BATCH : (int)b;
}

/* Elapsed time on stream s's schedule. */
static int64_t stream_elapsed(const struct stream *s, int64_t elapsed) { return elapsed - s->slip_ns; }

/* Slip s's schedule so that at most `burst` frames are due now, within the slip budget. */
static void slip(const struct config *c, struct stream *s, long long backlog)
{
    int64_t budget = (int64_t)(MAX_SLIP * c->duration * 1e9) - s->slip_ns;
    int64_t want = (int64_t)ceil((double)(backlog - s->burst) * 1e9 / s->rate);
    if (budget > 0)
        s->slip_ns += want < budget ? want : budget;
}

/*
 * One pass over the streams: each due probe, then the due load frames of each
 * stream (see Pacing), so streams share the thread round-robin. At a stream's
 * deadline it only sends its remainder if that fits one burst: the tail fell
 * due in the last moments, whereas a larger backlog is a shortfall.
 */
static bool tx_pass(struct config *c, int first, int64_t t0, int64_t elapsed)
{
    bool worked = false;
    int64_t deadline = (int64_t)llround(c->duration * 1e9);
    for (int i = 0; i < c->nstreams; i++) {
        struct stream *s = &c->streams[(first + i) % c->nstreams];
        if (s->finished)
            continue;
        int64_t se = stream_elapsed(s, elapsed);
        bool final = se >= deadline;
        long long due = final ? s->intended : due_count(s->rate, se, s->intended);
        long long backlog = due - s->attempted;
        if (!final && backlog > s->burst) {
            if (backlog > s->max_backlog)
                s->max_backlog = backlog;
            slip(c, s, backlog);
            se = stream_elapsed(s, elapsed);
            due = due_count(s->rate, se, s->intended);
            backlog = due - s->attempted;
        }
        long long pdue = final ? s->probes_intended : due_count(c->latency_pps, se, s->probes_intended);
        if (s->probes_attempted < pdue && (!final || pdue - s->probes_attempted <= 1)) {
            send_probe(s);
            worked = true;
        }
        /* On schedule: at most a burst. Behind it beyond the slip budget: catch up in big batches. */
        long long most = backlog > s->burst ? MAX_BATCH : s->burst;
        if (backlog > 0 && (!final || backlog <= s->burst)) {
            send_load(c, s, (int)(backlog < most ? backlog : most), t0);
            worked = true;
        }
        s->finished = final;
    }
    return worked;
}

static bool all_done(const struct config *c)
{
    for (int i = 0; i < c->nstreams; i++) {
        const struct stream *s = &c->streams[i];
        if (!s->finished && (s->attempted < s->intended || s->probes_attempted < s->probes_intended))
            return false;
    }
    return true;
}

/* Time (on the common clock) at which the next frame or probe of any stream is due. */
static int64_t next_due(const struct config *c, int64_t deadline)
{
    int64_t next = INT64_MAX;
    for (int i = 0; i < c->nstreams; i++) {
        const struct stream *s = &c->streams[i];
        if (s->finished)
            continue;
        int64_t t = deadline;
        if (s->attempted < s->intended) {
            int64_t d = due_time_ns(s->attempted + 1, s->rate);
            t = d < t ? d : t;
        }
        if (s->probes_attempted < s->probes_intended) {
            int64_t d = due_time_ns(s->probes_attempted + 1, c->latency_pps);
            t = d < t ? d : t;
        }
        t += s->slip_ns;
        next = t < next ? t : next;
    }
    return next == INT64_MAX ? deadline : next;
}

static void sleep_until_mono(int64_t t)
{
    struct timespec ts = {.tv_sec = t / NS_PER_S, .tv_nsec = t % NS_PER_S};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

/*
 * The TX thread runs SCHED_FIFO where permitted (measured on a shared 2-vCPU
 * VM: under SCHED_OTHER the 99.9th percentile of inter-departure gaps was
 * 1-8 ms, the time slice another task got; under SCHED_FIFO it was < 0.1 ms).
 * A FIFO thread must not spin for long: a CPU it keeps busy is taken from it
 * for tens of milliseconds at once (RT throttling / the fair server), so it
 * sleeps until a few microseconds before each frame is due.
 */
static void set_tx_sched(struct config *c)
{
    c->sched_used = "other";
    if (!strcmp(c->sched, "other"))
        return;
    struct sched_param sp = {.sched_priority = RT_PRIORITY};
    int err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    if (!err)
        c->sched_used = "fifo";
    else if (!strcmp(c->sched, "fifo"))
        setup_fail("cannot run the TX thread SCHED_FIFO: %s (needs CAP_SYS_NICE; --sched auto falls back)",
                   strerror(err));
}

/*
 * Stalls. A trial is only a measurement of the DUT if the generator offered the
 * intended load on schedule. The TX loop knows when it should run next: right
 * after a pass (it had more to send) or at the end of its sleep. Any later start
 * beyond STALL_NS is time the thread was not running (preempted, the VM
 * descheduled): a stall. Time inside send calls is not counted: a send blocked
 * by the kernel holding the sender back (a downstream queue keeps its skbs:
 * backpressure) is the DUT's doing and its shortfall is loss. Counting less is
 * the safe side: a stall taken for backpressure lowers a result, the reverse
 * could raise it above the DUT's capacity. Stalls are reported in total; nfvlab
 * rules a trial invalid when they exceed the slip budget (the schedule could
 * not absorb them). The XDP path counts the same in its BPF program.
 */
static void xdp_request_stall(int64_t ns);

static void note_stall(struct config *c, int64_t gap_ns)
{
    if (gap_ns <= STALL_NS)
        return;
    c->stall_total_ns += gap_ns;
    c->stall_max_ns = gap_ns > c->stall_max_ns ? gap_ns : c->stall_max_ns;
    c->stalls++;
}

/* The test hook: once, `inject_stall_at_s` into the trial, the TX loop sleeps `inject_stall_ms`. */
static bool inject_stall(const struct config *c, int64_t t0, bool *done)
{
    if (*done || c->inject_stall_ms <= 0 || mono_ns() - t0 < (int64_t)llround(c->inject_stall_at_s * 1e9))
        return false;
    *done = true;
    sleep_until_mono(mono_ns() + (int64_t)llround(c->inject_stall_ms * 1e6));
    return true;
}

/* Send every stream's frames and probes from t0; spin_ns: how close to a due frame the thread
 * stops sleeping (its policy's wake-up latency). `load`: this loop sends the load (the socket
 * path), so its stalls are the trial's (see Stalls); on the XDP path it sends probes only. */
static void run_tx(struct config *c, int64_t t0, int64_t spin_ns, bool load)
{
    int64_t deadline = (int64_t)llround(c->duration * 1e9);
    int64_t window = deadline + (int64_t)(MAX_SLIP * c->duration * 1e9);  /* stalls after it do not matter */
    bool injected = false;
    for (int i = 0; i < c->nstreams; i++)
        c->streams[i].burst = stream_burst(c->streams[i].rate);
    int64_t expect = mono_ns();  /* when the loop should run next */
    for (int first = 0; !g_interrupted; first = (first + 1) % c->nstreams) {
        if (!load && !injected && c->inject_stall_ms > 0 &&
            mono_ns() - t0 >= (int64_t)llround(c->inject_stall_at_s * 1e9)) {
            injected = true;  /* the XDP path: its loop thread takes the stall */
            xdp_request_stall((int64_t)llround(c->inject_stall_ms * 1e6));
        }
        if (load)
            inject_stall(c, t0, &injected);
        int64_t start = mono_ns();
        if (load && start - t0 < window)
            note_stall(c, start - expect);
        bool worked = tx_pass(c, first, t0, start - t0);
        if (all_done(c))
            break;
        expect = mono_ns();
        if (worked)
            continue;
        int64_t wait = t0 + next_due(c, deadline) - expect;
        /* A sleep costs microseconds of wakeup latency (tens under SCHED_OTHER),
         * so only sleep when the next frame is further away than that. */
        if (wait > spin_ns) {
            int64_t until = expect + (wait - spin_ns < MAX_SLEEP_NS ? wait - spin_ns : MAX_SLEEP_NS);
            sleep_until_mono(until);
            expect = until;
        }
    }
}

/* ---------- counting (BPF at the rx ports' ingress) ---------- */

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    (void)level, (void)fmt, (void)ap;
    return 0;
}

static bool same_port(const struct port *a, const struct port *b)
{
    return !strcmp(a->ns, b->ns) && !strcmp(a->ifname, b->ifname);
}

/* Group the streams by rx port: one counter (program instance) per port. */
static void plan_counters(struct config *c)
{
    for (int i = 0; i < c->nstreams; i++) {
        struct stream *s = &c->streams[i];
        int k = 0;
        while (k < c->ncounters && !same_port(c->counters[k].port, &s->rx))
            k++;
        if (k == c->ncounters) {
            memset(&c->counters[k], 0, sizeof c->counters[k]);
            c->counters[k].port = &s->rx;
            c->counters[k].link_fd = -1;
            c->counters[k].cfg.trial_id = c->trial_id;
            c->counters[k].cfg.drop_load = !c->pass_load;
            c->ncounters++;
        }
        s->counter = k;
        c->counters[k].cfg.expect |= 1U << i;
    }
}

static struct bpf_map *need_map(struct bpf_object *obj, const char *name)
{
    struct bpf_map *m = bpf_object__find_map_by_name(obj, name);
    if (!m)
        setup_fail("%s has no map '%s': rebuild it from nfvlab_count.bpf.c", g_cfg->count_obj, name);
    return m;
}

/* Load one copy of the counter for port k, sized to its streams, and configure it. */
static void load_counter(struct config *c, struct counter *k)
{
    uint64_t bits = 0;
    for (int i = 0; i < c->nstreams; i++) {
        if (!(k->cfg.expect & (1U << i)))
            continue;
        const long long n[NFVL_KINDS] = {c->streams[i].intended, c->streams[i].probes_intended};
        for (int kind = 0; kind < NFVL_KINDS; kind++) {
            k->cfg.count[i][kind] = (uint64_t)n[kind];
            k->cfg.first_bit[i][kind] = bits;
            bits += ((uint64_t)n[kind] + 63) / 64 * 64;
        }
    }
    uint64_t words = bits / 64 ? bits / 64 : 1;
    k->obj = bpf_object__open_file(c->count_obj, NULL);
    if (!k->obj)
        setup_fail("cannot open the counter BPF object %s: %s", c->count_obj, strerror(errno));
    struct bpf_map *bitmap = need_map(k->obj, "bitmap");
    if (bpf_map__set_max_entries(bitmap, (uint32_t)words) < 0)
        setup_fail("cannot size the counter's bitmap to %llu words", (unsigned long long)words);
    int err = bpf_object__load(k->obj);
    if (err)
        setup_fail("cannot load the counter BPF program (%s): %s (needs root, Linux >= 5.12)",
                   c->count_obj, strerror(-err));
    struct bpf_program *prog = bpf_object__find_program_by_name(k->obj, "nfvl_count");
    if (!prog)
        setup_fail("%s has no program nfvl_count", c->count_obj);
    k->prog_fd = bpf_program__fd(prog);
    k->seq_fd = bpf_map__fd(need_map(k->obj, "seq_stats"));
    k->port_fd = bpf_map__fd(need_map(k->obj, "port_stats"));
    uint32_t zero = 0;
    if (bpf_map_update_elem(bpf_map__fd(need_map(k->obj, "cfg")), &zero, &k->cfg, BPF_ANY) < 0)
        setup_fail("cannot configure the counter: %s", strerror(errno));
    k->bits_len = (size_t)words * 8;
    long page = sysconf(_SC_PAGESIZE);
    k->bits_len = (k->bits_len + (size_t)page - 1) / (size_t)page * (size_t)page;
    k->bits = mmap(NULL, k->bits_len, PROT_READ, MAP_SHARED, bpf_map__fd(bitmap), 0);
    if (k->bits == MAP_FAILED)
        setup_fail("cannot map the counter's bitmap: %s", strerror(errno));
}

static int tcx_attach(int prog_fd, int ifindex)
{
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.link_create.prog_fd = (uint32_t)prog_fd;
    attr.link_create.target_ifindex = (uint32_t)ifindex;
    attr.link_create.attach_type = TCX_INGRESS;
    attr.link_create.flags = TCX_F_BEFORE;
    return (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof attr);
}

static void tc_hook(struct counter *k, struct bpf_tc_hook *hook, struct bpf_tc_opts *opts)
{
    memset(hook, 0, sizeof *hook);
    hook->sz = sizeof *hook;
    hook->ifindex = k->ifindex;
    hook->attach_point = BPF_TC_INGRESS;
    memset(opts, 0, sizeof *opts);
    opts->sz = sizeof *opts;
    opts->handle = TC_HANDLE;
    opts->priority = TC_PRIORITY;
}

/*
 * Attach the counter at the port's ingress, from inside the port's namespace
 * (ifindexes and netlink are per namespace). tcx (Linux >= 6.6) is a link that
 * the kernel detaches when nfvlab-gen exits, however it exits; the legacy
 * clsact filter is removed by detach_counters (at exit, also after errors).
 */
static void attach_counter(struct config *c, struct counter *k)
{
    enter_ns(k->port->ns);
    k->ifindex = (int)if_nametoindex(k->port->ifname);
    if (!k->ifindex)
        setup_fail("no interface '%s' in namespace '%s'", k->port->ifname, k->port->ns);
    if (strcmp(c->count_hook, "tc")) {
        k->link_fd = tcx_attach(k->prog_fd, k->ifindex);
        if (k->link_fd >= 0) {
            c->hook_used = "tcx";
            leave_ns();
            return;
        }
        if (!strcmp(c->count_hook, "tcx"))
            setup_fail("cannot attach the counter to %s with tcx: %s (needs Linux >= 6.6)",
                       k->port->spec, strerror(errno));
    }
    struct bpf_tc_hook hook;
    struct bpf_tc_opts opts;
    tc_hook(k, &hook, &opts);
    int err = bpf_tc_hook_create(&hook);
    if (err && err != -EEXIST)
        setup_fail("cannot add a clsact qdisc to %s: %s", k->port->spec, strerror(-err));
    k->tc_hook_created = !err;
    opts.prog_fd = k->prog_fd;
    err = bpf_tc_attach(&hook, &opts);
    if (err) {
        if (k->tc_hook_created) {
            hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
            bpf_tc_hook_destroy(&hook);
        }
        k->tc_hook_created = false;
        setup_fail("cannot attach the counter at %s ingress: %s", k->port->spec, strerror(-err));
    }
    k->tc_attached = true;
    c->hook_used = "tc";
    leave_ns();
}

static void detach_counters(void)
{
    struct config *c = g_cfg;
    for (int i = 0; c && i < c->ncounters; i++) {
        struct counter *k = &c->counters[i];
        if (k->link_fd >= 0) {
            close(k->link_fd);
            k->link_fd = -1;
        }
        if (k->tc_attached && g_home_ns >= 0) {
            struct bpf_tc_hook hook;
            struct bpf_tc_opts opts;
            const char *path = NULL;
            char buf[160];
            if (strcmp(k->port->ns, ".")) {
                snprintf(buf, sizeof buf, "/var/run/netns/%s", k->port->ns);
                path = buf;
            }
            int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
            if (path && (fd < 0 || setns(fd, CLONE_NEWNET) < 0))
                continue;   /* the namespace is gone, and the filter with it */
            tc_hook(k, &hook, &opts);
            bpf_tc_detach(&hook, &opts);
            if (k->tc_hook_created) {  /* ingress | egress: delete the clsact qdisc we added */
                hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
                bpf_tc_hook_destroy(&hook);
            }
            k->tc_attached = false;
            if (fd >= 0)
                close(fd);
            setns(g_home_ns, CLONE_NEWNET);
        }
    }
}

static void setup_counters(struct config *c)
{
    c->hook_used = "none";
    if (!c->count_obj)
        return;
    libbpf_set_print(libbpf_quiet);
    plan_counters(c);
    atexit(detach_counters);
    for (int i = 0; i < c->ncounters; i++) {
        load_counter(c, &c->counters[i]);
        attach_counter(c, &c->counters[i]);
    }
}

static unsigned long long popcount_bits(const uint64_t *bits, uint64_t first, uint64_t n)
{
    unsigned long long total = 0;
    for (uint64_t w = first / 64; w < (first + n + 63) / 64; w++)
        total += (unsigned long long)__builtin_popcountll(bits[w]);
    return total;
}

/* Read every counter (traffic has stopped), then detach. */
static void read_counters(struct config *c)
{
    for (int i = 0; i < c->ncounters; i++) {
        struct counter *k = &c->counters[i];
        for (uint32_t slot = 0; slot < NFVL_SLOTS; slot++) {
            if (bpf_map_lookup_elem(k->seq_fd, &slot, &k->seq[slot]) < 0)
                setup_fail("cannot read the counter of %s: %s", k->port->spec, strerror(errno));
            int st = (int)(slot / NFVL_KINDS), kind = (int)(slot % NFVL_KINDS);
            if (k->cfg.expect & (1U << st))
                k->received[slot] = popcount_bits(k->bits, k->cfg.first_bit[st][kind], k->cfg.count[st][kind]);
        }
        for (uint32_t key = 0; key < NFVL_PORT_N; key++) {
            uint64_t v = 0;
            if (bpf_map_lookup_elem(k->port_fd, &key, &v) < 0)
                setup_fail("cannot read the counter of %s: %s", k->port->spec, strerror(errno));
            k->port_stats[key] = v;
        }
    }
    detach_counters();
}

/* ---------- XDP TX (--tx xdp) ---------- */

/*
 * Load frames go out through nfvlab_tx.bpf.c run in live-frames mode by one
 * thread (see nfvlab_tx.h); probes stay on the AF_PACKET sockets, sent by the
 * main thread on the same clock. The kernel loop ends only when the thread
 * gets a signal (SIGUSR1, sent until it has left), so the loop is told to
 * stop first and then woken. A tx port must accept XDP frames (ndo_xdp_xmit):
 * a NIC whose driver has it, or a veth whose peer runs NAPI (GRO on, or an
 * XDP program); on any other port the redirect fails and the frames count as
 * lost, which the driver (generator.py) rules out before it starts a trial.
 */
#define XDP_BATCH 16          /* frames the kernel runs before a flush: bounds how they bunch */
#define XDP_LEAD_NS 100000LL  /* t0 this far after the loop is seen running */

struct xdp_tx {
    struct bpf_object *obj;
    int prog_fd;
    volatile struct nfvl_tx_state *state;
    size_t frame_len;         /* of the template frame (the largest size) */
    pthread_t thread;
    atomic_int exited;
    int err;                  /* errno of a failed run, 0 = none */
    int cpu;                  /* the loop's CPU (--cpu), -1 = any */
    const struct config *c;
    struct config *c_mut;     /* for set_tx_sched, which records the policy it got */
    atomic_llong stall_req_ns; /* test hook: the loop thread sleeps this long once (0 = none) */
};

static struct xdp_tx g_xdp;

static void on_wake(int sig) { (void)sig; }

/* The test hook on the XDP path: interrupt the kernel loop; its thread then sleeps `ns` before
 * running it again, a stall of known size that the BPF program must see. */
static void xdp_request_stall(int64_t ns)
{
    atomic_store(&g_xdp.stall_req_ns, (long long)ns);
    pthread_kill(g_xdp.thread, SIGUSR1);
}

static void setup_xdp_tx(struct config *c)
{
    struct xdp_tx *x = &g_xdp;
    x->c = x->c_mut = c;
    x->cpu = c->cpu;
    libbpf_set_print(libbpf_quiet);
    x->obj = bpf_object__open_file(c->tx_obj, NULL);
    if (!x->obj)
        setup_fail("cannot open %s: %s", c->tx_obj, strerror(errno));
    struct bpf_map *cfg = need_map(x->obj, "tx_cfg"), *state = need_map(x->obj, "tx_state"),
                   *hdrs = need_map(x->obj, "tx_hdrs"), *mix = need_map(x->obj, "tx_mix");
    bpf_map__set_max_entries(hdrs, (uint32_t)(c->nstreams * c->nsizes * c->flows));
    bpf_map__set_max_entries(mix, (uint32_t)c->period);
    /* Ifindexes and the redirect are resolved in the tx ports' namespace (checked: all in one). */
    enter_ns(c->streams[0].tx.ns);
    struct nfvl_tx_cfg v = {.nstreams = (uint32_t)c->nstreams, .period = (uint32_t)c->period,
                            .nsizes = (uint32_t)c->nsizes};
    for (int z = 0; z < c->nsizes; z++) {
        v.frame_len[z] = (uint16_t)(c->sizes[z] - FCS_LEN);
        x->frame_len = v.frame_len[z] > x->frame_len ? v.frame_len[z] : x->frame_len;
    }
    for (int i = 0; i < c->nstreams; i++) {
        struct stream *s = &c->streams[i];
        struct nfvl_tx_stream_cfg *sc = &v.s[i];
        sc->ifindex = if_nametoindex(s->tx.ifname);
        if (!sc->ifindex)
            setup_fail("no interface '%s' in namespace '%s': %s", s->tx.ifname, s->tx.ns, strerror(errno));
        sc->intended = (uint64_t)s->intended;
        sc->gap_fp = (uint64_t)llround(65536.0 * 1e9 / s->rate);
        sc->burst = (uint64_t)stream_burst(s->rate);
        sc->burst_ns = (uint64_t)llround((double)sc->burst * 1e9 / s->rate);
        sc->slip_budget_ns = (uint64_t)(MAX_SLIP * c->duration * 1e9);
        sc->duration_ns = (uint64_t)llround(c->duration * 1e9);
        sc->flows = (uint32_t)c->flows;
        sc->hdr_base = (uint32_t)(i * c->nsizes * c->flows);
        memcpy(sc->sig, s->sig, NFVL_TX_SIG_PREFIX);
        s->burst = (int)sc->burst;
    }
    if (bpf_object__load(x->obj))
        setup_fail("cannot load %s: %s (XDP live frames need Linux >= 5.18 and CAP_BPF/CAP_NET_ADMIN)",
                   c->tx_obj, strerror(errno));
    leave_ns();
    x->prog_fd = bpf_program__fd(bpf_object__find_program_by_name(x->obj, "nfvl_tx"));
    for (uint32_t k = 0; k < (uint32_t)c->period; k++) {
        uint32_t z = c->seq[k];
        if (bpf_map_update_elem(bpf_map__fd(mix), &k, &z, BPF_ANY))
            setup_fail("cannot fill tx_mix: %s", strerror(errno));
    }
    for (int i = 0; i < c->nstreams; i++)
        for (int zf = 0; zf < c->nsizes * c->flows; zf++) {
            struct nfvl_tx_hdr h = {0};
            uint32_t k = v.s[i].hdr_base + (uint32_t)zf;
            memcpy(h.h, c->streams[i].hdrs + (size_t)zf * HDR_LEN, HDR_LEN);
            if (bpf_map_update_elem(bpf_map__fd(hdrs), &k, &h, BPF_ANY))
                setup_fail("cannot fill tx_hdrs: %s", strerror(errno));
        }
    uint32_t zero = 0;
    if (bpf_map_update_elem(bpf_map__fd(cfg), &zero, &v, BPF_ANY))
        setup_fail("cannot write tx_cfg: %s", strerror(errno));
    void *m = mmap(NULL, sizeof(struct nfvl_tx_state), PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(state), 0);
    if (m == MAP_FAILED)
        setup_fail("cannot map tx_state: %s", strerror(errno));
    x->state = m;
    struct sigaction sa = {.sa_handler = on_wake};  /* no SA_RESTART: the wake-up ends the kernel loop */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
}

static void *xdp_tx_main(void *p)
{
    struct xdp_tx *x = p;
    const struct config *c = x->c;
    static uint8_t frame[NFVL_TX_MAX_FRAME];  /* the template: zeros, overwritten per frame */
    sigset_t wake, main_only;
    sigemptyset(&wake);
    sigaddset(&wake, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &wake, NULL);
    sigemptyset(&main_only);
    sigaddset(&main_only, SIGINT);
    sigaddset(&main_only, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &main_only, NULL);
    if (x->cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(x->cpu, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    set_tx_sched(x->c_mut);
    enter_ns(c->streams[0].tx.ns);  /* the loop's frames start in the namespace the thread runs in */
    while (!x->state->stop) {
        LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (uint32_t)x->frame_len,
                    .repeat = UINT32_MAX, .flags = BPF_F_TEST_XDP_LIVE_FRAMES, .batch_size = XDP_BATCH);
        if (bpf_prog_test_run_opts(x->prog_fd, &o) && errno != EINTR) {
            x->err = errno;
            break;
        }
        long long stall = atomic_exchange(&x->stall_req_ns, 0);
        if (stall > 0)
            sleep_until_mono(mono_ns() + stall);
    }
    atomic_store(&x->exited, 1);
    return NULL;
}

static bool xdp_streams_done(const struct config *c)
{
    for (int i = 0; i < c->nstreams; i++)
        if (!g_xdp.state->s[i].done)
            return false;
    return true;
}

/* Run the load through the XDP path and the probes (if any) on the sockets, on one clock. */
static void run_xdp_tx(struct config *c)
{
    struct xdp_tx *x = &g_xdp;
    long long intended[MAX_STREAMS];
    /* The loop owns its CPU (pinned there, SCHED_FIFO by --sched): it never sleeps, so the
     * probes and the rest of this process keep off that CPU where the host has another. */
    int err = pthread_create(&x->thread, NULL, xdp_tx_main, x);
    if (err)
        setup_fail("cannot start the XDP TX thread: %s", strerror(err));
    cpu_set_t others;
    if (x->cpu >= 0 && sched_getaffinity(0, sizeof others, &others) == 0) {
        CPU_CLR(x->cpu, &others);
        if (CPU_COUNT(&others) > 0)
            sched_setaffinity(0, sizeof others, &others);
    }
    /* The first run of the kernel loop sets up its page pool (milliseconds): the schedules
     * start once it runs, so that no frame is late from the start. */
    int64_t wait_until = mono_ns() + NS_PER_S;
    while (!x->state->ticks && !atomic_load(&x->exited) && !g_interrupted && mono_ns() < wait_until)
        sleep_until_mono(mono_ns() + 100000);
    if (!x->state->ticks && !g_interrupted) {
        x->state->stop = 1;
        pthread_kill(x->thread, SIGUSR1);
        pthread_join(x->thread, NULL);
        setup_fail("the XDP TX loop did not start: %s", x->err ? strerror(x->err) : "no run within 1 s");
    }
    int64_t t0 = mono_ns() + XDP_LEAD_NS;
    x->state->t0_ns = (uint64_t)t0;
    for (int i = 0; i < c->nstreams; i++) {
        intended[i] = c->streams[i].intended;
        c->streams[i].intended = 0;  /* the main loop paces the probes only */
    }
    run_tx(c, t0, SPIN_NS, false);  /* probes only; this thread runs SCHED_OTHER */
    int64_t give_up = t0 + (int64_t)llround(c->duration * (1 + 2 * MAX_SLIP) * 1e9) + NS_PER_S;
    while (!g_interrupted && !xdp_streams_done(c) && mono_ns() < give_up && !atomic_load(&x->exited))
        sleep_until_mono(mono_ns() + 200000);
    x->state->stop = 1;
    while (!atomic_load(&x->exited)) {
        pthread_kill(x->thread, SIGUSR1);
        sleep_until_mono(mono_ns() + 10000000);
    }
    pthread_join(x->thread, NULL);
    if (x->err)
        setup_fail("the XDP TX loop failed: %s", strerror(x->err));
    for (int i = 0; i < c->nstreams; i++) {
        struct stream *s = &c->streams[i];
        const volatile struct nfvl_tx_stream_state *st = &x->state->s[i];
        s->intended = intended[i];
        s->sent = s->attempted = (long long)st->sent;
        s->slip_ns = (int64_t)st->slip_ns;
        s->last_send_ns = (int64_t)st->last_send_ns;
        s->max_backlog = llround((double)st->max_lag_ns * s->rate / 1e9);
    }
    c->stall_total_ns = (int64_t)x->state->stall_total_ns;
    c->stall_max_ns = (int64_t)x->state->stall_max_ns;
    c->stalls = (long long)x->state->stalls;
}

/* ---------- results ---------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of n sorted values, pct in per mille (999 = p99.9). */
static int64_t percentile(const int64_t *v, long long n, int permille)
{
    long long rank = (permille * n + 999) / 1000;
    return v[(rank < 1 ? 1 : rank) - 1];
}

/*
 * min/avg/max and exact nearest-rank percentiles of the probes that came
 * back, and every sample (sorted, nanoseconds): nfvlab turns them into an HDR
 * histogram, so nothing is binned here.
 */
static void print_latency(struct stream *s)
{
    static const int permille[] = {500, 900, 950, 990, 999};
    static const char *const names[] = {"p50_ns", "p90_ns", "p95_ns", "p99_ns", "p999_ns"};
    long long n = 0;
    printf("\"latency\":{\"probes_sent\":%lld,\"probes_received\":%lld,", s->probes_sent, s->nsamples);
    for (long long i = 0; i < s->probes_intended; i++)
        if (s->samples[i] != NO_SAMPLE)
            s->samples[n++] = s->samples[i];
    if (n == 0) {
        printf("\"min_ns\":null,\"avg_ns\":null,\"max_ns\":null");
        for (size_t q = 0; q < sizeof permille / sizeof *permille; q++)
            printf(",\"%s\":null", names[q]);
        printf(",\"samples_ns\":[]}");
        return;
    }
    qsort(s->samples, (size_t)n, sizeof *s->samples, cmp_i64);
    double sum = 0;
    for (long long i = 0; i < n; i++)
        sum += (double)s->samples[i];
    printf("\"min_ns\":%lld,\"avg_ns\":%.1f,\"max_ns\":%lld", (long long)s->samples[0], sum / (double)n,
           (long long)s->samples[n - 1]);
    for (size_t q = 0; q < sizeof permille / sizeof *permille; q++)
        printf(",\"%s\":%lld", names[q], (long long)percentile(s->samples, n, permille[q]));
    printf(",\"samples_ns\":[");
    for (long long i = 0; i < n; i++)
        printf("%s%lld", i ? "," : "", (long long)s->samples[i]);
    printf("]}");
}

/*
 * What stream i's rx port counted: unique test frames (load + probes),
 * duplicates, reordered, and the port's foreign frames. A port shared by two
 * streams reports its foreign frames with the first of them (so sums over
 * streams count each frame once) and 0 with the other.
 */
static void print_counts(const struct config *c, int i)
{
    const struct stream *s = &c->streams[i];
    if (s->counter < 0) {
        printf("\"received\":null,\"received_load\":null,\"received_probes\":null,\"duplicates\":null,"
               "\"reordered\":null,\"foreign\":null,\"foreign_stale\":null,");
        return;
    }
    const struct counter *k = &c->counters[s->counter];
    int load = i * NFVL_KINDS + NFVL_KIND_LOAD, probe = i * NFVL_KINDS + NFVL_KIND_PROBE;
    bool first = true;
    for (int j = 0; j < i; j++)
        first = first && c->streams[j].counter != s->counter;
    printf("\"received\":%llu,\"received_load\":%llu,\"received_probes\":%llu,\"duplicates\":%llu,"
           "\"reordered\":%llu,\"foreign\":%llu,\"foreign_stale\":%llu,",
           k->received[load] + k->received[probe], k->received[load], k->received[probe],
           (unsigned long long)(k->seq[load].duplicates + k->seq[probe].duplicates),
           (unsigned long long)(k->seq[load].reordered + k->seq[probe].reordered),
           first ? k->port_stats[NFVL_FOREIGN] : 0ULL, first ? k->port_stats[NFVL_STALE] : 0ULL);
}

static void print_json(struct config *c)
{
    printf("{\"version\":2,\"duration_s\":%.9g,\"interrupted\":%s,\"trial_id\":%u,\"counting\":\"%s\","
           "\"sched\":\"%s\",\"qdisc_bypass\":%s,\"tx\":\"%s\",\"ticks\":%llu,"
           "\"stall_total_s\":%.6f,\"stall_max_s\":%.6f,\"stalls\":%lld,\"slip_budget_s\":%.6f,"
           "\"stall_threshold_s\":%.6f,\"streams\":[", c->duration,
           g_interrupted ? "true" : "false", c->trial_id, c->hook_used, c->sched_used ? c->sched_used : "other",
           c->qdisc_bypass ? "true" : "false", c->tx,
           g_xdp.state ? (unsigned long long)g_xdp.state->ticks : 0ULL,
           (double)c->stall_total_ns / 1e9, (double)c->stall_max_ns / 1e9, c->stalls, MAX_SLIP * c->duration,
           (double)STALL_NS / 1e9);
    for (int i = 0; i < c->nstreams; i++) {
        struct stream *s = &c->streams[i];
        printf("%s{\"tx\":\"%s\",\"rx\":\"%s\",\"rate_pps\":%.12g,\"intended\":%lld,\"sent\":%lld,"
               "\"send_errors\":%lld,\"tx_elapsed_s\":%.6f,\"slip_s\":%.6f,\"burst\":%d,\"max_backlog\":%lld,"
               "\"probes_intended\":%lld,",
               i ? "," : "", s->tx.spec, s->rx.spec, s->rate, s->intended, s->sent, s->send_errors,
               (double)s->last_send_ns / 1e9, (double)s->slip_ns / 1e9, s->burst, s->max_backlog,
               s->probes_intended);
        print_counts(c, i);
        printf("\"frame_sizes\":[");
        for (int z = 0; z < c->nsizes; z++)
            printf("%s%d", z ? "," : "", c->sizes[z]);
        printf("],");
        print_latency(s);
        printf("}");
    }
    printf("]}\n");
    fflush(stdout);
}

/* ---------- main ---------- */

static void on_signal(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

static void setup_signals(void)
{
    /* No SA_RESTART: a signal must cut short a blocked send or sleep. */
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* RX threads are started with signals blocked so signals land on the TX (main) thread. */
static void start_rx_threads(struct config *c, struct rx_arg *args)
{
    sigset_t all, old;
    sigemptyset(&all);
    sigaddset(&all, SIGINT);
    sigaddset(&all, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (int i = 0; i < c->nstreams; i++) {
        args[i] = (struct rx_arg){&c->streams[i], i, c->trial_id};
        int err = pthread_create(&c->streams[i].rx_thread, NULL, rx_main, &args[i]);
        if (err)
            setup_fail("cannot start RX thread: %s", strerror(err));
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void prepare_stream(struct config *c, int i)
{
    struct stream *s = &c->streams[i];
    s->intended = llround(s->rate * c->duration);
    s->probes_intended = c->latency_pps > 0 ? llround(c->latency_pps * c->duration) : 0;
    s->samples = malloc(((size_t)s->probes_intended + 1) * sizeof *s->samples);
    s->probe_tx_ns = calloc((size_t)s->probes_intended + 1, sizeof *s->probe_tx_ns);
    if (!s->samples || !s->probe_tx_ns)
        setup_fail("out of memory for %lld latency samples", s->probes_intended);
    s->counter = -1;
    for (long long k = 0; k < s->probes_intended; k++)
        s->samples[k] = NO_SAMPLE;
    build_frames(c, s, i);
    open_tx(c, s);
    open_rx(s);
}

int main(int argc, char **argv)
{
    static struct config cfg;
    struct rx_arg args[MAX_STREAMS];
    parse_args(&cfg, argc, argv);
    g_cfg = &cfg;
    if (!cfg.have_trial_id && getrandom(&cfg.trial_id, sizeof cfg.trial_id, 0) != sizeof cfg.trial_id)
        setup_fail("cannot draw a trial id: %s", strerror(errno));
    setup_signals();
    g_home_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (g_home_ns < 0)
        setup_fail("cannot open /proc/self/ns/net: %s", strerror(errno));
    for (int i = 0; i < cfg.nstreams; i++)
        prepare_stream(&cfg, i);
    setup_counters(&cfg);
    if (!strcmp(cfg.tx, "xdp"))
        setup_xdp_tx(&cfg);
    start_rx_threads(&cfg, args);
    if (cfg.cpu >= 0 && strcmp(cfg.tx, "xdp")) { /* after the RX threads, so they do not inherit the pin */
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cfg.cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) < 0)
            setup_fail("cannot pin the TX thread to CPU %d: %s", cfg.cpu, strerror(errno));
    }
    if (!strcmp(cfg.tx, "xdp")) {
        run_xdp_tx(&cfg);
    } else {
        set_tx_sched(&cfg);
        run_tx(&cfg, mono_ns(), strcmp(cfg.sched_used, "fifo") ? SPIN_NS : SPIN_FIFO_NS, true);
    }
    /* Frames still in flight (probes, and load frames when counting) get --settle-ms to arrive. */
    if (cfg.settle_ms > 0 && (cfg.latency_pps > 0 || cfg.ncounters > 0))
        sleep_until_mono(mono_ns() + (int64_t)cfg.settle_ms * 1000000);
    atomic_store(&g_rx_stop, 1);
    for (int i = 0; i < cfg.nstreams; i++)
        pthread_join(cfg.streams[i].rx_thread, NULL);
    read_counters(&cfg);
    print_json(&cfg);
    return g_interrupted ? 130 : 0;
}
