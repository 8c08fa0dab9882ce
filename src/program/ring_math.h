/*
 * The ring index arithmetic of the program module, as small pure
 * functions that the expansion, the checkers and the listings share.
 */
#ifndef MRC_PROGRAM_RING_MATH_H
#define MRC_PROGRAM_RING_MATH_H

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

#endif /* MRC_PROGRAM_RING_MATH_H */
