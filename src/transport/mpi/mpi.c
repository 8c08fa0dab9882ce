/*
 * The MPI transport (see mpi_transport.h).
 *
 * Towards a peer on another host a message is two MPI messages on the
 * private communicator: a header (collective, tag, bytes) on CTRL_TAG,
 * then the data, straight from the sender's buffer, on DATA_TAG (in
 * pieces of at most 1 GiB, so that counts stay ints). MPI keeps messages
 * between two ranks with one tag in order, so the k-th data message from
 * a peer belongs to the k-th header from it. The receiver matches headers
 * as they come (MPI_Improbe + MPI_Mrecv) and holds the data message
 * handles (MPI_Improbe) until its receive is posted, then receives them
 * straight into the destination (MPI_Imrecv), or into a temporary buffer
 * to reduce from. So no order of posting can deadlock, and a sender may be
 * a whole collective ahead.
 *
 * Peers on this host go through the shared-memory endpoint: their
 * transfers are handed on with the peer renamed to its index there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "reduce/reduce.h"
#include "transport/mpi/mpi_transport.h"

enum { CTRL_TAG = 1, DATA_TAG = 2, IDLE_TAG = 3 /* never sent */ };
#define PIECE ((size_t)1 << 30)

typedef struct header {
    uint64_t seq, tag, bytes;
    mrc__call_t call; /* the sender's, compared before any data is taken */
} header_t;

/* A message whose header has come; its data handles are probed in order. */
typedef struct arrival {
    struct arrival *next;
    int peer;
    header_t h;
    int pieces, probed;
    MPI_Message *msgs;
} arrival_t;

/* A remote send or receive in flight. */
typedef struct flight {
    struct flight *next;
    mrc__xfer_t *x;
    header_t h; /* sends: the header, sent from here */
    int nreqs;
    MPI_Request *reqs;
    void *tmp; /* receives that reduce: the data lands here */
} flight_t;

struct mrc__mpi_endpoint {
    MPI_Comm comm;
    int n, rank;
    int *local_of;
    int32_t *local_members; /* [n]: an exposure's members, renamed */
    int remote;       /* peers on other hosts: 0, and MPI is never polled */
    int thread_level; /* MPI's, for the idle probe */
    mrc__shm_endpoint_t *shm;
    mrc__transport_t shm_t;
    uint64_t seq;
    mrc__call_t call;     /* this rank's current call */
    arrival_t *arrivals;  /* oldest first */
    mrc__xfer_t **posted; /* remote receives waiting for their message */
    size_t num_posted, cap_posted;
    flight_t *flights;
};

static int pieces_of(uint64_t bytes)
{
    return (int)((bytes + PIECE - 1) / PIECE);
}

static mrc_status_t mpi_failed(const mrc__mpi_endpoint_t *e, const char *what,
                               int rc)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (PMPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "error %d", rc);
    return mrc__error(MRC_ERR_TRANSPORT, "rank %d: %s failed: %s", e->rank,
                      what, msg);
}

/* While a rank waits in mrc, MPI must progress too: a peer may be blocked
 * in an MPI_Send to this rank that needs this rank's MPI to take it (a
 * rendezvous), before it can join the collective. One probe (for a tag
 * that is never sent) runs MPI's progress engine, whatever the
 * communicator. Only from a thread that MPI lets call it: any, under
 * MPI_THREAD_MULTIPLE; otherwise the main thread (a program that calls
 * mrc from a worker under MPI_THREAD_FUNNELED must not find MPI called
 * from there). */
static void mpi_idle(void *ctx)
{
    mrc__mpi_endpoint_t *e = ctx;
    int flag = 0, main_thread = 0;
    if (e->thread_level != MPI_THREAD_MULTIPLE &&
        (PMPI_Is_thread_main(&main_thread) != MPI_SUCCESS || !main_thread))
        return;
    PMPI_Iprobe(MPI_ANY_SOURCE, IDLE_TAG, e->comm, &flag, MPI_STATUS_IGNORE);
}

