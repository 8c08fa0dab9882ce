/* mrc_mem_alloc and mrc_mem_free (comm.h): the shared-memory transport's
 * regions, which a job's peers on the host map and read directly. */
#include "mrc/comm.h"
#include "transport/transport.h"

mrc_status_t mrc_mem_alloc(size_t bytes, void **ptr)
{
    return mrc__shm_region_alloc(bytes, ptr);
}

mrc_status_t mrc_mem_free(void *ptr)
{
    return mrc__shm_region_free(ptr);
}
