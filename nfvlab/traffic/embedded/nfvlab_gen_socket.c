/*
 * nfvlab_gen_socket.c - the AF_PACKET path: network namespaces, the packet
 * sockets of the tx ports (load and probes) and rx ports (probes back), and
 * the sends. The load goes out here with --tx socket; see nfvlab_gen_xdp.c
 * for --tx xdp, which sends the probes here too.
 */
#include "nfvlab_gen.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static uint8_t g_zero[MAX_FRAME];  /* shared payload tail of load frames */

/*
 * The sockets opened so far, for the trials after the first (--serve): one per
 * stream index, role and port, so that two streams received on one port still
 * get a copy of each probe each, as in a one-shot run.
 */
struct open_sock {
    int idx;
    bool rx;
    struct port port;
    int fd, mtu;
};
static struct open_sock g_socks[4 * MAX_STREAMS];
static int g_nsocks;

static struct open_sock *find_sock(int idx, bool rx, const struct port *p)
{
    for (int i = 0; i < g_nsocks; i++)
        if (g_socks[i].idx == idx && g_socks[i].rx == rx && !strcmp(g_socks[i].port.ns, p->ns) &&
            !strcmp(g_socks[i].port.ifname, p->ifname))
            return &g_socks[i];
    return NULL;
}

/* Keep socket fd for later trials (the oldest goes when the table is full). */
static void keep_sock(int idx, bool rx, const struct port *p, int fd, int mtu)
{
    if (g_nsocks == (int)(sizeof g_socks / sizeof *g_socks)) {
        close(g_socks[0].fd);
        memmove(g_socks, g_socks + 1, sizeof g_socks - sizeof *g_socks);
        g_nsocks--;
    }
    g_socks[g_nsocks++] = (struct open_sock){.idx = idx, .rx = rx, .port = *p, .fd = fd, .mtu = mtu};
}

void enter_ns(const char *ns)
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

void leave_ns(void)
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

void open_tx(const struct config *c, struct stream *s, int idx)
{
    int mtu = 0, maxsize = 0;
    const struct open_sock *kept = find_sock(idx, false, &s->tx);
    if (kept) {
        s->txfd = kept->fd;
        mtu = kept->mtu;
    } else {
        s->txfd = open_port(&s->tx, 0, NULL, &mtu);
        keep_sock(idx, false, &s->tx, s->txfd, mtu);
    }
    for (int z = 0; z < c->nsizes; z++)
        maxsize = c->sizes[z] > maxsize ? c->sizes[z] : maxsize;
    if (mtu && maxsize - FCS_LEN - 14 > mtu)
        setup_fail("frame size %d needs MTU >= %d on %s, which has %d", maxsize, maxsize - FCS_LEN - 14,
                   s->tx.spec, mtu);
    if (c->sndbuf && setsockopt(s->txfd, SOL_SOCKET, SO_SNDBUFFORCE, &c->sndbuf, sizeof c->sndbuf) < 0)
        setup_fail("cannot set SO_SNDBUFFORCE=%d on %s: %s", c->sndbuf, s->tx.spec, strerror(errno));
    int bypass = c->qdisc_bypass;  /* set either way: a kept socket may have it from an earlier trial */
    if (setsockopt(s->txfd, SOL_PACKET, PACKET_QDISC_BYPASS, &bypass, sizeof bypass) < 0 && bypass)
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

void open_rx(struct stream *s, int idx)
{
    struct sock_fprog prog = {.len = sizeof probe_filter / sizeof probe_filter[0], .filter = probe_filter};
    const struct open_sock *kept = find_sock(idx, true, &s->rx);
    if (kept) {  /* probes of an earlier trial still queued are told apart by their trial id */
        s->rxfd = kept->fd;
        return;
    }
    s->rxfd = open_port(&s->rx, ETH_P_IP, &prog, NULL);
    int one = 1, rcvbuf = 4 << 20;
    if (setsockopt(s->rxfd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) < 0)
        setup_fail("cannot enable SO_TIMESTAMPNS on %s: %s", s->rx.spec, strerror(errno));
    setsockopt(s->rxfd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
    /* RX threads poll the stop flag at this period. */
    struct timeval tmo = {.tv_sec = 0, .tv_usec = 20000};
    setsockopt(s->rxfd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof tmo);
    keep_sock(idx, true, &s->rx, s->rxfd, 0);
}

void send_probe(struct stream *s)
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
void send_load(const struct config *c, struct stream *s, int n, int64_t t0)
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
    s->max_batch = n > s->max_batch ? n : s->max_batch;
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
