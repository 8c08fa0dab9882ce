/*
 * The option group of the stages (see opts.h): one table of the options
 * that mrc run, mrc compile and mrc sim share, parsed in one pass with
 * each command's own, and the checks of their values that the commands
 * word alike.
 */
#include <assert.h>
#include <string.h>

#include "opts.h"

/* The group's options that `which` selects, then `own`, then the zeroed
 * end. A command's table is a fixed list, so running out of room is a
 * mistake in the program, not in the input. */
static void build_table(cli_stage_t *s, unsigned which, const cli_opt_t *own)
{
    const struct {
        unsigned need; /* 0: every command */
        cli_opt_t opt;
    } group[] = {
        {0, {"strategy", 's', &s->strategy, NULL}},
        {0, {"groups", 'g', &s->groups, NULL}},
        {0, {"replica-size", 'r', &s->replica, NULL}},
        {0, {"collective", 'c', &s->coll, NULL}},
        {CLI_STAGE_COUNT, {"count", 'n', &s->count, NULL}},
        {CLI_STAGE_SIZE, {"size", 0, &s->size, NULL}},
        {0, {"dtype", 'd', &s->dtype, NULL}},
        {CLI_STAGE_OP, {"op", 0, &s->op, NULL}},
        {CLI_STAGE_ROOT, {"root", 0, &s->root, NULL}},
        {CLI_STAGE_CHUNK, {"chunk", 0, &s->chunk, NULL}},
        {0, {"algo", 'a', &s->algo, NULL}},
        {0, {"hosts", 0, &s->hosts, NULL}},
        {0, {"max-memory", 0, &s->max_memory, NULL}},
        {0, {"load", 0, &s->load, NULL}},
        {0, {"json", 0, NULL, &s->json}},
    };
    int n = 0;
    for (size_t i = 0; i < sizeof group / sizeof group[0]; i++)
        if (!group[i].need || (group[i].need & which))
            s->table[n++] = group[i].opt;
    for (; own->name; own++) {
        assert(n + 1 < CLI_STAGE_MAX_OPTS);
        s->table[n++] = *own;
    }
    memset(&s->table[n], 0, sizeof s->table[n]);
}

int cli_stage_parse(const char *cmd, const char *topic, unsigned which,
                    const cli_opt_t *own, const char *algo_default, int argc,
                    char **argv, cli_stage_t *s, const char **pos, int min_pos,
                    int max_pos, int *npos)
{
    memset(s, 0, sizeof *s);
    build_table(s, which, own);
    int rc = cli_take_values(cmd, topic, "fail-link", &argc, argv, &s->fails);
    if (rc == CLI_OK)
        rc = cli_parse(cmd, topic, argc, argv, s->table, pos, min_pos, max_pos,
                       npos);
    if (rc == CLI_OK)
        rc = cli_max_memory(cmd, topic, s->max_memory);
    if (rc == CLI_OK)
        rc = cli_algo(cmd, topic, s->algo ? s->algo : algo_default,
                      &s->algo_family);
    return rc;
}

/* 1 if the option `name` of the table was given. */
static int given(const cli_stage_t *s, const char *name)
{
    if (strcmp(name, "fail-link") == 0)
        return s->fails.n > 0;
    for (const cli_opt_t *o = s->table; o->name; o++)
        if (strcmp(o->name, name) == 0)
            return o->flag ? *o->flag != 0 : *o->value != NULL;
    return 0;
}

int cli_stage_refuses(const char *cmd, const char *topic, const cli_stage_t *s,
                      const char *const *names)
{
    for (; *names; names++)
        if (given(s, *names))
            return cli_usage(cmd, topic,
                             "--%s with --load: the image "
                             "fixes it (recompile to change it)",
                             *names);
    return CLI_OK;
}

int cli_stage_count(const char *cmd, const char *topic, const cli_stage_t *s,
                    uint64_t *n)
{
    if (mrc__parse_size(s->count, n) != 0)
        return cli_usage(cmd, topic, "--count '%s' is not a count", s->count);
    return CLI_OK;
}

int cli_stage_chunk(const char *cmd, const char *topic, const cli_stage_t *s,
                    uint64_t *bytes)
{
    *bytes = 0;
    if (s->chunk && (mrc__parse_size(s->chunk, bytes) != 0 || *bytes == 0))
        return cli_usage(cmd, topic, "--chunk '%s' is not a size", s->chunk);
    return CLI_OK;
}

int cli_stage_replica(const char *cmd, const char *topic, const cli_stage_t *s,
                      long *r)
{
    *r = 0;
    if (s->replica &&
        mrc__parse_long(s->replica, 1, MRC_TOPO_MAX_NODES, r) != 0)
        return cli_usage(cmd, topic,
                         "--replica-size '%s' is not a "
                         "positive integer",
                         s->replica);
    return CLI_OK;
}
