/* nfvlab_gen_xdp.c - the XDP transmit path (--tx xdp): nfvlab_tx.bpf.c loaded and run. */
#include "nfvlab_gen.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/*
 * Load frames go out through nfvlab_tx.bpf.c run in live-frames mode by one
 * thread (see nfvlab_tx.h); probes stay on the AF_PACKET sockets, sent by the
 * main thread on the same clock. The kernel loop ends only when the thread
 * gets a signal (SIGUSR1, sent until it has left), so the loop is told to
 * stop first and then woken. A tx port must accept XDP frames (ndo_xdp_xmit):
 * a NIC whose driver has it, or a veth whose peer runs NAPI (GRO on, or an
 * XDP program); on any other port the redirect fails and the frames count as
 * lost, which the driver (generator.py) rules out before it starts a trial.
 *
 * The loop does not sleep, whatever the rate: it could only sleep between two
 * calls of the kernel loop, and each new call costs ~27 ms here (measured: a
 * loop run in calls of 64 runs managed 37 calls a second, blocked in between,
 * 72 of 10,000 frames at 10 kpps), so the thread stays in one call until the end.
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
    /* The loaded program, kept for later trials (--serve) that fit it: */
    char ns[sizeof ((struct port *)0)->ns]; /* the namespace it was loaded in */
    uint32_t hdrs_cap, mix_cap;             /* entries of tx_hdrs and tx_mix */
};

static struct xdp_tx g_xdp;

static void on_wake(int sig) { (void)sig; }

/* The test hook on the XDP path: interrupt the kernel loop; its thread then sleeps `ns` before
 * running it again, a stall of known size that the BPF program must see. */
void xdp_request_stall(int64_t ns)
{
    atomic_store(&g_xdp.stall_req_ns, (long long)ns);
    pthread_kill(g_xdp.thread, SIGUSR1);
}

/* What the kernel loop counted of its runs (0 before --tx xdp set it up), for the report. */
unsigned long long xdp_ticks(void) { return g_xdp.state ? (unsigned long long)g_xdp.state->ticks : 0ULL; }

/* Whether the program loaded for an earlier trial serves this one (else it is unloaded). */
static bool xdp_kept(const struct config *c)
{
    struct xdp_tx *x = &g_xdp;
    if (!x->obj)
        return false;
    if (!strcmp(x->ns, c->streams[0].tx.ns) && x->hdrs_cap >= (uint32_t)(c->nstreams * c->nsizes * c->flows) &&
        x->mix_cap >= (uint32_t)c->period)
        return true;
    munmap((void *)x->state, sizeof(struct nfvl_tx_state));
    bpf_object__close(x->obj);
    x->obj = NULL;
    x->state = NULL;
    return false;
}

void setup_xdp_tx(struct config *c)
{
    struct xdp_tx *x = &g_xdp;
    bool kept = xdp_kept(c);
    x->c = x->c_mut = c;
    x->cpu = c->cpu;
    x->frame_len = 0;
    x->err = 0;
    atomic_store(&x->exited, 0);
    libbpf_set_print(libbpf_quiet);
    if (!kept) {
        x->obj = bpf_object__open_file(c->tx_obj, NULL);
        if (!x->obj)
            setup_fail("cannot open %s: %s", c->tx_obj, strerror(errno));
    }
    struct bpf_map *cfg = need_map(x->obj, "tx_cfg"), *state = need_map(x->obj, "tx_state"),
                   *hdrs = need_map(x->obj, "tx_hdrs"), *mix = need_map(x->obj, "tx_mix");
    if (!kept) {
        x->hdrs_cap = (uint32_t)(c->nstreams * c->nsizes * c->flows);
        x->mix_cap = (uint32_t)c->period;
        bpf_map__set_max_entries(hdrs, x->hdrs_cap);
        bpf_map__set_max_entries(mix, x->mix_cap);
        snprintf(x->ns, sizeof x->ns, "%s", c->streams[0].tx.ns);
    }
    /* Ifindexes and the redirect are resolved in the tx ports' namespace (checked: all in one). */
    enter_ns(c->streams[0].tx.ns);
    struct nfvl_tx_cfg v = {.nstreams = (uint32_t)c->nstreams, .period = (uint32_t)c->period,
                            .nsizes = (uint32_t)c->nsizes, .batch = XDP_BATCH};
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
        sc->burst_ns = (uint64_t)llround((double)(sc->burst - 1) * 1e9 / s->rate);
        sc->slip_budget_ns = (uint64_t)(MAX_SLIP * c->duration * 1e9);
        sc->duration_ns = (uint64_t)llround(c->duration * 1e9);
        sc->flows = (uint32_t)c->flows;
        sc->hdr_base = (uint32_t)(i * c->nsizes * c->flows);
        memcpy(sc->sig, s->sig, NFVL_TX_SIG_PREFIX);
        s->burst = (int)sc->burst;
    }
    if (!kept && bpf_object__load(x->obj))
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
    if (!kept) {
        void *m = mmap(NULL, sizeof(struct nfvl_tx_state), PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(state), 0);
        if (m == MAP_FAILED)
            setup_fail("cannot map tx_state: %s", strerror(errno));
        x->state = m;
    }
    memset((void *)x->state, 0, sizeof(struct nfvl_tx_state));  /* as loaded: a kept one ran a trial */
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
        x->state->call_runs = 0;  /* the program tells batches apart by its runs in this call */
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
void run_xdp_tx(struct config *c)
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
        s->slip_own_ns = (int64_t)st->slip_own_ns;
        s->max_batch = (int)st->max_batch;
        s->last_send_ns = (int64_t)st->last_send_ns;
        s->max_backlog = llround((double)st->max_lag_ns * s->rate / 1e9);
    }
    c->softirq_gap_ns = (int64_t)x->state->softirq_gap_ns;
    c->softirq_gaps = (long long)x->state->softirq_gaps;
    c->stall_total_ns = (int64_t)x->state->stall_total_ns;
    c->stall_max_ns = (int64_t)x->state->stall_max_ns;
    c->stalls = (long long)x->state->stalls;
}


/* --probe-xdp: whether this kernel runs an XDP program in live-frames mode (some sandboxed
 * kernels refuse it with EPERM, though plain test runs work). The probe's program drops its one
 * frame, so nothing is sent. Prints "ok" or the kernel's refusal; exits 0 or 1. */
int probe_xdp_live(void)
{
    struct bpf_insn prog[] = {
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = XDP_DROP},
        {.code = BPF_JMP | BPF_EXIT},
    };
    int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "nfvlab_probe", "GPL", prog, 2, NULL);
    if (fd < 0) {
        printf("cannot load an XDP program: %s\n", strerror(errno));
        return 1;
    }
    uint8_t frame[64] = {0};
    LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = sizeof frame, .repeat = 1,
                .flags = BPF_F_TEST_XDP_LIVE_FRAMES, .batch_size = 1);
    int err = bpf_prog_test_run_opts(fd, &o) ? errno : 0;
    close(fd);
    printf("%s\n", err ? strerror(err) : "ok");
    return err ? 1 : 0;
}
