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

/*
 * The counters loaded so far, for the trials after the first (--serve): one per
 * rx port, kept loaded (not attached) between trials with the bitmap size it
 * was loaded with; a trial that needs a larger bitmap loads a new copy.
 */
struct loaded_counter {
    struct port port;
    const char *count_obj;   /* the object it was loaded from (argv or a --serve line: copied) */
    struct bpf_object *obj;
    int prog_fd, seq_fd, port_fd, cfg_fd;
    uint64_t *bits;
    size_t bits_len;
    uint64_t words;
    bool attached;           /* --serve: it stays attached between trials (see load_counter) */
    struct counter att;      /* its attachment (link_fd, tc_*, ifindex) */
    const char *hook;        /* "tcx" or "tc" */
};
static struct loaded_counter g_loaded[2 * MAX_STREAMS];
static int g_nloaded;

static void detach_loaded(struct loaded_counter *l);

static void unload(struct loaded_counter *l)
{
    detach_loaded(l);
    free((void *)l->count_obj);
    munmap(l->bits, l->bits_len);
    bpf_object__close(l->obj);
    *l = g_loaded[--g_nloaded];
}

static bool rx_port_of(const struct config *c, const struct port *port)
{
    for (int i = 0; i < c->nstreams; i++)
        if (same_port(&c->streams[i].rx, port))
            return true;
    return false;
}

/* A loaded counter for `port` with at least `words` of bitmap (a smaller one is unloaded), or NULL;
 * room is made for a new one by unloading one this trial does not use. */
static struct loaded_counter *find_loaded(const struct config *c, const struct port *port, uint64_t words)
{
    for (int i = 0; i < g_nloaded; i++) {
        if (!same_port(&g_loaded[i].port, port))
            continue;
        if (g_loaded[i].words >= words && !strcmp(g_loaded[i].count_obj, c->count_obj) &&
            (!strcmp(c->count_hook, "auto") || !g_loaded[i].attached || !strcmp(c->count_hook, g_loaded[i].hook)))
            return &g_loaded[i];
        unload(&g_loaded[i]);
        return NULL;
    }
    for (int i = 0; g_nloaded == (int)(sizeof g_loaded / sizeof *g_loaded) && i < g_nloaded; i++)
        if (!rx_port_of(c, &g_loaded[i].port))
            unload(&g_loaded[i]);
    return NULL;
}

/* Load a copy of the counter program for `port` with a bitmap of `words` words. */
static struct loaded_counter *load_new(const struct config *c, const struct port *port, uint64_t words)
{
    struct loaded_counter *l = &g_loaded[g_nloaded];
    memset(l, 0, sizeof *l);
    l->port = *port;
    l->words = words;
    l->count_obj = strdup(c->count_obj);
    if (!l->count_obj)
        setup_fail("out of memory");
    l->obj = bpf_object__open_file(c->count_obj, NULL);
    if (!l->obj)
        setup_fail("cannot open the counter BPF object %s: %s", c->count_obj, strerror(errno));
    struct bpf_map *bitmap = need_map(l->obj, "bitmap");
    if (bpf_map__set_max_entries(bitmap, (uint32_t)words) < 0)
        setup_fail("cannot size the counter's bitmap to %llu words", (unsigned long long)words);
    int err = bpf_object__load(l->obj);
    if (err)
        setup_fail("cannot load the counter BPF program (%s): %s (needs root, Linux >= 5.12)",
                   c->count_obj, strerror(-err));
    struct bpf_program *prog = bpf_object__find_program_by_name(l->obj, "nfvl_count");
    if (!prog)
        setup_fail("%s has no program nfvl_count", c->count_obj);
    l->prog_fd = bpf_program__fd(prog);
    l->seq_fd = bpf_map__fd(need_map(l->obj, "seq_stats"));
    l->port_fd = bpf_map__fd(need_map(l->obj, "port_stats"));
    l->cfg_fd = bpf_map__fd(need_map(l->obj, "cfg"));
    l->bits_len = (size_t)words * 8;
    long page = sysconf(_SC_PAGESIZE);
    l->bits_len = (l->bits_len + (size_t)page - 1) / (size_t)page * (size_t)page;
    /* Writable: a later trial zeroes the bitmap it reuses. */
    l->bits = mmap(NULL, l->bits_len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(bitmap), 0);
    if (l->bits == MAP_FAILED)
        setup_fail("cannot map the counter's bitmap: %s", strerror(errno));
    g_nloaded++;
    return l;
}

