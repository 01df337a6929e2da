#!/bin/sh
# adaptors/net/ucx/ucx_api.h declares the part of UCP's ABI that the ucx
# adaptor uses; this checks it against UCX's own headers (the scheme:
# test/api_check_lib.sh; the facts compared: test/ucx_api_gen.sh, every
# struct's size, every member's offset and size, every enum's size, every
# constant's value).  UCX's headers are libucx-dev's, or those that
# `make UCX_INCLUDE=DIR` names, unpacked elsewhere.  One PASS or FAIL per
# type and one for the constants; then the check proves itself: copies of
# ucx_api.h with a constant changed, a member dropped and ucs_status_t no
# longer packed must each be caught.
#   test/ucx_api_check.sh [BUILD]      (BUILD defaults to build)
set -u
cd "$(dirname "$0")/.." || exit 1
ENGINE=ucx VENDOR=UCX VHDR=ucp/api/ucp.h PKG=libucx-dev
HDR=adaptors/net/ucx/ucx_api.h
API_GROUPS='if (g ~ /^UC[PS]_/ || g ~ /^ucp_dt_make/) return "constants"'
. test/api_check_lib.sh
api_check_start "${1:-build}"
api_check_groups

# Every struct typedef of the header was listed (the generator read it all).
want=$(grep -c '^typedef struct[ A-Za-z0-9_]*{' "$HDR")
got=$(grep -c '^sizeof(' "$TMP/ours")
enums=$(grep -c '^typedef enum' "$HDR")
if [ "$want" -gt 0 ] && [ "$got" = $((want + enums)) ]; then
  echo "PASS ucx_api/all_types_listed"
else
  echo "FAIL ucx_api/all_types_listed $HDR defines $want structs and $enums enums, the check listed $got types (test/ucx_api_gen.sh misread it)"
fi

api_mutant catches_changed_constant 's/^#define UCP_FEATURE_AMO64 (1ul << 3)/#define UCP_FEATURE_AMO64 (1ul << 4)/' constants
api_mutant catches_dropped_member '/^  void \*user_data;$/d' ucp_ep_params_t
api_mutant catches_unpacked_status 's/} __attribute__((packed)) ucs_status_t;/} ucs_status_t;/' ucs_status_t
exit 0
