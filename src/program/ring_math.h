/*
 * The ring index arithmetic of the program module, as small pure
 * functions (as UCC's coll_patterns/ring.h has them): positions on a ring
 * and on its reversed direction, the hops a position leaves and enters
 * by, the affine expressions of the code (fragments and peers), the cut
 * of a slice into near-equal parts, where a block lies in a buffer, and
 * the binomial tree's steps. The expansion, the compiler, the checkers
 * and the listings all use these; tests/unit/program/test_ring_math.c
 * checks each against brute force.
 */
#ifndef MRC_PROGRAM_RING_MATH_H
#define MRC_PROGRAM_RING_MATH_H

#include <stdint.h>

/* a mod n (n >= 1), in 0 .. n-1 for any a; operands are mostly within a
 * few multiples of n, so a subtraction or two beats a 64-bit division
 * (which dominated the checker). */
static inline int mrc__ring_mod(long a, int n)
{
    if (a >= 0 && a < n)
        return (int)a;
    if (a < -4L * n || a >= 4L * n) {
        long r = a % n;
        return (int)(r < 0 ? r + n : r);
    }
    while (a < 0)
        a += n;
    while (a >= n)
        a -= n;
    return (int)a;
}

/* The positions after and before pos (0 <= pos < n) on a ring of n. */
static inline int mrc__ring_next(int pos, int n)
{
    return (pos + 1) % n;
}

static inline int mrc__ring_prev(int pos, int n)
{
    return (pos + n - 1) % n;
}

/* (a x + b y + c) mod n: a fragment (frag_pos * pos + frag_step * s +
 * frag_const) or a peer's position (root + peer_pos * rel + peer_step * s
 * + peer_const) of the code's expressions. */
static inline int mrc__ring_affine(long a, long x, long b, long y, long c,
                                   int n)
{
    return mrc__ring_mod(a * x + b * y + c, n);
}

/* A ring of n nodes has hops h = 0 .. n-1, hop h from ring index h to
 * h + 1 (mod n). A stream runs it forward, position pos at index pos, or
 * reversed, position pos at index (n - pos) mod n: the same node at
 * position 0, then the ring backwards. */
static inline int mrc__ring_index(int pos, int n, int reversed)
{
    return reversed ? (n - pos) % n : pos;
}

/* The hop the node at ring index i sends on to its next position, and
 * the hop it receives on from its previous one. Forward, i leaves by
 * hop i and is entered by hop i - 1; reversed, it leaves by hop i - 1
 * (walked backwards, from its far end) and is entered by hop i
 * (backwards). */
static inline int mrc__ring_out_hop(int i, int n, int reversed)
{
    return reversed ? (i + n - 1) % n : i;
}

static inline int mrc__ring_in_hop(int i, int n, int reversed)
{
    return reversed ? i : (i + n - 1) % n;
}

/* A hop's route of len nodes walked forward (place j at the route's node
 * j) or, for a reversed stream, backwards (place j at node len - 1 - j). */
static inline int mrc__route_index(int j, int len, int reversed)
{
    return reversed ? len - 1 - j : j;
}

/* Part i of a slice cut in parts near-equal parts, the first r = len mod
 * parts of them one element longer (q = len / parts): its first element
 * and its length. */
static inline void mrc__split_part_qr(uint64_t q, uint64_t r, uint64_t i,
                                      uint64_t *start, uint64_t *len)
{
    *start = i * q + (i < r ? i : r);
    *len = q + (i < r);
}

/* The length of part i of len cut in parts, and of the longest part. */
static inline uint64_t mrc__split_len(uint64_t len, uint64_t parts, uint64_t i)
{
    return len / parts + (i < len % parts);
}

static inline uint64_t mrc__split_max(uint64_t len, uint64_t parts)
{
    return (len + parts - 1) / parts;
}

/* Where data at element `start` of a block's slice lies in a buffer: in
 * one indexed by the whole vector (blocks of count elements), block *
 * count + start; in one that holds only the node's own block (own_only:
 * reduce-scatter's recvbuf, allgather's sendbuf), start for the node's
 * rank and -1 (not held) for any other block. block < 0: the buffer is
 * not cut in blocks, start itself. */
static inline int mrc__block_place(int block, int rank, int own_only,
                                   uint64_t count, uint64_t start,
                                   uint64_t *off)
{
    if (block < 0) {
        *off = start;
        return 0;
    }
    if (own_only) {
        if (block != rank)
            return -1;
        *off = start;
        return 0;
    }
    *off = (uint64_t)block * count + start;
    return 0;
}

/* A predicate's bound: a negative argument means n + arg. */
static inline int mrc__pred_bound(int arg, int n)
{
    return arg < 0 ? n + arg : arg;
}

/* ceil(log2 n): the binomial tree's steps (0 for n <= 1). */
static inline int mrc__ceil_log2(int n)
{
    int l = 0;
    while (l < 31 && (1L << l) < n)
        l++;
    return l;
}

/* The binomial tree over rel = 0 .. n-1 (the root at 0) at step t: a
 * child sends its partial sum to rel - 2^t when rel mod 2^(t+1) = 2^t;
 * a parent receives from rel + 2^t when rel mod 2^(t+1) = 0 and that
 * child exists (rel + 2^t < n). */
static inline int mrc__tree_child(int rel, int t)
{
    if (t < 0 || t > 30)
        return 0;
    long step = 1L << t;
    return rel % (step << 1) == step;
}

static inline int mrc__tree_parent(int rel, int n, int t)
{
    if (t < 0 || t > 30)
        return 0;
    long step = 1L << t;
    return rel % (step << 1) == 0 && rel + step < n;
}

/* Whether tree node rel has received at a step before t of the reduce
 * (t ascending): a parent at t' = 0, the earliest, whenever it is one at
 * any t' < t, which takes rel even and rel + 1 < n. */
static inline int mrc__tree_received_before(int rel, int n, int t)
{
    return t > 0 && rel % 2 == 0 && rel + 1 < n;
}

/* The tree peer's position: root + rel + dir 2^t (mod n), dir -1 for a
 * child's parent, 1 for a parent's child. */
static inline int mrc__tree_peer(int root, int rel, int dir, int t, int n)
{
    return mrc__ring_mod((long)root + rel + (long)dir * (1L << t), n);
}

#endif /* MRC_PROGRAM_RING_MATH_H */
