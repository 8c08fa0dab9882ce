/*
 * mrc — multi-ring collective communication.
 *
 * The umbrella header: include this one. It brings in the status codes and
 * the public header of each stage of the data flow:
 *
 *   topology (topo.h) -> rings -> program -> executor | simulator
 */
#ifndef MRC_MRC_H
#define MRC_MRC_H

#include "mrc/comm.h"
#include "mrc/embed.h"
#include "mrc/fabric.h"
#include "mrc/profile.h"
#include "mrc/program.h"
#include "mrc/sim.h"
#include "mrc/status.h"
#include "mrc/topo.h"
#include "mrc/types.h"
#include "mrc/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version as "MAJOR.MINOR.PATCH" (of the library that is
 * linked, which may differ from MRC_VERSION_STRING the caller compiled
 * against). */
MRC_EXTERN const char *mrc_version(void);

/* sizeof the public struct named as its header spells it ("mrc_profile_t"),
 * for bindings that mirror the layouts (python/mrc checks each at load,
 * so that a field added on one side is an error, not a write past the
 * end of the other's); 0 for a name that is not one. */
MRC_EXTERN size_t mrc_struct_size(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* MRC_MRC_H */
