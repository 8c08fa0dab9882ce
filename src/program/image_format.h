/*
 * The binary image's framing, shared by its writer (image_save.c) and its
 * reader (image_load.c): a fixed header (magic, version, header length,
 * payload length, FNV-1a checksum of the payload) and the payload, every
 * field little-endian. docs/program-format.md describes the fields.
 */
#ifndef MRC_PROGRAM_IMAGE_FORMAT_H
#define MRC_PROGRAM_IMAGE_FORMAT_H

#define MRC__IMAGE_MAGIC "MRCPROG"
/* Version 2: the family, the memory operands of each instruction, and
 * the port mask after the route pool. Version 3: the hosts of a hier
 * program after the family, and each instruction's view. Version 4: the
 * origin after the port mask (the topology, the strategy, the spec and
 * the embedding's efficiency), so that the image can be run and
 * simulated as it is. Version 5: the completion (one byte) after the
 * hosts. Versions 3 and 4 are still read (group completion; a version 3
 * image has no origin: it can be listed, not run); older ones are
 * refused. */
enum {
    MRC__IMAGE_VERSION = 5,
    MRC__IMAGE_OLDEST = 3,
    MRC__IMAGE_HEADER_BYTES = 8 + 4 + 4 + 8 + 8,
    MRC__IMAGE_INSN_BYTES = 24
};

#endif /* MRC_PROGRAM_IMAGE_FORMAT_H */
