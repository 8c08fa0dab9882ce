/*
 * libFuzzer entry for the embedding (rings) reader: the input is read as
 * the JSON that `mrc rings SPEC --json` writes. The topology is the one
 * the file carries under "topology" when that parses to a small one, else
 * hcm8, so that the seeds' rings meet the topology they were made on and
 * mutated files still reach the ring checks. Whatever is accepted must
 * write and read back to the same rings, routes, links and figures. The
 * hops' "ports" are left out of that comparison: the reader does not read
 * them but numbers the ports of each link anew in the order its hops come,
 * which differs when a file leaves some hops' links for the reader to
 * choose. Built with `make fuzz` (clang).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mrc/mrc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The file's own topology if it has a small valid one, else hcm8. */
static mrc_topo_t *topology_of(const uint8_t *data, size_t size)
{
    mrc_topo_t *t = NULL;
    json_t *root = json_loadb((const char *)data, size, 0, NULL);
    json_t *jt = root ? json_object_get(root, "topology") : NULL;
    char *text = jt ? json_dumps(jt, 0) : NULL;
    if (text &&
        (mrc_topo_parse_json(text, strlen(text), "topo", &t) != MRC_OK ||
         mrc_topo_num_nodes(t) > 64)) {
        mrc_topo_destroy(t);
        t = NULL;
    }
    free(text);
    json_decref(root);
    if (!t && mrc_topo_generate("hcm8", &t) != MRC_OK)
        abort();
    return t;
}

static void drop_ports(json_t *root)
{
    json_t *g, *r, *h;
    size_t i, j, k;
    json_array_foreach(json_object_get(root, "groups"), i, g)
        json_array_foreach(json_object_get(g, "rings"), j, r)
            json_array_foreach(json_object_get(r, "hops"), k, h)
                json_object_del(h, "ports");
}

/* 1 if two embeddings' JSON say the same but for the ports. */
static int same_but_ports(const char *j1, const char *j2)
{
    json_t *a = json_loads(j1, 0, NULL), *b = json_loads(j2, 0, NULL);
    drop_ports(a);
    drop_ports(b);
    int same = a && b && json_equal(a, b);
    json_decref(a);
    json_decref(b);
    return same;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mrc_topo_t *t = topology_of(data, size);
    mrc_embedding_t *e = NULL, *back = NULL;
    char *j1 = NULL, *j2 = NULL;
    if (mrc_embed_parse_json(t, (const char *)data, size, "fuzz", &e) ==
        MRC_OK) {
        if (mrc_embed_verify(e) != MRC_OK ||
            mrc_embed_to_json(e, &j1) != MRC_OK ||
            mrc_embed_parse_json(t, j1, strlen(j1), "again", &back) != MRC_OK ||
            mrc_embed_to_json(back, &j2) != MRC_OK || !same_but_ports(j1, j2))
            abort();
    } else if (e != NULL || mrc_last_error()[0] == '\0') {
        abort(); /* a refusal must leave no object and say why */
    }
    mrc_free(j1);
    mrc_free(j2);
    mrc_embed_destroy(back);
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
    return 0;
}
