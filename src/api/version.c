/*
 * The library's identity: its version, and the sizes of its public
 * structs for bindings that mirror them (mrc/mrc.h). A public struct
 * added to a header goes in `structs` here and in python/mrc/_lib.py's
 * STRUCTS, or the binding's copy of it goes unchecked.
 */
#include <string.h>

#include "mrc/mrc.h"

const char *mrc_version(void)
{
    return MRC_VERSION_STRING;
}

/* clang-format off */
#define STRUCT(t) {#t, sizeof(t)}
/* clang-format on */

static const struct {
    const char *name;
    size_t size;
} structs[] = {
    STRUCT(mrc_link_t),
    STRUCT(mrc_hop_t),
    STRUCT(mrc_ring_t),
    STRUCT(mrc_embed_config_t),
    STRUCT(mrc_embed_figures_t),
    STRUCT(mrc_compile_config_t),
    STRUCT(mrc_program_info_t),
    STRUCT(mrc_profile_t),
    STRUCT(mrc_sim_config_t),
    STRUCT(mrc_sim_result_t),
    STRUCT(mrc_workload_op_result_t),
    STRUCT(mrc_workload_result_t),
    STRUCT(mrc_fabric_config_t),
    STRUCT(mrc_fabric_schedule_info_t),
    STRUCT(mrc_fabric_stats_t),
    STRUCT(mrc_config_t),
};

#undef STRUCT

size_t mrc_struct_size(const char *name)
{
    for (size_t i = 0; name && i < sizeof structs / sizeof structs[0]; i++)
        if (strcmp(structs[i].name, name) == 0)
            return structs[i].size;
    return 0;
}
