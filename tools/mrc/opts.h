/*
 * The option group of the stages, shared by mrc run, mrc compile and mrc
 * sim: how the rings are embedded (--strategy --groups --replica-size
 * --fail-link), what is compiled (--collective --count or --size --dtype
 * --op --root --chunk --algo --hosts), and the --load, --max-memory and
 * --json that go with them. A command adds its own options to the group
 * and parses them all in one pass, with the same messages as cli_parse.
 */
#ifndef MRC_CLI_OPTS_H
#define MRC_CLI_OPTS_H

#include <stdint.h>

#include "cli.h"

/* Which options of the group a command takes beside the ones all three
 * take (--strategy --groups --replica-size --collective --dtype --algo
 * --hosts --max-memory --load --json --fail-link). */
enum {
    CLI_STAGE_COUNT = 1 << 0, /* --count (elements) */
    CLI_STAGE_SIZE = 1 << 1,  /* --size (bytes) */
    CLI_STAGE_OP = 1 << 2,    /* --op */
    CLI_STAGE_ROOT = 1 << 3,  /* --root */
    CLI_STAGE_CHUNK = 1 << 4, /* --chunk */
};

enum { CLI_STAGE_MAX_OPTS = 48 };

typedef struct cli_stage {
    /* The words as given; NULL: not given. */
    const char *strategy, *groups, *replica, *coll, *count, *size, *dtype, *op,
        *root, *chunk, *algo, *hosts, *max_memory, *load;
    int json;
    cli_values_t fails;     /* --fail-link, in the order given */
    mrc_algo_t algo_family; /* --algo, or the command's default family */
    /* The group and the command's own options, as cli_parse reads them
     * (points into this struct: it must stay where it was parsed). */
    cli_opt_t table[CLI_STAGE_MAX_OPTS];
} cli_stage_t;

/* Parses argv[0..argc) (the words after the sub-command) into `s`: the
 * --fail-link values first, then the options of the group that `which`
 * selects together with `own` (the command's, ended by a zeroed entry)
 * and the positional words (as cli_parse); then applies --max-memory and
 * reads --algo (`algo_default` when not given, NULL: auto). CLI status,
 * with the message printed. */
int cli_stage_parse(const char *cmd, const char *topic, unsigned which,
                    const cli_opt_t *own, const char *algo_default, int argc,
                    char **argv, cli_stage_t *s, const char **pos, int min_pos,
                    int max_pos, int *npos);

/* With --load: CLI_USAGE naming the first option of `names` (ended by
 * NULL; the group's or the command's own, "fail-link" included) that was
 * given, since the image fixes it; else CLI_OK. */
int cli_stage_refuses(const char *cmd, const char *topic, const cli_stage_t *s,
                      const char *const *names);

/* s->count as a count of elements into *n (the command sets a default
 * first if it has one); CLI_USAGE with a message if it is not one. */
int cli_stage_count(const char *cmd, const char *topic, const cli_stage_t *s,
                    uint64_t *n);

/* --chunk as bytes into *bytes (0: not given); CLI_USAGE if it is not a
 * size. */
int cli_stage_chunk(const char *cmd, const char *topic, const cli_stage_t *s,
                    uint64_t *bytes);

/* --replica-size into *r (0: not given); CLI_USAGE if it is not a
 * positive integer. */
int cli_stage_replica(const char *cmd, const char *topic, const cli_stage_t *s,
                      long *r);

#endif /* MRC_CLI_OPTS_H */
