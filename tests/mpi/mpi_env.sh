# Sourced by the tests that start MPI jobs: Open MPI on this host alone.
# Root may run MPI jobs here (CI runs as root); more ranks than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# Loopback only, no network interfaces probed.
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
