/*
 * nfvlab-gen: rate-controlled Ethernet/IPv4/UDP generator on AF_PACKET sockets.
 *
 * One trial per run (or one per line on stdin with --serve: see serve()): every stream sends llround(rate * duration) frames spread
 * evenly over the duration, plus latency probes received back on the stream's
 * rx port. Every frame carries the trial's signature (nfvlab_count.h: magic,
 * trial id, stream, kind, sequence number). With --count-obj, a BPF program at
 * each rx port's ingress counts per stream the unique test frames received,
 * duplicates and reordered frames, and per port the foreign frames (anything
 * without this trial's signature); counters are read once traffic has stopped
 * and every frame sent has been counted, or --settle-ms has passed (settle).
 * Prints one JSON object on stdout.
 *
 * Pacing (see "Pacing" in nfvlab_gen_pacing.c): the TX thread runs
 * SCHED_FIFO where permitted (--sched), sends at most the frames due in
 * PACE_NS at once ("burst"), and never a catch-up burst ("max_batch" <=
 * "burst"): after it fell behind its schedule slips ("slip_s"), and what a
 * stream has not sent when the window (the duration plus MAX_SLIP of it) ends
 * is "unsent"; the generator's fault when the slip its own time off the CPU
 * caused ("slip_own_s") exceeds the budget, else loss.
 *
 * Exit codes: 0 ok, 2 bad arguments, 3 setup failure, 130 interrupted.
 * Frame sizes include the 4-byte FCS (RFC 2544), which veth does not carry,
 * so a frame of size N is sent as N-4 bytes.
 *
 * Sources (one binary, compiled together; nfvlab/traffic/embedded/binary.py):
 *   nfvlab_gen.h          what they share: limits, struct config, helpers
 *   nfvlab_gen.c          this file: the run from start to end (main), errors
 *   nfvlab_gen_args.c     the command line
 *   nfvlab_gen_frames.c   frame headers and the trial's signature
 *   nfvlab_gen_socket.c   network namespaces, AF_PACKET sockets and sends
 *   nfvlab_gen_pacing.c   the TX loop: schedules, slip, stalls
 *   nfvlab_gen_xdp.c      the XDP transmit path (--tx xdp, nfvlab_tx.bpf.c)
 *   nfvlab_gen_latency.c  probes coming back: RX threads, latency samples
 *   nfvlab_gen_count.c    the BPF counter at the rx ports (nfvlab_count.bpf.c)
 *   nfvlab_gen_report.c   the JSON report
 */
#include "nfvlab_gen.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

volatile sig_atomic_t g_interrupted;
atomic_int g_rx_stop;
int g_home_ns = -1;         /* fd of the namespace we started in */
struct config *g_cfg;       /* for the exit-time detach of legacy tc filters */

/* ---------- errors ---------- */

