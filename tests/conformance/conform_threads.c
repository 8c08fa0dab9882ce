/*
 * The conformance cases over the threads transport: one thread per rank
 * over a fresh fabric for every case and rank count, so that a case that
 * leaves the transport failed does not touch the next.
 *
 *   conform_threads [CASE...]   (none: every case)
 *
 * Prints one line per rank and case, then "N passed, N failed, N skipped"
 * (counted per case and rank count); exits 0 only when none failed.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

typedef struct rank_arg {
    conform_t c;
    const conform_case_t *k;
    enum conform_result res;
} rank_arg_t;

static void *rank_main(void *p)
{
    rank_arg_t *a = p;
    a->res = conform_run(&a->c, a->k);
    return NULL;
}

/* Runs case k on n ranks: the worst result of any rank. */
static enum conform_result run_case(const conform_case_t *k, int n)
{
    mrc__threads_hub_t *f = NULL;
    if (mrc__threads_hub_create(n, &f) != MRC_OK) {
        printf("%s on %d ranks: FAIL: no fabric: %s\n", k->name, n,
               mrc_last_error());
        return CONFORM_FAIL;
    }
    rank_arg_t a[8];
    pthread_t th[8];
    int started = 0;
    for (int r = 0; r < n; r++) {
        memset(&a[r], 0, sizeof a[r]);
        a[r].c.t = mrc__threads_transport(f, r);
        a[r].c.rank = r;
        a[r].c.n = n;
        a[r].k = k;
        a[r].res = CONFORM_FAIL;
        if (pthread_create(&th[r], NULL, rank_main, &a[r]) != 0)
            break;
        started++;
    }
    enum conform_result worst = started == n ? CONFORM_PASS : CONFORM_FAIL;
    for (int r = 0; r < started; r++) {
        pthread_join(th[r], NULL);
        if (a[r].res == CONFORM_FAIL ||
            (a[r].res == CONFORM_SKIP && worst == CONFORM_PASS))
            worst = a[r].res;
    }
    mrc__threads_hub_destroy(f);
    return worst;
}

int main(int argc, char **argv)
{
    static const int sizes[] = {2, 3, 5};
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < conform_num_cases; i++) {
        const conform_case_t *k = &conform_cases[i];
        int wanted = argc < 2;
        for (int a = 1; a < argc; a++)
            wanted |= strcmp(argv[a], k->name) == 0;
        if (!wanted)
            continue;
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            enum conform_result r = run_case(k, sizes[s]);
            passed += r == CONFORM_PASS;
            failed += r == CONFORM_FAIL;
            skipped += r == CONFORM_SKIP;
        }
    }
    for (int a = 1; a < argc; a++)
        if (!conform_find(argv[a])) {
            printf("no case '%s'\n", argv[a]);
            failed++;
        }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed != 0;
}
