/*
 * The readers of JSON files (topologies, host profiles, workloads) take
 * exactly the keys they know: a misspelt key ("bandwith_gbps") is
 * refused, never read as a default. One check for all of them; each
 * words its own message.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

const char *mrc__json_unknown_key(struct json_t *obj, const char *const *known)
{
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val)
    {
        (void)val;
        int ok = 0;
        for (const char *const *k = known; *k && !ok; k++)
            ok = strcmp(key, *k) == 0;
        if (!ok)
            return key;
    }
    return NULL;
}

mrc_status_t mrc__json_known_keys(struct json_t *obj, const char *const *known,
                                  const char *entry, const char *noun)
{
    const char *key = mrc__json_unknown_key(obj, known);
    char list[512];
    if (!key)
        return MRC_OK;
    return mrc__error(MRC_ERR_PARSE, "%s: unknown %s \"%s\" (known: %s)", entry,
                      noun, key, mrc__names_joined(known, list, sizeof list));
}

const char *mrc__names_joined(const char *const *names, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (const char *const *k = names; *k && at < size; k++) {
        int n =
            snprintf(buf + at, size - at, "%s%s", k == names ? "" : ", ", *k);
        at += n > 0 ? (size_t)n : 0;
    }
    return buf;
}
