/*
 * A host profile: what one node of a CPU host costs beside its links,
 * measured by `mrc calibrate` and read by the simulator (its node model),
 * `mrc explain` and the algorithm selector. Stored as versioned JSON
 * (docs/simulator.md, "Profiles").
 *
 * Without a profile the simulator models an accelerator interconnect:
 * local memory, reductions and message handling are free, and only the
 * links cost time.
 */
#ifndef MRC_PROFILE_H
#define MRC_PROFILE_H

#include <stddef.h>

#include "mrc/status.h"
#include "mrc/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The profile format's version; a file of another version is refused. */
#define MRC_PROFILE_VERSION 1

typedef struct mrc_profile {
    int version;        /* MRC_PROFILE_VERSION */
    char transport[16]; /* "threads", "shm" or "mpi": what was measured */
    int ranks;          /* nodes the probes ran with */
    int cores;          /* the host's online cores when measured */
    /* How many nodes share one memory system (the ranks of one host). */
    int nodes_per_memory;
    /* Copy bandwidth of one node alone (GB/s, bytes copied per second):
     * for working sets up to cache_bytes, and beyond. The working set is
     * every byte the nodes of one memory system touch in a run (their
     * send and receive buffers): between the two regimes the model
     * blends the rates by the share of it that fits. */
    double cache_bytes;
    double copy_gbps_cache;
    double copy_gbps_memory;
    /* The memory system's total copy bandwidth when all its nodes copy
     * at once (GB/s); what nodes_per_memory nodes share beyond cache. */
    double memory_gbps_shared;
    /* The rate at which a node takes data another node of its host has
     * just written (GB/s, in cache): the lines come from the other core,
     * not from the node's own cache. Optional; 0: copy_gbps_cache. */
    double peer_gbps_cache;
    /* The cache of one core (bytes): a node's send and receive buffers up
     * to this size stay in it, and a peer takes them at peer_gbps_cache;
     * beyond it they have gone to the shared cache, whence they come at
     * copy_gbps_cache. Optional; 0: peer_gbps_cache for all of the cache
     * regime. */
    double private_cache_bytes;
    /* Reduction kernel rate, bytes of one input operand per second
     * (GB/s), per dtype and op, in and beyond cache; 0 where not
     * measured (the copy rate is used). */
    double reduce_gbps_cache[MRC_NUM_DTYPES][MRC_NUM_OPS];
    double reduce_gbps_memory[MRC_NUM_DTYPES][MRC_NUM_OPS];
    /* The transport's software cost of one message (us: within a host
     * its receiver's core's, as work, so that two streams' messages add;
     * and a memory operation's where get_us is 0), and of one barrier or
     * flag round trip (us). */
    double message_us;
    double sync_us;
    /* (Added after the first release of version 1: at the end, so that
     * the layout of the fields above stays as it was. The struct grows
     * with them: a caller must be compiled against the header of the
     * library it links, which mrc_struct_size("mrc_profile_t") lets a
     * binding check.) */
    /* The rate at which a node takes what another node of its host wrote
     * once those lines have left the writer's own cache (GB/s): from the
     * shared cache, where on a busy host they come slower than a core's
     * copy of its own data. Optional; 0: copy_gbps_cache. */
    double peer_gbps_shared;
    /* How a send/receive message between two nodes of one host goes.
     * Smaller than rendezvous_bytes: through the transport's slots, copied
     * in by the sender and out by the receiver, at slot_gbps (GB/s, in
     * cache; 0: the peer rate); from it on: by rendezvous, the receiver
     * reading the sender's buffer once, at the peer rate, its core busy
     * rendezvous_us more (the handshake, a system call). Optional; 0:
     * no slots and no rendezvous (the receiver reads the sender's buffer,
     * as the threads transport does). */
    double rendezvous_bytes;
    double rendezvous_us;
    double slot_gbps;
    /* When a host runs more nodes than it has cores: what a wait on
     * another node (a message it sends, a flag it sets) costs beyond
     * message_us or sync_us, the turn that node waits for a core (us).
     * A get after the flag waits for nothing more. Optional; 0. */
    double turn_us;
    /* The same for a memory-semantic program's flags and barriers, whose
     * peers have mostly run by the time they are waited for (us).
     * Optional; 0. */
    double flag_turn_us;
    /* A memory-semantic program's get (us): what a memory operation
     * costs beside its bytes, where message_us is a send's, which its
     * receiver's core pays as work. Optional; 0: message_us. */
    double get_us;
    /* The rate of a copy through the kernel from another process (GB/s,
     * in cache: shm's rendezvous and gets by reference), where a get
     * from a window in shared memory is a plain copy at the peer rate
     * (window_gbps where the profile has it). Optional; 0: the peer
     * rate. */
    double kernel_gbps;
    /* When a host runs more nodes than it has cores: the share of a core
     * a node of the call takes while it waits (spinning, yielding) beside
     * the nodes at work, 0 to 1. The nodes at work share the cores with
     * the waiting ones at this weight (docs/simulator.md, "Cores shared
     * by the nodes at work"). Optional; 0: a waiting node takes none. */
    double spin_share;
    /* How fast the share of a working set that the cache holds falls
     * once the set is past cache_bytes: (cache_bytes / set) to this
     * power, at least 1. A stream of lines through an LRU-like cache
     * keeps little of a set twice its size, where the share of power 1
     * keeps half (on a host with 32 MiB of L3, fitting power 1 to a
     * call of a 64 MiB set made cache_bytes 2-15 MiB, and a 16 MiB set,
     * in cache, was predicted as mostly beyond it). Optional; 0: 1. */
    double cache_falloff;
    /* How much slower a node takes a peer's lines while other nodes of
     * its host take theirs (the pipelined walk): its reads of peers'
     * lines run 1 + peer_contention x (readers - 1) times as long,
     * readers the nodes of the host reading at that moment (at most
     * its cores), for the share of the set in cache. Cores that read
     * each other's lines share the path between them: on a 2-core host
     * one core read a peer's fresh 256 KiB at 82 GB/s alone and at 63
     * while the other did the same (bench/peer-read). Optional; 0: none. */
    double peer_contention;
    /* A node's copy rate once its own buffers have left its private
     * cache (private_cache_bytes) for the shared one (GB/s): for the
     * share of the node's send, receive and window buffers past its
     * private cache every in-cache rate of the node (its copies and
     * reductions, the slots', the peers' lines, the kernel's copy) runs
     * at copy_gbps_shared / copy_gbps_cache of its figure. On a 2-core
     * host with 1 MiB of L2 a core, shm's 1 MiB allreduces took 1.3-1.6x
     * their 256 KiB calls scaled, every family alike. Optional; 0: no
     * such level (the threads transport's peer_gbps_shared takes the
     * peer's lines past the writer's core). */
    double copy_gbps_shared;
    /* A send/receive message's latency within a host (us): how long a
     * message alone waits beyond its copies and message_us, the time its
     * sender's signal takes to reach the receiver's core. The messages of
     * a step overlap theirs (the rings' two streams, both directions),
     * where the work of message_us adds up on the receiver's core; one
     * message waiting on another (the tree's) pays it each time.
     * Optional; 0: none (message_us then holds it, as work). */
    double latency_us;
    /* With more nodes on a host than cores: the share of turn_us (0-1)
     * that a message takes in a quiet step, one in which no more of the
     * host's nodes have a message than it has cores (the tree's inner
     * steps). Its waiting nodes spin on the cores it would run on, and
     * a core goes to a waiter that has not had its time. A step of every
     * node (the rings', where turn_us is fitted) takes the whole turn,
     * and steps between the two their share of the difference.
     * Optional; 0: a quiet step takes none. */
    double quiet_turn_share;
    /* The host's speed when it was calibrated: the fastest 4 KiB
     * allreduce of two threads (us a call) among the canaries that
     * bracketed the probes, so that `--check` can tell a host that runs
     * slower (or faster) than then. Optional; 0: not measured. */
    double canary_us;
    /* The rate at which a node takes a peer's window, in cache (GB/s):
     * lines the peer copied into it in the call, still dirty in its
     * core, which each come from that core. Where it is not fitted, and
     * with more nodes on a host than cores (a reader's core then also
     * ran some of its writers), a window comes at the peer rate. On
     * threads the peer rate is fitted to the tree's messages, whose
     * reads are mostly of buffers the writer did not touch in the call:
     * on a 2-core VM in a slow spell (a line between its cores 230 ns
     * one way) that rate predicted
     * direct1's and direct2's 16 KiB-1 MiB at 0.46-0.74 of their time,
     * the rings and the tree within. (shm fits its peer rate to the
     * windows themselves.) Optional; 0: the peer rate. */
    double window_gbps;
    /* A rank's copies and reductions write around the caches once its
     * receive buffer is this many bytes (mrc_config_t.stream_bytes):
     * where calibrate found a rings allreduce faster so, on this host,
     * at that size and every larger one it timed. The fitted rates are
     * those of runs that switch there. Optional; 0: 8 MiB, the
     * built-in threshold. */
    double stream_bytes;
    /* The rate at which a node moves the bytes of a call that writes
     * around the caches (GB/s), for the share of its working set the
     * cache would hold: its peers' lines and its own partial sums then
     * come from memory, not from another core's cache, which on a busy
     * host is the faster (a line between the build VM's cores took
     * 200-250 ns in a slow spell, and the threads' rings of 1-4 MiB
     * took half the time written around the caches). Fitted on the
     * rings' calls of 1-16 MiB written around, where the rates in cache
     * are fitted on calls through them. Which calls write around:
     * stream_bytes, and for a family that reduces by gets (direct1's
     * and direct2's allreduce, reduce, reduce-scatter) blocks of at least
     * the larger of it and 16 MiB as well. Optional; 0: such calls are
     * timed as calls through the caches. */
    double stream_gbps;
    /* 1: the shared-memory transport leaves a send buffer exposed by
     * reference where it is, and its peers read it through the kernel
     * (kernel_gbps), even where it would fit its owner's area; 0: it
     * copies one that fits into the area, where the peers read it with
     * plain loads. calibrate sets it where the kernel's read is the
     * faster: on shm at 2 ranks timed both ways (direct1's allgather of
     * 128 KiB a rank), elsewhere where kernel_gbps is above the rate of
     * the owner's copy into its area (copy_gbps_cache) and its reader's
     * of those fresh lines (window_gbps, else peer_gbps_cache) one after
     * the other (mrc_profile_kernel_read_faster). On the Intel Xeon host
     * direct1's allgather of 128 KiB a rank at 2 ranks took 19.0-19.6 us
     * copied in and 11.7-17.9 read (docs/performance.md). Only the
     * buffer the call before exposed too is read where it is: a new one
     * is copied in either way. Optional; 0: copied in where it fits.
     * Without a profile the shared-memory transport reads the last
     * call's buffer where it is (as Open MPI's single copy does). */
    double send_by_ref;
    /* The rate of the kernel's copy of a peer's send buffer in cache
     * (GB/s): lines no core has just written, which the kernel copies
     * faster than a peer's fresh lines (a get by reference of a send
     * buffer on shm). calibrate fits it on shm at 2 ranks to the
     * allgather it times for send_by_ref, read through the kernel.
     * Optional; 0: kernel_gbps, capped at the peer rate, as any kernel
     * copy. */
    double kernel_gbps_cache;
    /* A send through the transport's slots holds its sender's core this
     * long after its bytes are in (us): the send's own cost that its
     * receiver does not pay (the slot's flag, the sender's bookkeeping),
     * which the sender's next message, or its next call, waits behind
     * while its receiver already has this one. On shm at 2 ranks a loop
     * of the rings' 4 KiB broadcasts (two messages a call) took 0.46 us
     * a call more than the tree's (one; 0.17 at 8 bytes on another
     * host), where their allreduces (four messages against two) took the
     * same: a cost on the sender, hidden behind the latency in an
     * allreduce, not on the receiver. Optional; 0: none. */
    double send_us;
    /* A read of a peer's lines (a message through the slots, a get of a
     * window, the threads' read of a buffer) runs at half its rate for
     * its first this many bytes (bytes): a core taking another core's
     * fresh lines streams them only once its prefetchers have caught
     * on. On the Xeon host a core took such lines at 9.0, 10.6, 12.4,
     * 17.7 and 18.4 GB/s in reads of 4 KiB-1 MiB (bench/peer_read.c),
     * about 18.6 GB/s with the first 32 KiB counted twice. Optional; 0:
     * every byte at the rate. */
    double peer_ramp_bytes;
} mrc_profile_t;

/* Reads a profile from JSON text; MRC_ERR_INVALID_ARG naming what is
 * wrong (not JSON, another version, a field missing or out of range). */
MRC_EXTERN mrc_status_t mrc_profile_parse(const char *json, size_t len,
                                          mrc_profile_t *out);
/* Reads a profile file (at most 1 MiB). */
MRC_EXTERN mrc_status_t mrc_profile_load(const char *path, mrc_profile_t *out);
/* The profile as JSON text (mrc_free it). */
MRC_EXTERN mrc_status_t mrc_profile_to_json(const mrc_profile_t *p,
                                            char **json);
/* The receive buffer (bytes) from which a communicator given this
 * profile writes around the caches: its stream_bytes, else the built-in
 * 8 MiB; NULL: the built-in. */
MRC_EXTERN size_t mrc_profile_stream_bytes(const mrc_profile_t *p);
/* Whether the profile's rates say a peer's read of a send buffer through
 * the kernel beats its owner's copy into its area and the peer's read of
 * those lines (send_by_ref's rule; 0 where a rate is missing). */
MRC_EXTERN int mrc_profile_kernel_read_faster(const mrc_profile_t *p);

#ifdef __cplusplus
}
#endif

#endif /* MRC_PROFILE_H */
