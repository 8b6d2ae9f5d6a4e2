/* nfvlab_gen_count.c - counting: nfvlab_count.bpf.c at each rx port's ingress, loaded, attached and read. */
#include "nfvlab_gen.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TCX_INGRESS 46       /* BPF_TCX_INGRESS (Linux 6.6), newer than Debian 12's headers */
#define TCX_F_BEFORE (1U << 3) /* BPF_F_BEFORE: ahead of the port's other programs */
#define TC_HANDLE 0x4e46     /* legacy clsact filter handle/priority of the counter */
#define TC_PRIORITY 1

int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
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

struct bpf_map *need_map(struct bpf_object *obj, const char *name)
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

void setup_counters(struct config *c)
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
void read_counters(struct config *c)
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
