/* nfvlab_gen_latency.c - latency probes coming back: one RX thread per stream, a sample per probe. */
#include "nfvlab_gen.h"

#include <string.h>
#include <sys/socket.h>

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

/* RX threads are started with signals blocked so signals land on the TX (main) thread. */
void start_rx_threads(struct config *c, struct rx_arg *args)
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
