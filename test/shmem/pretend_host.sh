#!/bin/sh
# Runs a rank as if on host SYMHEAP_RANK / SYMHEAP_TEST_PER_HOST (default 2):
# SYMHEAP_HOST_ID set per rank, so that one machine is several hosts to
# symheap (docs/network.md, "The host map").  For programs that do not set
# it themselves, as test_net does:
#   symheap-run -n 4 test/shmem/pretend_host.sh PROGRAM ARGS...
per=${SYMHEAP_TEST_PER_HOST:-2}
SYMHEAP_HOST_ID="host-$((SYMHEAP_RANK / per))"
# The tests read the layout from it (shc_per_host, test/shmem/shmem_check.h).
SYMHEAP_TEST_PER_HOST=$per
export SYMHEAP_HOST_ID SYMHEAP_TEST_PER_HOST
exec "$@"
