/*
 * The collective x count x dtype x op x in-place loop of the collective
 * tests (see sweep.h).
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep.h"

/* A thin sweep ($MRC_TEST_SWEEP=thin: the sanitized builds' runs). Below
 * 64 Ki elements it keeps every dtype with sum, and every op with
 * float32, int8 (the widest staging of an integer average: 8 bytes a
 * 1-byte value) and int64 (two words a value); from 64 Ki elements, where
 * a sanitized case's time is its buffers' (faulted in, filled, checked),
 * float32 and int8 with sum and avg. Every path of a collective (its
 * chunks and fragments, roots, element sizes, in place or not, each op's
 * staging) still runs under the sanitizers, in under half the time; each
 * dtype's kernel of each op is test_kernels' under them too, and the
 * plain build sweeps whole. */
static int thin_keeps(const sweep_case_t *c)
{
    int f32_i8 = c->dtype == MRC_FLOAT32 || c->dtype == MRC_INT8;
    if (c->count >= 65536)
        return f32_i8 && (c->op == MRC_SUM || c->op == MRC_AVG);
    return c->op == MRC_SUM || f32_i8 || c->dtype == MRC_INT64;
}

int sweep_is_thin(void)
{
    const char *v = getenv("MRC_TEST_SWEEP");
    if (!v || !*v)
        return 0;
    if (strcmp(v, "thin") == 0)
        return 1;
    fprintf(stderr, "$MRC_TEST_SWEEP '%s': 'thin' or unset\n", v);
    exit(2);
}

/* The plan's lists, every value of a kind where the plan gives none. */
typedef struct lists {
    int colls[MRC_NUM_COLLECTIVES], dtypes[MRC_NUM_DTYPES], ops[MRC_NUM_OPS];
    int ncolls, ndtypes, nops;
} lists_t;

static void read_lists(const sweep_plan_t *p, lists_t *l)
{
    l->ncolls = p->colls ? p->ncolls : MRC_NUM_COLLECTIVES;
    l->ndtypes = p->dtypes ? p->ndtypes : MRC_NUM_DTYPES;
    l->nops = p->ops ? p->nops : MRC_NUM_OPS;
    assert(l->ncolls <= MRC_NUM_COLLECTIVES && l->ndtypes <= MRC_NUM_DTYPES &&
           l->nops <= MRC_NUM_OPS);
    for (int i = 0; i < l->ncolls; i++)
        l->colls[i] = p->colls ? (int)p->colls[i] : i;
    for (int i = 0; i < l->ndtypes; i++)
        l->dtypes[i] = p->dtypes ? (int)p->dtypes[i] : i;
    for (int i = 0; i < l->nops; i++)
        l->ops[i] = p->ops ? (int)p->ops[i] : i;
}

/* Every dtype x op x in place or not of one collective and count; 1 if
 * the plan's callback stopped the sweep. */
static int sweep_count(const sweep_plan_t *p, const lists_t *l, sweep_case_t *c,
                       int thin, long *run)
{
    for (int d = 0; d < l->ndtypes; d++)
        for (int o = 0; o < l->nops; o++)
            for (int ip = 0; ip < 2; ip++) {
                c->dtype = (mrc_dtype_t)l->dtypes[d];
                c->op = (mrc_op_t)l->ops[o];
                c->in_place = ip;
                if ((p->keep && !p->keep(c, p->ctx)) ||
                    (thin && !thin_keeps(c)))
                    continue;
                ++*run;
                if (p->run(c, p->ctx))
                    return 1;
            }
    return 0;
}

long sweep_cases(const sweep_plan_t *plan)
{
    lists_t l;
    long run = 0;
    int thin = sweep_is_thin();
    read_lists(plan, &l);
    for (int ci = 0; ci < l.ncolls; ci++)
        for (int k = 0; k < plan->ncounts; k++) {
            sweep_case_t c = {.coll = (mrc_collective_t)l.colls[ci],
                              .kind = k,
                              .count = plan->counts[k]};
            c.reducing = c.coll != MRC_ALLGATHER && c.coll != MRC_BROADCAST;
            if (sweep_count(plan, &l, &c, thin, &run))
                return run;
        }
    return run;
}
