/* Messages in flight, by (sender, receiver, tag): a chained hash over a
 * pool with a free list (see program_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "program_internal.h"

int mrc__msgmap_init(mrc__msgmap_t *m, size_t expected)
{
    memset(m, 0, sizeof *m);
    m->cap = 64;
    while (m->cap < 2 * expected + 2)
        m->cap *= 2;
    m->bucket = malloc(m->cap * sizeof *m->bucket);
    if (!m->bucket)
        return -1;
    memset(m->bucket, 0xff, m->cap * sizeof *m->bucket);
    m->free_head = -1;
    return 0;
}

void mrc__msgmap_free(mrc__msgmap_t *m)
{
    free(m->bucket);
    free(m->pool);
    memset(m, 0, sizeof *m);
}

static size_t bucket_of(const mrc__msgmap_t *m, int src, int dst, uint64_t tag)
{
    return (size_t)mrc__mix64(((uint64_t)(uint32_t)src << 32 | (uint32_t)dst) ^
                              mrc__mix64(tag)) &
           (m->cap - 1);
}

int32_t *mrc__msgmap_find(mrc__msgmap_t *m, int src, int dst, uint64_t tag)
{
    int32_t *link = &m->bucket[bucket_of(m, src, dst, tag)];
    while (*link >= 0) {
        mrc__msg_t *e = &m->pool[*link];
        if (e->src == src && e->dst == dst && e->tag == tag)
            return link;
        link = &e->next;
    }
    return link;
}

mrc__msg_t *mrc__msgmap_add(mrc__msgmap_t *m, int src, int dst, uint64_t tag)
{
    int32_t i = m->free_head;
    if (i >= 0) {
        m->free_head = m->pool[i].next;
    } else {
        if (mrc__grow((void **)&m->pool, &m->alloc, m->num + 1,
                      sizeof *m->pool))
            return NULL;
        i = m->num++;
    }
    mrc__msg_t *e = &m->pool[i];
    memset(e, 0, sizeof *e);
    e->src = src;
    e->dst = dst;
    e->tag = tag;
    size_t b = bucket_of(m, src, dst, tag);
    e->next = m->bucket[b];
    m->bucket[b] = i;
    m->live++;
    return e;
}

void mrc__msgmap_remove(mrc__msgmap_t *m, int32_t *link)
{
    int32_t i = *link;
    *link = m->pool[i].next;
    m->pool[i].next = m->free_head;
    m->free_head = i;
    m->live--;
}