/*
 * Ready a counter for port k (loaded, or kept from an earlier trial and zeroed),
 * sized to its streams. A kept counter is still attached (attach and detach
 * wait for the kernel's RCU grace periods: ~10 ms each); it is configured for
 * this trial first and zeroed after, so no frame of an earlier trial counted
 * meanwhile stays counted, and none of this one has been sent yet.
 */
static struct loaded_counter *load_counter(struct config *c, struct counter *k)
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
    struct loaded_counter *l = find_loaded(c, k->port, words);
    uint32_t zero = 0;
    if (l) {
        if (bpf_map_update_elem(l->cfg_fd, &zero, &k->cfg, BPF_ANY) < 0)
            setup_fail("cannot configure the counter: %s", strerror(errno));
        struct nfvl_seq_stats none = {0};
        uint64_t zero64 = 0;
        for (uint32_t slot = 0; slot < NFVL_SLOTS; slot++)
            if (bpf_map_update_elem(l->seq_fd, &slot, &none, BPF_ANY) < 0)
                setup_fail("cannot reset the counter: %s", strerror(errno));
        for (uint32_t key = 0; key < NFVL_PORT_N; key++)
            if (bpf_map_update_elem(l->port_fd, &key, &zero64, BPF_ANY) < 0)
                setup_fail("cannot reset the counter: %s", strerror(errno));
        memset(l->bits, 0, (size_t)words * 8);
    } else {
        l = load_new(c, k->port, words);
    }
    k->prog_fd = l->prog_fd;
    k->seq_fd = l->seq_fd;
    k->port_fd = l->port_fd;
    k->bits = l->bits;
    k->bits_len = l->bits_len;
    if (bpf_map_update_elem(l->cfg_fd, &zero, &k->cfg, BPF_ANY) < 0)
        setup_fail("cannot configure the counter: %s", strerror(errno));
    return l;
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

static void detach(struct counter *k)
{
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
            return;   /* the namespace is gone, and the filter with it */
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

static void detach_loaded(struct loaded_counter *l)
{
    if (!l->attached)
        return;
    l->att.port = &l->port;  /* entries move in g_loaded */
    detach(&l->att);
    l->attached = false;
}

/* Every counter off its port (also at exit, after errors). */
static void detach_counters(void)
{
    for (int i = 0; i < g_nloaded; i++)
        detach_loaded(&g_loaded[i]);
}

void setup_counters(struct config *c)
{
    c->hook_used = "none";
    if (!c->count_obj)
        return;
    libbpf_set_print(libbpf_quiet);
    plan_counters(c);
    static bool registered;
    if (!registered)
        atexit(detach_counters);
    registered = true;
    for (int i = 0; i < c->ncounters; i++) {
        struct counter *k = &c->counters[i];
        struct loaded_counter *l = load_counter(c, k);
        if (l->attached) {
            c->hook_used = l->hook;
            continue;
        }
        attach_counter(c, k);
        l->att = *k;
        l->hook = c->hook_used;
        l->attached = true;
    }
}

static unsigned long long popcount_bits(const uint64_t *bits, uint64_t first, uint64_t n)
{
    unsigned long long total = 0;
    for (uint64_t w = first / 64; w < (first + n + 63) / 64; w++)
        total += (unsigned long long)__builtin_popcountll(bits[w]);
    return total;
}

/* Whether every frame sent has been counted and every probe counted has its sample (see settle). */
bool all_counted(const struct config *c)
{
    for (int i = 0; i < c->nstreams; i++) {
        const struct stream *s = &c->streams[i];
        if (s->counter < 0)
            return false;
        const struct counter *k = &c->counters[s->counter];
        unsigned long long probes = popcount_bits(k->bits, k->cfg.first_bit[i][NFVL_KIND_PROBE],
                                                  k->cfg.count[i][NFVL_KIND_PROBE]);
        if (popcount_bits(k->bits, k->cfg.first_bit[i][NFVL_KIND_LOAD], k->cfg.count[i][NFVL_KIND_LOAD]) <
                (unsigned long long)s->sent ||
            probes < (unsigned long long)s->probes_sent ||
            __atomic_load_n(&s->nsamples, __ATOMIC_RELAXED) < s->probes_sent)
            return false;
    }
    return true;
}

/* Read every counter (traffic has stopped), then detach (one-shot). */
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
    if (!c->serving)  /* --serve keeps them attached for the next trial (see load_counter) */
        detach_counters();
}
