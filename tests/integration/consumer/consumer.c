#include <stdio.h>

#include <mrc/mrc.h>

/* A topology, and an exchange on the tile fabric scheduled and played:
 * the public API of both, linked from an installed mrc. */
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

    mrc_fabric_config_t cfg = {.tiles = 64, .columns = 4};
    mrc_fabric_t *f = NULL;
    mrc_exchange_t *x = NULL;
    mrc_fabric_schedule_t *s = NULL;
    mrc_fabric_stats_t stats;
    mrc_status_t st = mrc_fabric_create(&cfg, &f);
    if (st == MRC_OK)
        st = mrc_exchange_pattern("neighbour", 64, 4, 1, 4, &x);
    if (st == MRC_OK)
        st = mrc_fabric_schedule(f, x, &s);
    if (st == MRC_OK)
        st = mrc_fabric_simulate(f, s, &stats);
    if (st != MRC_OK)
        fprintf(stderr, "%s\n", mrc_last_error());
    else
        printf("fabric: %llu of %llu deliveries on time\n",
               (unsigned long long)stats.delivered,
               (unsigned long long)stats.deliveries);
    mrc_fabric_schedule_destroy(s);
    mrc_exchange_destroy(x);
    mrc_fabric_destroy(f);
    return st == MRC_OK && stats.delivered == stats.deliveries ? 0 : 1;
}
