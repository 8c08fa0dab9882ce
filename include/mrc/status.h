/*
 * Status codes and error reporting shared by every part of mrc.
 *
 * Every fallible function returns an mrc_status_t: MRC_OK (0) on success,
 * MRC_INPROGRESS (1) from non-blocking calls that have not finished, and a
 * negative code on failure. The failing call also leaves a one-line message
 * for the calling thread, read with mrc_last_error(), that says what went
 * wrong and where (input file, line, entry, node or rank).
 */
#ifndef MRC_STATUS_H
#define MRC_STATUS_H

#include <stddef.h>

#if defined(__GNUC__) && __GNUC__ >= 4
#define MRC_EXTERN __attribute__((visibility("default")))
#else
#define MRC_EXTERN
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, message): the one list from which both the enum and the
 * strings are generated. Append new codes; never renumber. */
#define MRC_STATUS_MAP(X)                                                      \
    X(OK, 0, "success")                                                        \
    X(INPROGRESS, 1, "operation in progress")                                  \
    X(ERR_INVALID_ARG, -1, "invalid argument")                                 \
    X(ERR_NO_MEMORY, -2, "out of memory")                                      \
    X(ERR_IO, -3, "input/output error")                                        \
    X(ERR_PARSE, -4, "malformed input")                                        \
    X(ERR_INVALID_TOPOLOGY, -5, "invalid topology")                            \
    X(ERR_NOT_APPLICABLE, -6, "strategy does not apply to this topology")      \
    X(ERR_INVALID_EMBEDDING, -7, "invalid ring embedding")                     \
    X(ERR_INVALID_PROGRAM, -8, "invalid program")                              \
    X(ERR_TIMEOUT, -9, "timed out")                                            \
    X(ERR_TRANSPORT, -10, "transport failure")                                 \
    X(ERR_UNSUPPORTED, -11, "not supported")                                   \
    X(ERR_INTERNAL, -12, "internal error")                                     \
    X(ERR_PEER_LOST, -13, "a peer process is gone")

typedef enum mrc_status {
#define MRC_STATUS_ENUM_(name, value, msg) MRC_##name = (value),
    MRC_STATUS_MAP(MRC_STATUS_ENUM_)
#undef MRC_STATUS_ENUM_
} mrc_status_t;

/* The fixed description of a status code ("invalid topology"); never NULL,
 * "unknown status" for a value not in the list. */
MRC_EXTERN const char *mrc_status_string(mrc_status_t status);

/* The symbolic name of a status code ("MRC_ERR_INVALID_TOPOLOGY"). */
MRC_EXTERN const char *mrc_status_name(mrc_status_t status);

/* The detailed message left by the last failing mrc call on this thread,
 * or "" if none failed. Valid until the next mrc call on this thread. */
MRC_EXTERN const char *mrc_last_error(void);

/* Frees memory that mrc handed to the caller (strings from *_to_json,
 * *_to_dot). NULL is a no-op. */
MRC_EXTERN void mrc_free(void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* MRC_STATUS_H */
