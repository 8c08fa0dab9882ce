/* The warm-up before a timed loop (see warm.h). */
#include <stdint.h>

#include "warm.h"
#include "clock.h"

mrc_status_t mrc__warm_up(int calls, mrc__warm_call_fn call, void *ctx,
                          mrc__warm_agree_fn agree, void *actx)
{
    mrc_status_t st = MRC_OK;
    for (int i = 0; i < calls && st == MRC_OK; i++)
        st = call(ctx);
    double start = mrc__ref_now_s();
    while (calls > 0 && st == MRC_OK) {
        int more = mrc__ref_now_s() - start < MRC__WARM_S;
        st = agree(actx, &more);
        if (st != MRC_OK || !more)
            break;
        for (int i = 0; i < MRC__WARM_MORE && st == MRC_OK; i++)
            st = call(ctx);
    }
    return st;
}

mrc_status_t mrc__warm_agree_comm(void *actx, int *more)
{
    int32_t word = *more != 0;
    mrc_status_t st =
        mrc_allreduce(&word, &word, 1, MRC_INT32, MRC_MAX, (mrc_comm_t *)actx);
    *more = st == MRC_OK && word != 0;
    return st;
}
