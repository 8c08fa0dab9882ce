/*
 * Shared pieces of the mrc command line: option parsing, error reporting
 * with the exit-status convention, and writing output files whole.
 *
 * Exit status: 0 success, 1 a failure of the environment (out of memory, a
 * file that cannot be written, a missing helper program), 2 bad usage or
 * bad input. Every failure prints one clear line on stderr.
 */
#ifndef MRC_CLI_H
#define MRC_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "common/common.h"
#include "mrc/mrc.h"
#include "program/plan.h"

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* The values of a repeatable option, in the order given. */
enum { CLI_MAX_VALUES = 64 };
typedef struct cli_values {
    const char *v[CLI_MAX_VALUES];
    int n;
} cli_values_t;

typedef struct cli_opt {
    const char *name;   /* long name, without the dashes */
    char short_name;    /* one-letter form, or 0 */
    const char **value; /* for options that take a value */
    int *flag;          /* for flags: set to 1 when present */
} cli_opt_t;

/* Takes every "--NAME VALUE" and "--NAME=VALUE" of a repeatable option
 * out of argv[0..*argc) (up to a "--"), in order, into `values`, and
 * closes the gaps, so that cli_parse sees the rest. CLI_USAGE with a
 * message if one has no value or there are too many. */
int cli_take_values(const char *cmd, const char *topic, const char *name,
                    int *argc, char **argv, cli_values_t *values);

/* Parses argv[0..argc) (the words after the sub-command) against `opts`
 * (terminated by a zeroed entry); positional words go to pos[], between
 * min_pos and max_pos of them. Prints the error and returns CLI_USAGE on
 * bad usage. `cmd` names the command in messages ("mrc topo show"), and
 * `topic` the help topic to point at. */
int cli_parse(const char *cmd, const char *topic, int argc, char **argv,
              const cli_opt_t *opts, const char **pos, int min_pos, int max_pos,
              int *npos);

/* Prints "CMD: <last error>" and returns the exit status for `st`. */
int cli_fail(const char *cmd, mrc_status_t st);

/* A progress line for long work, on stderr when it is a terminal (and
 * `only_if_piped`: only while stdout is not one, so that it never cuts
 * into a table being printed there): rewritten in place; NULL clears it. */
void cli_progress(int only_if_piped, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The bar of a progress line at `done` (0..1) of its work, as
 * "[#####     ]" in out (room for 33 bytes). */
const char *cli_progress_bar(double done, char *out, size_t size);

/* Prints "CMD: <message> (see 'mrc help TOPIC')" and returns CLI_USAGE. */
int cli_usage(const char *cmd, const char *topic, const char *fmt, ...)
    MRC_PRINTF(3, 4);

/* Writes `len` bytes to `path` whole or not at all, never clobbering
 * anything else (see mrc__outfile_t): a failure leaves the target as it
 * was and no temporary behind. */
int cli_write_file(const char *cmd, const char *path, const char *data,
                   size_t len);

/* Runs argv[0] from PATH with `input` on its standard input and its
 * standard output into `path` (an outfile: the program never sees a file
 * name); `quiet` sends its standard error to /dev/null. CLI_FAIL with a
 * message, and `path` untouched, if it cannot start or exits non-zero. */
int cli_filter_to_file(const char *cmd, char *const argv[], const char *input,
                       const char *path, int quiet);

/* Renders DOT text to an SVG file with Graphviz (neato); CLI_FAIL with a
 * message if Graphviz is not installed or fails. */
int cli_render_svg(const char *cmd, const char *dot, const char *path);

/* `s` as a JSON string literal, quotes included, in a malloc'd buffer
 * (free()); exits with status 1 when out of memory. */
char *cli_json_quote(const char *s);
/* Applies --max-memory VALUE (NULL: not given) as the memory limit of
 * the library's estimates (see mrc__memory_limit); CLI_USAGE with a
 * message if it is not a size. */
int cli_max_memory(const char *cmd, const char *topic, const char *value);

/* --hosts VALUE (NULL: not given, *out = dflt) as a count of hosts;
 * CLI_USAGE with a message if it is not a positive integer. */
int cli_hosts(const char *cmd, const char *topic, const char *value, int dflt,
              int *out);

/* --fail-link A-B[:K] (repeatable): replaces *topo by a copy without
 * those links (mrc_topo_fail_links), destroying the old one; nothing when
 * none were given. `joined` (room for 4096 bytes, or NULL) gets the
 * values joined by ',' for mrc_config_t.failed_links. CLI_USAGE with a
 * message naming the bad value. */
int cli_fail_links(const char *cmd, const cli_values_t *values,
                   mrc_topo_t **topo, char *joined);

/* What failed links cost the embedding that `ec` makes on `t`: one line
 * with the links, and the algbw and efficiency on the intact topology
 * and on `t`, to `out`. Nothing when no link of `t` failed. */
void cli_report_failed_links(FILE *out, const mrc_topo_t *t,
                             const mrc_embed_config_t *ec);

/* 1 if `path` ends with `ext` (such as ".svg"). */
int cli_has_ext(const char *path, const char *ext);

/* Sub-commands. */
int cmd_topo(int argc, char **argv);
void help_topo(void);
int cmd_rings(int argc, char **argv);
void help_rings(void);
int cmd_compile(int argc, char **argv);
void help_compile(void);
int cmd_launch(int argc, char **argv);
void help_launch(void);
/* Runs n processes of prog (argv, NULL-terminated) as one job, as `mrc
 * launch` does (see cmd_launch.c): job id and token, signals passed on,
 * failed ranks reported, the job's shared memory removed at the end.
 * timeout 0: none; grace 0: the default. CLI_OK when every rank exits 0,
 * else CLI_FAIL with the messages printed. */
int cli_launch(int n, char **prog, double timeout, double grace);
int cmd_run(int argc, char **argv);
void help_run(void);
int cmd_sim(int argc, char **argv);
void help_sim(void);
int cmd_fabric(int argc, char **argv);
void help_fabric(void);
int cmd_explain(int argc, char **argv);
void help_explain(void);
int cmd_calibrate(int argc, char **argv);
void help_calibrate(void);
/* --algo VALUE (NULL: auto) as a family; CLI_USAGE naming the families
 * if it is none. */
int cli_algo(const char *cmd, const char *topic, const char *value,
             mrc_algo_t *out);
/* cc->algo MRC_ALGO_AUTO: the family the selector picks on the links'
 * model (the simulator), as `mrc explain` shows; another family is left
 * as it is. CLI status, with the message when nothing applies. */
int cli_resolve_algo(const char *cmd, const mrc_embedding_t *e,
                     const mrc_topo_t *t, mrc_compile_config_t *cc);

/* --load FILE: reads and checks a program image (the checker runs on
 * it); *origin gets what the image records of where it came from.
 * load_ms and bytes (the file's size) may be NULL.
 * CLI status, with "CMD: FILE: <what is wrong>" (exit 2 for a missing,
 * unreadable, truncated, corrupted or inconsistent file). */
int cli_load_image(const char *cmd, const char *path, mrc_program_t **p,
                   mrc__image_origin_t *origin, double *load_ms, size_t *bytes);

/* cli_load_image and the topology the image carries (*t), for running
 * or simulating it; on failure nothing is left to free. */
int cli_load_image_topology(const char *cmd, const char *path,
                            mrc_program_t **p, mrc__image_origin_t *origin,
                            mrc_topo_t **t);

#endif /* MRC_CLI_H */
