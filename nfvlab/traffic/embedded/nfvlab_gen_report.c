/* nfvlab_gen_report.c - the JSON report on stdout: counts, latency, stalls. */
#include "nfvlab_gen.h"

#include <stdio.h>
#include <stdlib.h>

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

void print_json(struct config *c)
{
    printf("{\"version\":2,\"duration_s\":%.9g,\"interrupted\":%s,\"trial_id\":%u,\"counting\":\"%s\","
           "\"sched\":\"%s\",\"qdisc_bypass\":%s,\"tx\":\"%s\",\"ticks\":%llu,"
           "\"stall_total_s\":%.6f,\"stall_max_s\":%.6f,\"stalls\":%lld,\"slip_budget_s\":%.6f,"
           "\"stall_threshold_s\":%.6f,\"softirq_gap_s\":%.6f,\"softirq_gaps\":%lld,\"streams\":[",
           c->duration,
           g_interrupted ? "true" : "false", c->trial_id, c->hook_used, c->sched_used ? c->sched_used : "other",
           c->qdisc_bypass ? "true" : "false", c->tx,
           xdp_ticks(),
           (double)c->stall_total_ns / 1e9, (double)c->stall_max_ns / 1e9, c->stalls, MAX_SLIP * c->duration,
           (double)STALL_NS / 1e9, (double)c->softirq_gap_ns / 1e9, c->softirq_gaps);
    for (int i = 0; i < c->nstreams; i++) {
        struct stream *s = &c->streams[i];
        printf("%s{\"tx\":\"%s\",\"rx\":\"%s\",\"rate_pps\":%.12g,\"intended\":%lld,\"sent\":%lld,"
               "\"send_errors\":%lld,\"unsent\":%lld,\"tx_elapsed_s\":%.6f,\"slip_s\":%.6f,\"slip_own_s\":%.6f,"
               "\"burst\":%d,\"max_batch\":%d,\"max_backlog\":%lld,\"probes_intended\":%lld,",
               i ? "," : "", s->tx.spec, s->rx.spec, s->rate, s->intended, s->sent, s->send_errors,
               s->intended - s->attempted, (double)s->last_send_ns / 1e9, (double)s->slip_ns / 1e9,
               (double)s->slip_own_ns / 1e9, s->burst, s->max_batch, s->max_backlog, s->probes_intended);
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