mrc_status_t mrc__mpi_endpoint_create(MPI_Comm comm, const int *local_of,
                                      mrc__shm_endpoint_t *shm,
                                      mrc__mpi_endpoint_t **out)
{
    *out = NULL;
    mrc__mpi_endpoint_t *e = calloc(1, sizeof *e);
    if (!e) {
        mrc__shm_detach(shm);
        PMPI_Comm_free(&comm);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    e->comm = comm;
    PMPI_Comm_size(comm, &e->n);
    PMPI_Comm_rank(comm, &e->rank);
    PMPI_Query_thread(&e->thread_level);
    e->shm = shm;
    if (shm)
        e->shm_t = mrc__shm_transport(shm);
    e->local_of = malloc((size_t)e->n * sizeof *e->local_of);
    e->local_members = malloc((size_t)e->n * sizeof *e->local_members);
    if (!e->local_of || !e->local_members) {
        mrc__mpi_endpoint_destroy(e);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    for (int r = 0; r < e->n; r++) {
        e->local_of[r] = shm ? local_of[r] : -1;
        e->remote += r != e->rank && e->local_of[r] < 0;
    }
    if (shm)
        mrc__shm_set_idle(shm, mpi_idle, e);
    *out = e;
    return MRC_OK;
}

void mrc__mpi_endpoint_destroy(mrc__mpi_endpoint_t *e)
{
    if (!e)
        return;
    while (e->arrivals) {
        arrival_t *a = e->arrivals;
        e->arrivals = a->next;
        free(a->msgs);
        free(a);
    }
    while (e->flights) {
        flight_t *f = e->flights;
        e->flights = f->next;
        for (int i = 0; i < f->nreqs; i++)
            if (f->reqs[i] != MPI_REQUEST_NULL) {
                PMPI_Cancel(&f->reqs[i]);
                PMPI_Request_free(&f->reqs[i]);
            }
        free(f->reqs);
        free(f->tmp);
        free(f);
    }
    free(e->posted);
    free(e->local_of);
    free(e->local_members);
    mrc__shm_detach(e->shm);
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (!finalized && e->comm != MPI_COMM_NULL)
        PMPI_Comm_free(&e->comm);
    free(e);
}

/* ---- receiving --------------------------------------------------------- */

static mrc_status_t take_headers(mrc__mpi_endpoint_t *e, int *moved)
{
    for (;;) {
        int flag = 0;
        MPI_Message msg;
        MPI_Status s;
        int rc =
            PMPI_Improbe(MPI_ANY_SOURCE, CTRL_TAG, e->comm, &flag, &msg, &s);
        if (rc != MPI_SUCCESS)
            return mpi_failed(e, "MPI_Improbe", rc);
        if (!flag)
            return MRC_OK;
        arrival_t *a = calloc(1, sizeof *a);
        if (!a)
            return mrc__error(MRC_ERR_NO_MEMORY, "rank %d: out of memory",
                              e->rank);
        rc = PMPI_Mrecv(&a->h, (int)sizeof a->h, MPI_BYTE, &msg, &s);
        if (rc != MPI_SUCCESS) {
            free(a);
            return mpi_failed(e, "MPI_Mrecv", rc);
        }
        a->peer = s.MPI_SOURCE;
        a->pieces = pieces_of(a->h.bytes);
        a->msgs = calloc((size_t)(a->pieces ? a->pieces : 1), sizeof *a->msgs);
        if (!a->msgs) {
            free(a);
            return mrc__error(MRC_ERR_NO_MEMORY, "rank %d: out of memory",
                              e->rank);
        }
        arrival_t **tail = &e->arrivals;
        while (*tail)
            tail = &(*tail)->next;
        *tail = a;
        *moved = 1;
    }
}

/* Data messages from each peer belong to its headers in order. */
static mrc_status_t take_data(mrc__mpi_endpoint_t *e, int *moved)
{
    for (arrival_t *a = e->arrivals; a; a = a->next) {
        if (a->probed == a->pieces)
            continue;
        int first = 1; /* only the peer's oldest incomplete arrival */
        for (arrival_t *b = e->arrivals; b != a; b = b->next)
            if (b->peer == a->peer && b->probed < b->pieces)
                first = 0;
        while (first && a->probed < a->pieces) {
            int flag = 0;
            MPI_Status s;
            int rc = PMPI_Improbe(a->peer, DATA_TAG, e->comm, &flag,
                                  &a->msgs[a->probed], &s);
            if (rc != MPI_SUCCESS)
                return mpi_failed(e, "MPI_Improbe", rc);
            if (!flag)
                break;
            a->probed++;
            *moved = 1;
        }
    }
    return MRC_OK;
}

/* Starts receiving a message whose receive is posted. */
static mrc_status_t start_recv(mrc__mpi_endpoint_t *e, mrc__xfer_t *x,
                               arrival_t *a)
{
    if (!mrc__call_same(a->h.call, e->call))
        return mrc__call_mismatch(a->peer, a->h.call, e->rank, e->call);
    if (a->h.bytes != x->bytes)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: %llu bytes arrived from rank %d where "
                          "%zu were expected",
                          e->rank, (unsigned long long)a->h.bytes, a->peer,
                          x->bytes);
    flight_t *f = calloc(1, sizeof *f);
    if (!f)
        return mrc__error(MRC_ERR_NO_MEMORY, "rank %d: out of memory", e->rank);
    f->x = x;
    f->nreqs = a->pieces;
    f->reqs = malloc((size_t)(a->pieces ? a->pieces : 1) * sizeof *f->reqs);
    if (x->local && x->bytes)
        f->tmp = malloc(x->bytes);
    if (!f->reqs || (x->local && x->bytes && !f->tmp)) {
        free(f->reqs);
        free(f);
        return mrc__error(MRC_ERR_NO_MEMORY,
                          "rank %d: out of memory for %zu bytes from rank %d",
                          e->rank, x->bytes, a->peer);
    }
    char *into = f->tmp ? f->tmp : x->dst;
    for (int i = 0; i < a->pieces; i++) {
        size_t off = (size_t)i * PIECE;
        size_t len = x->bytes - off < PIECE ? x->bytes - off : PIECE;
        int rc = PMPI_Imrecv(into + off, (int)len, MPI_BYTE, &a->msgs[i],
                             &f->reqs[i]);
        if (rc != MPI_SUCCESS) {
            f->nreqs = i;
            f->next = e->flights;
            e->flights = f;
            return mpi_failed(e, "MPI_Imrecv", rc);
        }
    }
    f->next = e->flights;
    e->flights = f;
    return MRC_OK;
}

/* Pairs posted receives with complete arrivals. */
static mrc_status_t match(mrc__mpi_endpoint_t *e, int *moved)
{
    for (size_t i = 0; i < e->num_posted;) {
        mrc__xfer_t *x = e->posted[i];
        arrival_t **pp = &e->arrivals;
        while (*pp &&
               !((*pp)->peer == x->peer && (*pp)->h.tag == x->tag &&
                 (*pp)->h.seq == x->priv[0] && (*pp)->probed == (*pp)->pieces))
            pp = &(*pp)->next;
        if (!*pp) {
            i++;
            continue;
        }
        arrival_t *a = *pp;
        *pp = a->next;
        mrc_status_t st = start_recv(e, x, a);
        free(a->msgs);
        free(a);
        if (st != MRC_OK)
            return st;
        e->posted[i] = e->posted[--e->num_posted];
        *moved = 1;
    }
    return MRC_OK;
}

/* Completes sends and receives whose requests are done. */
static mrc_status_t finish(mrc__mpi_endpoint_t *e, int *moved)
{
    for (flight_t **pp = &e->flights; *pp;) {
        flight_t *f = *pp;
        int flag = 1;
        if (f->nreqs) {
            int rc =
                PMPI_Testall(f->nreqs, f->reqs, &flag, MPI_STATUSES_IGNORE);
            if (rc != MPI_SUCCESS)
                return mpi_failed(e, "MPI_Testall", rc);
        }
        if (!flag) {
            pp = &f->next;
            continue;
        }
        mrc__xfer_t *x = f->x;
        if (f->tmp)
            mrc__reduce(x->dst, x->local, f->tmp,
                        x->bytes / mrc_dtype_size(x->dtype), x->dtype, x->op);
        __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
        *pp = f->next;
        free(f->reqs);
        free(f->tmp);
        free(f);
        *moved = 1;
    }
    return MRC_OK;
}

static mrc_status_t progress(mrc__mpi_endpoint_t *e)
{
    int moved = 0;
    mrc_status_t st = take_headers(e, &moved);
    if (st == MRC_OK)
        st = take_data(e, &moved);
    if (st == MRC_OK)
        st = match(e, &moved);
    if (st == MRC_OK)
        st = finish(e, &moved);
    return st;
}

/* ---- the transport operations ----------------------------------------- */

static int is_local(const mrc__mpi_endpoint_t *e, const mrc__xfer_t *x)
{
    return e->local_of[x->peer] >= 0;
}

static mrc_status_t mpi_begin(void *ctx, uint64_t seq, const mrc__call_t *call,
                              const mrc__xfer_t *recvs, size_t n)
{
    (void)recvs;
    (void)n;
    mrc__mpi_endpoint_t *e = ctx;
    e->seq = seq;
    e->call = *call;
    if (e->shm)
        return e->shm_t.ops->begin(e->shm_t.ctx, seq, call, NULL, 0);
    return MRC_OK;
}

static mrc_status_t mpi_isend(void *ctx, const void *buf, mrc__xfer_t *x)
{
    mrc__mpi_endpoint_t *e = ctx;
    if (is_local(e, x)) {
        x->peer = e->local_of[x->peer];
        return e->shm_t.ops->isend(e->shm_t.ctx, buf, x);
    }
    flight_t *f = calloc(1, sizeof *f);
    int pieces = pieces_of(x->bytes);
    if (f)
        f->reqs = malloc((size_t)(pieces + 1) * sizeof *f->reqs);
    if (!f || !f->reqs) {
        free(f);
        return mrc__error(MRC_ERR_NO_MEMORY, "rank %d: out of memory", e->rank);
    }
    f->x = x;
    f->h = (header_t){e->seq, x->tag, x->bytes, e->call};
    int rc = PMPI_Isend(&f->h, (int)sizeof f->h, MPI_BYTE, x->peer, CTRL_TAG,
                        e->comm, &f->reqs[0]);
    f->nreqs = rc == MPI_SUCCESS;
    for (int i = 0; i < pieces && rc == MPI_SUCCESS; i++) {
        size_t off = (size_t)i * PIECE;
        size_t len = x->bytes - off < PIECE ? x->bytes - off : PIECE;
        rc = PMPI_Isend((const char *)buf + off, (int)len, MPI_BYTE, x->peer,
                        DATA_TAG, e->comm, &f->reqs[f->nreqs]);
        f->nreqs += rc == MPI_SUCCESS;
    }
    f->next = e->flights;
    e->flights = f;
    x->posted = 1;
    if (rc != MPI_SUCCESS)
        return mpi_failed(e, "MPI_Isend", rc);
    return MRC_OK;
}

static mrc_status_t mpi_irecv(void *ctx, mrc__xfer_t *x)
{
    mrc__mpi_endpoint_t *e = ctx;
    if (is_local(e, x)) {
        x->peer = e->local_of[x->peer];
        return e->shm_t.ops->irecv(e->shm_t.ctx, x);
    }
    if (e->num_posted == e->cap_posted) {
        size_t cap = e->cap_posted ? 2 * e->cap_posted : 64;
        mrc__xfer_t **q = realloc(e->posted, cap * sizeof *q);
        if (!q)
            return mrc__error(MRC_ERR_NO_MEMORY, "rank %d: out of memory",
                              e->rank);
        e->posted = q;
        e->cap_posted = cap;
    }
    x->priv[0] = e->seq;
    x->posted = 1;
    e->posted[e->num_posted++] = x;
    int moved = 0;
    return match(e, &moved);
}

/* A transfer towards this host was renamed when posted, so test cannot
 * tell where it went: it moves both sides along. */
static mrc_status_t mpi_test(void *ctx, mrc__xfer_t *x)
{
    mrc__mpi_endpoint_t *e = ctx;
    if (__atomic_load_n(&x->done, __ATOMIC_ACQUIRE))
        return MRC_OK;
    mrc_status_t st = MRC_OK;
    if (e->shm)
        st = e->shm_t.ops->test(e->shm_t.ctx, x);
    if (st == MRC_OK && e->remote) /* MPI's progress costs a microsecond */
        st = progress(e);
    return st;
}

static mrc_status_t mpi_end(void *ctx)
{
    mrc__mpi_endpoint_t *e = ctx;
    return e->shm ? e->shm_t.ops->end(e->shm_t.ctx) : MRC_OK;
}

/* The members of a group on this host, by their index there, into
 * e->local_members; how many. */
static int to_local_members(mrc__mpi_endpoint_t *e, const int32_t *members,
                            int num_members)
{
    int local = 0;
    for (int i = 0; i < num_members; i++) {
        int m = members[i];
        if (m >= 0 && m < e->n && e->local_of[m] >= 0)
            e->local_members[local++] = e->local_of[m];
    }
    return local;
}

/* Memory semantics between the ranks of each host, through its
 * shared-memory endpoint, for ranks on several hosts in equal blocks
 * (hier's programs; the transport has none otherwise: mrc__mpi_transport
 * gives the table without them, and a job on one host runs on the
 * segment's own operations). */
static mrc_status_t mpi_publish(void *ctx, const mrc__exposure_t *x,
                                void **window)
{
    mrc__mpi_endpoint_t *e = ctx;
    /* The readers of the window are the group's members on this host
     * (hier's programs get only within a host), by their index there. */
    mrc__exposure_t local = *x;
    local.members = e->local_members;
    local.num_members = to_local_members(e, x->members, x->num_members);
    return e->shm_t.ops->publish(e->shm_t.ctx, &local, window);
}

/* A peer's index in this host's segment, or an error for one elsewhere
 * (a program's get or wait reaches only this host's ranks). */
static mrc_status_t local_peer(const mrc__mpi_endpoint_t *e, int peer, int *out)
{
    *out = peer >= 0 && peer < e->n ? e->local_of[peer] : -1;
    if (*out >= 0)
        return MRC_OK;
    return mrc__error(MRC_ERR_TRANSPORT,
                      "rank %d: rank %d is not on this host: memory "
                      "semantics reach only the ranks of one host",
                      e->rank, peer);
}

static mrc_status_t mpi_get(void *ctx, int peer, int buf, uint64_t off,
                            mrc__xfer_t *x)
{
    mrc__mpi_endpoint_t *e = ctx;
    int lp;
    mrc_status_t st = local_peer(e, peer, &lp);
    return st != MRC_OK ? st : e->shm_t.ops->get(e->shm_t.ctx, lp, buf, off, x);
}

static mrc_status_t mpi_signal(void *ctx, int flag)
{
    mrc__mpi_endpoint_t *e = ctx;
    return e->shm_t.ops->signal(e->shm_t.ctx, flag);
}

static mrc_status_t mpi_wait(void *ctx, int peer, int flag)
{
    mrc__mpi_endpoint_t *e = ctx;
    int lp;
    mrc_status_t st = local_peer(e, peer, &lp);
    return st != MRC_OK ? st : e->shm_t.ops->wait(e->shm_t.ctx, lp, flag);
}

static int mpi_reads_buffers(void *ctx)
{
    mrc__mpi_endpoint_t *e = ctx;
    return e->shm_t.ops->reads_buffers(e->shm_t.ctx);
}

static void mpi_cancel(void *ctx, mrc_status_t st)
{
    mrc__mpi_endpoint_t *e = ctx;
    if (e->shm && e->shm_t.ops->cancel)
        e->shm_t.ops->cancel(e->shm_t.ctx, st);
}

/* The peers of this host (those on others: MPI's semantics, where a
 * rank that hears from no peer that disagrees returns). */
static mrc_status_t mpi_agree(void *ctx, const int32_t *members,
                              int num_members)
{
    mrc__mpi_endpoint_t *e = ctx;
    if (!e->shm)
        return MRC_OK;
    int local = to_local_members(e, members, num_members);
    return e->shm_t.ops->agree(e->shm_t.ctx, e->local_members, local);
}

static const mrc__transport_ops_t mpi_ops = {
    .name = "mpi",
    .begin = mpi_begin,
    .isend = mpi_isend,
    .irecv = mpi_irecv,
    .test = mpi_test,
    .end = mpi_end,
    .agree = mpi_agree,
    .cancel = mpi_cancel,
    .idle = mpi_idle,
};

/* Every rank on this host (or hier's hosts): the same, and the memory
 * semantics. */
static const mrc__transport_ops_t mpi_local_ops = {
    .name = "mpi",
    .begin = mpi_begin,
    .isend = mpi_isend,
    .irecv = mpi_irecv,
    .test = mpi_test,
    .end = mpi_end,
    .agree = mpi_agree,
    .cancel = mpi_cancel,
    .publish = mpi_publish,
    .get = mpi_get,
    .signal = mpi_signal,
    .wait = mpi_wait,
    .reads_buffers = mpi_reads_buffers,
    .idle = mpi_idle,
};

mrc__transport_t mrc__mpi_transport(mrc__mpi_endpoint_t *e, int host_memory)
{
    /* Every rank on this host: the segment's operations themselves (the
     * ranks' indices there are theirs in the job), MPI let progress while
     * they wait; handing each operation on cost a small call a quarter of
     * its time. */
    int identity = e->shm && !e->remote;
    for (int r = 0; identity && r < e->n; r++)
        identity = e->local_of[r] == r;
    if (identity)
        return mrc__shm_transport_named(e->shm, "mpi");
    /* Ranks on several hosts in equal blocks with a segment on each have
     * the memory semantics between the ranks of a host (the hier
     * family's; a get of a rank on another host is refused). */
    mrc__transport_t t = {
        e->shm && (!e->remote || host_memory) ? &mpi_local_ops : &mpi_ops, e};
    return t;
}
