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

#ifdef __cplusplus
}
#endif

#endif /* MRC_MRC_H */
