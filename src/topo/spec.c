/*
 * The spec dispatcher: mrc_topo_create takes whatever the user names, a
 * file (read by json.c) or a generator's spec; mrc_topo_generate reads a
 * spec string NAME[:ARGS][,key=value...] (integers first, then the link
 * classes' counts, bw= and lat=) and hands the parameters to the
 * generator of that name (gen.c).
 */
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "topo_internal.h"

enum { SPEC_MAX = 256 };

static mrc_status_t unknown_generator(const char *spec, const char *name)
{
    char known[640] = "";
    for (int i = 0; i < mrc__topo_num_generators; i++) {
        if (i)
            strcat(known, ", ");
        strcat(known, mrc__topo_generators[i].usage);
    }
    return mrc__error(MRC_ERR_INVALID_ARG,
                      "topology spec '%s': unknown generator '%s' and no "
                      "such file (generators: %s)",
                      spec, name, known);
}

/* Index of `key` among the family's link classes, or -1. */
static int count_key(const mrc__topo_generator_t *g, const char *key)
{
    for (int i = 0; g->keys[i]; i++)
        if (strcmp(g->keys[i], key) == 0)
            return i;
    return -1;
}

static mrc_status_t unknown_option(const char *spec,
                                   const mrc__topo_generator_t *g,
                                   const char *key)
{
    char known[128] = "";
    for (int i = 0; g->keys[i]; i++) {
        strcat(known, g->keys[i]);
        strcat(known, "=links, ");
    }
    return mrc__error(MRC_ERR_INVALID_ARG,
                      "topology spec '%s': unknown option '%s' for %s "
                      "(options: %sbw=GB/s, lat=ns)",
                      spec, key, g->name, known);
}

/* A link-class count: a whole number of physical links, at least one (a
 * class without links would be another topology) and at most what one
 * link entry holds. `seen` has bit i set once key i is given. */
static mrc_status_t parse_count(const char *spec,
                                const mrc__topo_generator_t *g, int i,
                                const char *val, int *seen,
                                mrc__topo_gen_params_t *p)
{
    if (*seen & (1 << i))
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "topology spec '%s': option '%s' given twice", spec,
                          g->keys[i]);
    if (mrc__parse_long(val, 1, MRC_TOPO_MAX_LINK_COUNT, &p->cnt[i]) != 0)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "topology spec '%s': %s=%s is not a number of "
                          "links from 1 to %d",
                          spec, g->keys[i], val, MRC_TOPO_MAX_LINK_COUNT);
    *seen |= 1 << i;
    return MRC_OK;
}

/* bw=GB/s (is_bw) or lat=ns of every link, in its bounds. */
static mrc_status_t parse_link_figure(const char *spec, int is_bw,
                                      const char *key, const char *val,
                                      mrc__topo_gen_params_t *p)
{
    double v;
    if (mrc__parse_double(val, &v) != 0)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "topology spec '%s': %s=%s is not a number", spec,
                          key, val);
    if (is_bw) {
        if (v <= 0 || v > MRC_TOPO_MAX_BANDWIDTH_GBPS)
            return mrc__error(MRC_ERR_INVALID_ARG,
                              "topology spec '%s': bw=%s must be > 0 and "
                              "<= %g GB/s",
                              spec, val, MRC_TOPO_MAX_BANDWIDTH_GBPS);
        p->bw = v;
    } else {
        if (v < 0 || v > MRC_TOPO_MAX_LATENCY_NS)
            return mrc__error(MRC_ERR_INVALID_ARG,
                              "topology spec '%s': lat=%s must be >= 0 "
                              "and <= %g ns",
                              spec, val, MRC_TOPO_MAX_LATENCY_NS);
        p->lat = v;
    }
    return MRC_OK;
}

/* Parses the comma-separated tokens after the name: integers first, then
 * key=value options. */
