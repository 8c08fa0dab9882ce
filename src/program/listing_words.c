/*
 * The words both listings use (see listing.h).
 */
#include <stdio.h>

#include "listing.h"

const char *mrc__listing_buf(int b)
{
    static const char *const names[] = {"-", "sendbuf", "recvbuf", "scratch",
                                        "window"};
    return b >= 0 && b <= 4 ? names[b] : "?";
}

int mrc__listing_memory_insn(mrc__strbuf_t *sb, const mrc_program_t *p,
                             const mrc__insn_t *in,
                             const mrc__listing_operands_t *o)
{
    switch (in->op) {
    case MRC__OP_EXPOSE:
        mrc__sb_puts(sb, "expose ");
        if (in->flags & MRC__INSN_ALL) {
            mrc__sb_puts(sb, "all");
        } else {
            if (in->flags & MRC__INSN_OTHERS)
                mrc__sb_puts(sb, "all but ");
            o->frag(sb, in, o->ctx);
        }
        mrc__sb_printf(sb, " of %s %s", mrc__listing_buf(in->buf_a),
                       in->flags & MRC__INSN_REF ? "by reference"
                                                 : "by copy into the window");
        return 1;
    case MRC__OP_GET:
        mrc__sb_puts(sb, "get    ");
        o->frag(sb, in, o->ctx);
        mrc__sb_printf(sb, " of %s at ", mrc__listing_buf(in->buf_a));
        o->peer(sb, in, o->ctx);
        mrc__sb_printf(sb, " into %s", mrc__listing_buf(in->buf_b));
        if (in->local || (in->flags & MRC__INSN_ACC))
            mrc__sb_printf(sb, ", %s with %s%s",
                           p->cfg.op == MRC_AVG ? "sum"
                                                : mrc_op_name(p->cfg.op),
                           in->local ? mrc__listing_buf(in->local)
                                     : mrc__listing_buf(in->buf_b),
                           (in->flags & MRC__INSN_ACC) && in->local != in->buf_b
                               ? " (s = 0), then itself"
                               : "");
        return 1;
    case MRC__OP_SIGNAL:
        mrc__sb_printf(sb, "signal flag %d", in->flag);
        return 1;
    case MRC__OP_WAIT:
        mrc__sb_printf(sb, "wait   flag %d of ", in->flag);
        o->peer(sb, in, o->ctx);
        return 1;
    case MRC__OP_BARRIER:
        mrc__sb_printf(sb, "barrier %d of the group", in->flag);
        return 1;
    default: return 0;
    }
}

const char *mrc__listing_op_kind(int kind)
{
    static const char *const names[] = {
        [MRC__SEND] = "send",       [MRC__RECV] = "recv",
        [MRC__COPY] = "copy",       [MRC__SCALE] = "scale",
        [MRC__EXPOSE] = "expose",   [MRC__GET] = "get",
        [MRC__SIGNAL] = "signal",   [MRC__WAIT] = "wait",
        [MRC__BARRIER] = "barrier", [MRC__FWD] = "forward"};
    return kind > 0 && kind <= MRC__FWD ? names[kind] : "?";
}

const char *mrc__listing_from_node(int peer)
{
    static _Thread_local char buf[32];
    snprintf(buf, sizeof buf, " from node %d", peer);
    return buf;
}

const char *mrc__listing_tree_before(const mrc__insn_t *in)
{
    return in->pred_hi == MRC__TREE_NONE_IN   ? ", first in"
           : in->pred_hi == MRC__TREE_SOME_IN ? ", after one in"
                                              : "";
}
