/* nfvlab_gen_frames.c - the frames: Ethernet/IPv4/UDP headers per (size, flow) and the trial's signature. */
#include "nfvlab_gen.h"

#include <linux/if_ether.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

static uint16_t ip_checksum(const uint8_t *p, size_t len)
{
    uint32_t sum = 0;
    for (size_t i = 0; i + 1 < len; i += 2)
        sum += (uint32_t)p[i] << 8 | p[i + 1];
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

/* The signature of a frame of this trial (nfvlab_count.h); the sequence number is put by put_seq. */
static void build_sig(uint8_t *sig, uint32_t trial_id, int idx, int kind)
{
    memcpy(sig, PROBE_MAGIC, 4);
    put32(sig + 4, trial_id);
    sig[8] = (uint8_t)idx;
    sig[9] = (uint8_t)kind;
    memset(sig + 10, 0, 8);
}

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
void build_frames(struct config *c, struct stream *s, int idx)
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