_Noreturn void fail(int code, const char *fmt, ...)
{
    va_list ap;
    fputs("nfvlab-gen: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

/* ---------- main ---------- */

static void on_signal(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

static void on_wake(int sig) { (void)sig; }

static void setup_signals(void)
{
    /* No SA_RESTART: a signal must cut short a blocked send or sleep. */
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* Wakes an RX thread from its recvmsg once the trial is over (else its 20 ms timeout does). */
    struct sigaction wake = {.sa_handler = on_wake};
    sigemptyset(&wake.sa_mask);
    sigaction(SIGUSR2, &wake, NULL);
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
    open_tx(c, s, i);
    open_rx(s, i);
}

/*
 * Settling: frames still in flight get until `deadline` to arrive. With
 * counters, the wait ends sooner once every frame sent (load and probes) has
 * been counted at its rx port and every probe received has its sample: then
 * nothing of this trial is left in the DUT's queues. A check is a pass over
 * the bitmap, so the checks are 1, 2, 4, ... ms apart.
 */
static void settle(struct config *c, int64_t deadline)
{
    for (int64_t step = 1000000; !g_interrupted && mono_ns() < deadline; step *= 2) {
        if (c->ncounters > 0 && all_counted(c))
            return;
        int64_t next = mono_ns() + step;
        sleep_until_mono(next < deadline ? next : deadline);
    }
}

/* One trial of the parsed configuration `cfg`, from setup to its JSON report. */
static void run_trial(struct config *cfg)
{
    struct rx_arg args[MAX_STREAMS];
    g_cfg = cfg;
    atomic_store(&g_rx_stop, 0);
    if (!cfg->have_trial_id && getrandom(&cfg->trial_id, sizeof cfg->trial_id, 0) != sizeof cfg->trial_id)
        setup_fail("cannot draw a trial id: %s", strerror(errno));
    for (int i = 0; i < cfg->nstreams; i++)
        prepare_stream(cfg, i);
    setup_counters(cfg);
    if (!strcmp(cfg->tx, "xdp"))
        setup_xdp_tx(cfg);
    start_rx_threads(cfg, args);
    if (cfg->cpu >= 0 && strcmp(cfg->tx, "xdp")) { /* after the RX threads, so they do not inherit the pin */
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cfg->cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) < 0)
            setup_fail("cannot pin the TX thread to CPU %d: %s", cfg->cpu, strerror(errno));
    }
    if (!strcmp(cfg->tx, "xdp")) {
        run_xdp_tx(cfg);
    } else {
        set_tx_sched(cfg);
        run_tx(cfg, mono_ns(), strcmp(cfg->sched_used, "fifo") ? SPIN_NS : SPIN_FIFO_NS, true);
    }
    /* Frames still in flight (probes, and load frames when counting) get --settle-ms to arrive. */
    if (cfg->settle_ms > 0 && (cfg->latency_pps > 0 || cfg->ncounters > 0))
        settle(cfg, mono_ns() + (int64_t)cfg->settle_ms * 1000000);
    atomic_store(&g_rx_stop, 1);
    for (int i = 0; i < cfg->nstreams; i++)
        pthread_kill(cfg->streams[i].rx_thread, SIGUSR2);
    for (int i = 0; i < cfg->nstreams; i++)
        pthread_join(cfg->streams[i].rx_thread, NULL);
    read_counters(cfg);
    print_json(cfg);
}

/* What a trial allocated; the sockets and BPF programs stay for the next one. */
static void end_trial(struct config *cfg)
{
    for (int i = 0; i < cfg->nstreams; i++) {
        struct stream *s = &cfg->streams[i];
        free(s->samples);
        free(s->probe_tx_ns);
        free(s->hdrs);
        s->samples = s->probe_tx_ns = NULL;
        s->hdrs = NULL;
    }
}

/*
 * --serve [LABEL...]: one process for many trials (the labels, ignored, say
 * in ps whose ports it serves). Each line on stdin holds one trial's
 * options (those of a one-shot run, separated by tabs); its JSON report is one
 * line on stdout. The packet sockets and the BPF programs (counters, XDP
 * path) are set up by the first trial that needs them and kept; each trial
 * draws its own trial id, and the counters start from zero. Ends at EOF on
 * stdin (the parent closed it, or died) with 0; a bad line or a failed setup
 * ends it as a one-shot run would (exit 2 or 3, one line on stderr), and an
 * interrupted trial reports and ends it with 130.
 */
static int serve(void)
{
    static struct config cfg;
    char *line = NULL, *argv[256];
    size_t cap = 0;
    cpu_set_t home_cpus;
    struct sched_param home_prio;
    int home_policy;
    signal(SIGPIPE, SIG_IGN);  /* a parent gone mid-trial: the report fails to write, then EOF ends us */
    if (sched_getaffinity(0, sizeof home_cpus, &home_cpus) < 0 ||
        pthread_getschedparam(pthread_self(), &home_policy, &home_prio))
        setup_fail("cannot read this thread's CPUs and scheduling: %s", strerror(errno));
    for (ssize_t n; !g_interrupted && (n = getline(&line, &cap, stdin)) > 0;) {
        int argc = 0;
        if (line[n - 1] == '\n')
            line[--n] = '\0';
        if (n == 0)
            continue;
        argv[argc++] = "nfvlab-gen";
        for (char *save = NULL, *tok = strtok_r(line, "\t", &save); tok; tok = strtok_r(NULL, "\t", &save)) {
            if (argc == (int)(sizeof argv / sizeof *argv) - 1)
                bad_arg("a --serve line has more than %d options", argc - 1);
            argv[argc++] = tok;
        }
        argv[argc] = NULL;
        parse_args(&cfg, argc, argv);
        cfg.serving = true;
        run_trial(&cfg);
        end_trial(&cfg);
        /* The next trial's RX threads must not inherit the TX thread's pin or policy. */
        sched_setaffinity(0, sizeof home_cpus, &home_cpus);
        pthread_setschedparam(pthread_self(), home_policy, &home_prio);
    }
    free(line);
    return g_interrupted ? 130 : 0;
}

int main(int argc, char **argv)
{
    static struct config cfg;
    if (argc == 2 && !strcmp(argv[1], "--probe-xdp"))
        return probe_xdp_live();
    bool serving = argc >= 2 && !strcmp(argv[1], "--serve");  /* words after it only name it in ps */
    if (!serving)
        parse_args(&cfg, argc, argv);
    setup_signals();
    g_home_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (g_home_ns < 0)
        setup_fail("cannot open /proc/self/ns/net: %s", strerror(errno));
    if (serving)
        return serve();
    run_trial(&cfg);
    return g_interrupted ? 130 : 0;
}
