/* nfvlab_gen_args.c - nfvlab-gen's command line: options, their checks, --help. */
#include "nfvlab_gen.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PROBES 10000000LL /* keeps the send-time and sample arrays under ~160 MB */
#define MAX_COUNTED_BITS (1ULL << 32) /* bitmap per rx port: 512 MiB at most */

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
    "                  --stream 'tx=NS:IF,rx=NS:IF,rate=PPS,smac=MAC,dmac=MAC,sip=IP,dip=IP' [--stream ...]\n"
    "       nfvlab-gen --serve [LABEL...]   (one trial per line on stdin: the options above, tab-separated;\n"
    "                                        the labels only name the process, e.g. its ports)\n";

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

void parse_args(struct config *c, int argc, char **argv)
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
