/*
 * The workload scheduler: tasks on a compute and a network stream over
 * their dependencies, the cycle finder, and the exposed time; pure, and
 * tested on their own (test_workload).
 */
#include <math.h>
#include <stdlib.h>

#include "common/common.h"
#include "sim/workload.h"

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* dependents of each task in CSR form: first[i] .. first[i + 1]. */
static mrc_status_t dependents(const mrc__workload_task_t *t, int n,
                               int **first, int **list)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += (size_t)t[i].num_deps;
    *first = calloc((size_t)n + 1, sizeof **first);
    *list = malloc((total ? total : 1) * sizeof **list);
    if (!*first || !*list)
        return mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
    for (int i = 0; i < n; i++)
        for (int d = 0; d < t[i].num_deps; d++)
            (*first)[t[i].deps[d] + 1]++;
    for (int i = 0; i < n; i++)
        (*first)[i + 1] += (*first)[i];
    int *fill = calloc((size_t)n + 1, sizeof *fill);
    if (!fill)
        return mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
    for (int i = 0; i < n; i++)
        for (int d = 0; d < t[i].num_deps; d++) {
            int p = t[i].deps[d];
            (*list)[(*first)[p] + fill[p]++] = i;
        }
    free(fill);
    return MRC_OK;
}

/* The scheduler's state: a FIFO of ready tasks per stream (a task
 * enters each once, so n slots each), the running task per stream. */
typedef struct wl_sched {
    int *fifo[MRC__WL_STREAMS];
    int head[MRC__WL_STREAMS], tail[MRC__WL_STREAMS];
    int running[MRC__WL_STREAMS];
    int *indeg, *first, *list, *fresh;
} wl_sched_t;

/* Queues the tasks that became ready at one instant, lowest index first. */
static void enqueue(wl_sched_t *s, const mrc__workload_task_t *t, int nfresh)
{
    qsort(s->fresh, (size_t)nfresh, sizeof *s->fresh, cmp_int);
    for (int k = 0; k < nfresh; k++) {
        int st = t[s->fresh[k]].stream;
        s->fifo[st][s->tail[st]++] = s->fresh[k];
    }
}

/* Ends every running task that ends at `now`; returns how many. */
static int finish(wl_sched_t *s, const mrc__workload_task_t *t,
                  const double *end, double now)
{
    int nfresh = 0, done = 0;
    for (int st = 0; st < MRC__WL_STREAMS; st++) {
        int i = s->running[st];
        if (i < 0 || end[i] > now)
            continue;
        s->running[st] = -1;
        done++;
        for (int k = s->first[i]; k < s->first[i + 1]; k++)
            if (--s->indeg[s->list[k]] == 0)
                s->fresh[nfresh++] = s->list[k];
    }
    enqueue(s, t, nfresh);
    return done;
}

static mrc_status_t play(wl_sched_t *s, const mrc__workload_task_t *t, int n,
                         double *start, double *end)
{
    int nfresh = 0, done = 0;
    for (int i = 0; i < n; i++)
        if ((s->indeg[i] = t[i].num_deps) == 0)
            s->fresh[nfresh++] = i;
    enqueue(s, t, nfresh);
    double now = 0;
    for (;;) {
        int any = 0;
        for (int st = 0; st < MRC__WL_STREAMS; st++) {
            if (s->running[st] < 0 && s->head[st] < s->tail[st]) {
                int i = s->fifo[st][s->head[st]++];
                start[i] = now;
                end[i] = now + t[i].duration_us;
                s->running[st] = i;
            }
            any |= s->running[st] >= 0;
        }
        if (!any)
            break;
        now = INFINITY;
        for (int st = 0; st < MRC__WL_STREAMS; st++)
            if (s->running[st] >= 0 && end[s->running[st]] < now)
                now = end[s->running[st]];
        done += finish(s, t, end, now);
    }
    if (done < n)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "workload: %d of %d ops "
                          "never become ready (a dependency cycle)",
                          n - done, n);
    return MRC_OK;
}

mrc_status_t mrc__workload_schedule(const mrc__workload_task_t *tasks, int n,
                                    double *start, double *end)
{
    wl_sched_t s = {.running = {-1, -1}};
    mrc_status_t st = MRC_OK;
    if (n <= 0)
        return MRC_OK;
    for (int k = 0; k < MRC__WL_STREAMS; k++)
        s.fifo[k] = malloc((size_t)n * sizeof *s.fifo[k]);
    s.indeg = malloc((size_t)n * sizeof *s.indeg);
    s.fresh = malloc((size_t)n * sizeof *s.fresh);
    if (!s.fifo[0] || !s.fifo[1] || !s.indeg || !s.fresh)
        st = mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
    if (st == MRC_OK)
        st = dependents(tasks, n, &s.first, &s.list);
    if (st == MRC_OK)
        st = play(&s, tasks, n, start, end);
    for (int k = 0; k < MRC__WL_STREAMS; k++)
        free(s.fifo[k]);
    free(s.indeg);
    free(s.fresh);
    free(s.first);
    free(s.list);
    return st;
}

/* Depth-first over the dependencies without recursion (a chain of a
 * million ops would overflow the stack): colour 1 on the path, 2 done.
 * A dependency on a task on the path closes a cycle, read back from the
 * path. */
int mrc__workload_find_cycle(const mrc__workload_task_t *t, int n, int *cycle)
{
    char *colour = calloc((size_t)n, 1);
    int *path = malloc((size_t)n * sizeof *path);
    int *next = malloc((size_t)n * sizeof *next);
    int len = 0;
    for (int root = 0; colour && path && next && root < n && !len; root++) {
        if (colour[root])
            continue;
        int depth = 0;
        path[depth++] = root;
        next[root] = 0;
        colour[root] = 1;
        while (depth > 0 && !len) {
            int i = path[depth - 1];
            if (next[i] == t[i].num_deps) {
                colour[i] = 2;
                depth--;
                continue;
            }
            int d = t[i].deps[next[i]++];
            if (colour[d] == 0) {
                colour[d] = 1;
                next[d] = 0;
                path[depth++] = d;
            } else if (colour[d] == 1) {
                int k = depth - 1;
                while (path[k] != d)
                    k--;
                for (; k < depth; k++)
                    cycle[len++] = path[k];
            }
        }
    }
    free(colour);
    free(path);
    free(next);
    return len;
}

double mrc__workload_uncovered(const double *as, const double *ae, int na,
                               const double *bs, const double *be, int nb)
{
    double total = 0;
    int j = 0;
    for (int i = 0; i < nb; i++) {
        double lo = bs[i], len = be[i] - bs[i];
        /* Intervals of a that end before this one starts cover nothing
         * of it nor of later ones. */
        while (j < na && ae[j] <= lo)
            j++;
        for (int k = j; k < na && as[k] < be[i]; k++) {
            double a = as[k] > lo ? as[k] : lo;
            double b = ae[k] < be[i] ? ae[k] : be[i];
            if (b > a)
                len -= b - a;
        }
        total += len;
    }
    return total;
}
