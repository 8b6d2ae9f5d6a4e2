/*
 * nfvlab_gen_pacing.c - the TX loop: each stream's schedule, its slip after
 * stalls, the stalls themselves, and the TX thread's scheduling policy. It
 * sends through nfvlab_gen_socket.c (the load with --tx socket, probes always).
 */
#include "nfvlab_gen.h"

#include <math.h>
#include <sched.h>
#include <string.h>

#define PACE_NS 50000LL      /* a pass sends at most the frames due in this time (burst bound) */
#define MIN_BURST 2          /* ... but at least this many: one frame late is no stall */
#define RT_PRIORITY 10       /* SCHED_FIFO priority of the TX thread: below threaded IRQs (50) */

/* Offset from start at which packet number n (1-based) of a `rate` schedule is due. */
static int64_t due_time_ns(long long n, double rate) { return (int64_t)ceil((double)n * 1e9 / rate); }

static long long due_count(double rate, int64_t elapsed_ns, long long intended)
{
    long long n = (long long)floor(rate * (double)elapsed_ns / 1e9);
    return n < intended ? n : intended;
}

/*
 * Pacing. Each stream has its own schedule: frame n is due n / rate after the
 * start, plus the stream's slip. A pass sends what is due, at most `burst`
 * frames (the frames due in PACE_NS), so frames leave in the spacing the rate
 * asks for and never in a longer burst. After the stream fell behind (a stall:
 * the thread was preempted, the VM descheduled; or sends that took long), the
 * frames that fell due meanwhile are never sent as one catch-up burst, which a
 * DUT with a shallow buffer would drop although the offered rate is within its
 * capacity (seen: a bridge whose tbf queue holds 4 frames lost such bursts,
 * NDR -20 % at 1518 B). The rule, for every lag:
 *   - the schedule slips by the lag (less one burst), so the frames keep their
 *     spacing and at most `burst` go out at once ("max_batch" in the report);
 *   - the trial's window ends at the duration plus the slip budget (MAX_SLIP of
 *     the duration): what a stream has not sent by then is "unsent", so the
 *     offered rate stays honest (intended = rate x duration, never stretched);
 *   - whose the unsent frames are: each slip is split into the lag that grew
 *     while the loop was not running although a frame was due ("slip_own_s":
 *     gaps outside send calls longer than STALL_NS, as its stalls; shorter
 *     ones here are mostly softirq work run on return from an interrupt, on
 *     veth the DUT's: on a tbf bridge counting gaps from 20 us on made most
 *     trials at 512 and 1518 B invalid) and the rest (inside send calls: the
 *     kernel holding the sender back, the DUT's work on the sender's CPU). A stream with unsent frames whose own slip
 *     exceeds the budget makes the trial invalid, the generator's fault
 *     (generator.py, schedule()); otherwise its unsent frames are loss.
 * At its (slipped) deadline a stream sends its remainder if that fits one
 * burst. Probes are paced on the same (slipped) clock.
 */
int stream_burst(double rate)
{
    double b = floor(rate * (double)PACE_NS / 1e9);
    return b < MIN_BURST ? MIN_BURST : b > MAX_BATCH ? MAX_BATCH : (int)b;
}

/* Elapsed time on stream s's schedule. */
static int64_t stream_elapsed(const struct stream *s, int64_t elapsed) { return elapsed - s->slip_ns; }

/* Slip s's schedule so that at most `burst` frames are due now (see Pacing); `own_ns`: how much
 * of the lag grew while the loop was off its CPU, the generator's share of the slip. */
static void slip(struct stream *s, long long backlog, int64_t own_ns)
{
    int64_t want = (int64_t)ceil((double)(backlog - s->burst) * 1e9 / s->rate);
    s->slip_ns += want;
    s->slip_own_ns += own_ns < want ? own_ns : want;
}

/*
 * One pass over the streams: each due probe, then the due load frames of each
 * stream (see Pacing), so streams share the thread round-robin. `own_ns`: how
 * long before this pass the loop was off its CPU while a frame was due. A
 * stream ends at its (slipped) deadline, or at the window's end (the duration
 * plus the slip budget) with what it has not sent unsent.
 */