static mrc_status_t parse_tokens(char *rest, const char *spec,
                                 const mrc__topo_generator_t *g,
                                 mrc__topo_gen_params_t *p)
{
    int have_bw = 0, have_lat = 0, have_cnt = 0;
    char *save = NULL;
    size_t n = strlen(rest);
    /* strtok_r would skip empty tokens; refuse them rather than guess. */
    if (n > 0 && (rest[0] == ',' || rest[n - 1] == ',' || strstr(rest, ",,")))
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "topology spec '%s': empty argument between commas",
                          spec);
    for (char *tok = strtok_r(rest, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            if (have_bw || have_lat || have_cnt)
                return mrc__error(MRC_ERR_INVALID_ARG,
                                  "topology spec '%s': arguments come "
                                  "before key=value options",
                                  spec);
            if (p->nargs >= g->nargs)
                return mrc__error(MRC_ERR_INVALID_ARG,
                                  "topology spec '%s': too many arguments; "
                                  "expected %s",
                                  spec, g->usage);
            if (mrc__parse_long(tok, 0, LONG_MAX, &p->arg[p->nargs]) != 0)
                return mrc__error(MRC_ERR_INVALID_ARG,
                                  "topology spec '%s': argument '%s' is not a "
                                  "non-negative integer; expected %s",
                                  spec, tok, g->usage);
            p->nargs++;
            continue;
        }
        *eq = '\0';
        const char *key = tok, *val = eq + 1;
        int is_bw = strcmp(key, "bw") == 0, is_lat = strcmp(key, "lat") == 0;
        int ci = count_key(g, key);
        if (ci >= 0) {
            mrc_status_t st = parse_count(spec, g, ci, val, &have_cnt, p);
            if (st != MRC_OK)
                return st;
            continue;
        }
        if (!is_bw && !is_lat)
            return unknown_option(spec, g, key);
        if ((is_bw && have_bw) || (is_lat && have_lat))
            return mrc__error(MRC_ERR_INVALID_ARG,
                              "topology spec '%s': option '%s' given twice",
                              spec, key);
        mrc_status_t st = parse_link_figure(spec, is_bw, key, val, p);
        if (st != MRC_OK)
            return st;
        have_bw |= is_bw;
        have_lat |= is_lat;
    }
    if (p->nargs != g->nargs)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "topology spec '%s': expected %s", spec, g->usage);
    return MRC_OK;
}

mrc_status_t mrc_topo_generate(const char *spec, mrc_topo_t **out)
{
    char buf[SPEC_MAX];
    if (!out)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_topo_generate: out is NULL");
    *out = NULL;
    if (!spec || !*spec)
        return mrc__error(MRC_ERR_INVALID_ARG, "empty topology spec");
    if (strlen(spec) >= sizeof buf)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "topology spec is longer than %d characters",
                          SPEC_MAX - 1);
    /* The spec becomes the topology's name, which may hold no control
     * characters (a file with one is refused); and numbers parsed with
     * strtol would skip white space. Not echoed: it may hold anything. */
    for (size_t i = 0; spec[i]; i++)
        if ((unsigned char)spec[i] <= ' ' || spec[i] == 0x7f)
            return mrc__error(MRC_ERR_INVALID_ARG,
                              "topology spec: a space or control character "
                              "at position %zu",
                              i + 1);
    strcpy(buf, spec);

    char *rest = buf + strcspn(buf, ":,");
    int sep_colon = *rest == ':';
    if (*rest)
        *rest++ = '\0';
    const mrc__topo_generator_t *g = NULL;
    for (int i = 0; i < mrc__topo_num_generators; i++)
        if (strcmp(buf, mrc__topo_generators[i].name) == 0)
            g = &mrc__topo_generators[i];
    if (!g)
        return unknown_generator(spec, buf);
    if (sep_colon && *rest == '\0')
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "topology spec '%s': nothing after ':'; expected %s",
                          spec, g->usage);

    mrc__topo_gen_params_t p = {.bw = MRC_TOPO_DEFAULT_BANDWIDTH_GBPS,
                                .lat = MRC_TOPO_DEFAULT_LATENCY_NS};
    for (int i = 0; i < MRC__TOPO_GEN_MAX_KEYS; i++)
        p.cnt[i] = g->dflt[i];
    mrc_status_t st = parse_tokens(rest, spec, g, &p);
    if (st != MRC_OK)
        return st;

    mrc__topo_builder_t tb;
    memset(&tb, 0, sizeof tb);
    st = g->build(&p, spec, &tb);
    if (st != MRC_OK) {
        mrc__topo_builder_free(&tb);
        return st;
    }
    return mrc__topo_builder_build(&tb, spec, out);
}

static int looks_like_file(const char *spec)
{
    struct stat sb;
    size_t n = strlen(spec);
    if (n >= 5 && strcmp(spec + n - 5, ".json") == 0)
        return 1;
    /* Anything that exists is a file, so that a FIFO, a device or a
     * directory is refused as such when read, not taken for a spec. */
    return stat(spec, &sb) == 0;
}

mrc_status_t mrc_topo_create(const char *spec, mrc_topo_t **out)
{
    if (!out)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_topo_create: out is NULL");
    *out = NULL;
    if (!spec || !*spec)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "empty topology spec (try 'hcm8', 'ring:8' or a "
                          ".json file)");
    if (looks_like_file(spec))
        return mrc_topo_load(spec, out);
    return mrc_topo_generate(spec, out);
}
