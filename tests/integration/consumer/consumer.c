#include <stdio.h>

#include <mrc/mrc.h>

int main(void)
{
    mrc_topo_t *t = NULL;
    if (mrc_topo_create("hcm8", &t) != MRC_OK) {
        fprintf(stderr, "%s\n", mrc_last_error());
        return 1;
    }
    printf("%s: %d nodes (mrc %s)\n", mrc_topo_name(t), mrc_topo_num_nodes(t),
           mrc_version());
    mrc_topo_destroy(t);
    return 0;
}