static bool tx_pass(struct config *c, int first, int64_t t0, int64_t elapsed, int64_t own_ns)
{
    bool worked = false;
    int64_t deadline = (int64_t)llround(c->duration * 1e9);
    int64_t window = deadline + (int64_t)(MAX_SLIP * c->duration * 1e9);
    for (int i = 0; i < c->nstreams; i++) {
        struct stream *s = &c->streams[(first + i) % c->nstreams];
        if (s->finished)
            continue;
        int64_t se = stream_elapsed(s, elapsed);
        bool final = se >= deadline;
        if (!final && elapsed >= window) {  /* behind beyond the budget: the rest is unsent */
            s->finished = true;
            continue;
        }
        long long due = final ? s->intended : due_count(s->rate, se, s->intended);
        long long backlog = due - s->attempted;
        if (!final && backlog > s->burst) {
            if (backlog > s->max_backlog)
                s->max_backlog = backlog;
            slip(s, backlog, own_ns);
            se = stream_elapsed(s, elapsed);
            due = due_count(s->rate, se, s->intended);
            backlog = due - s->attempted;
        }
        long long pdue = final ? s->probes_intended : due_count(c->latency_pps, se, s->probes_intended);
        if (s->probes_attempted < pdue && (!final || pdue - s->probes_attempted <= 1)) {
            send_probe(s);
            worked = true;
        }
        if (backlog > 0 && (!final || backlog <= s->burst)) {
            send_load(c, s, (int)(backlog < s->burst ? backlog : s->burst), t0);
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

/*
 * The TX thread runs SCHED_FIFO where permitted (measured on a shared 2-vCPU
 * VM: under SCHED_OTHER the 99.9th percentile of inter-departure gaps was
 * 1-8 ms, the time slice another task got; under SCHED_FIFO it was < 0.1 ms).
 * A FIFO thread must not spin for long: a CPU it keeps busy is taken from it
 * for tens of milliseconds at once (RT throttling / the fair server), so it
 * sleeps until a few microseconds before each frame is due.
 */
void set_tx_sched(struct config *c)
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
void run_tx(struct config *c, int64_t t0, int64_t spin_ns, bool load)
{
    int64_t deadline = (int64_t)llround(c->duration * 1e9);
    int64_t window = deadline + (int64_t)(MAX_SLIP * c->duration * 1e9);  /* stalls after it do not matter */
    bool injected = false;
    for (int i = 0; i < c->nstreams; i++)
        c->streams[i].burst = stream_burst(c->streams[i].rate);
    int64_t expect = mono_ns();  /* when the loop should run next */
    int64_t due_at = t0;         /* when the next frame or probe was due, as of `expect` */
    for (int first = 0; !g_interrupted; first = (first + 1) % c->nstreams) {
        if (!load && !injected && c->inject_stall_ms > 0 &&
            mono_ns() - t0 >= (int64_t)llround(c->inject_stall_at_s * 1e9)) {
            injected = true;  /* the XDP path: its loop thread takes the stall */
            xdp_request_stall((int64_t)llround(c->inject_stall_ms * 1e6));
        }
        if (load)
            inject_stall(c, t0, &injected);
        int64_t start = mono_ns();
        if (load && expect - t0 < window)  /* the part inside the window, also of a stall that outlasts it */
            note_stall(c, (start - t0 < window ? start : t0 + window) - expect);
        /* Off its CPU while a frame was due (see Pacing): the generator's own lateness. */
        int64_t own = start - (due_at > expect ? due_at : expect);
        bool worked = tx_pass(c, first, t0, start - t0, load && own > STALL_NS ? own : 0);
        if (all_done(c))
            break;
        expect = mono_ns();
        due_at = t0 + next_due(c, deadline);
        if (worked)
            continue;
        int64_t wait = due_at - expect;
        /* A sleep costs microseconds of wakeup latency (tens under SCHED_OTHER),
         * so only sleep when the next frame is further away than that. */
        if (wait > spin_ns) {
            int64_t until = expect + (wait - spin_ns < MAX_SLEEP_NS ? wait - spin_ns : MAX_SLEEP_NS);
            sleep_until_mono(until);
            expect = until;
        }
    }
}
