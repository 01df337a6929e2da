#!/bin/sh
# adaptors/net/ofi/ofi_api.h declares the part of libfabric's ABI that the
# ofi adaptor uses; this checks it against libfabric's own headers (the
# scheme: test/api_check_lib.sh; the facts compared: test/ofi_api_gen.sh,
# every struct's size, every member's offset and size, every constant's
# value).  One PASS or FAIL per struct, enum, the typedefs and the
# constants; then the check proves itself: copies of ofi_api.h with a
# constant changed, a member dropped and an op dropped must each be caught.
#   test/ofi_api_check.sh [BUILD]      (BUILD defaults to build)
set -u
cd "$(dirname "$0")/.." || exit 1
ENGINE=ofi VENDOR=libfabric VHDR=rdma/fabric.h PKG=libfabric-dev
HDR=adaptors/net/ofi/ofi_api.h
API_GROUPS='if (g ~ /^FI_/) return "constants"
      if (g !~ /^(struct|enum) /) return "typedefs"'
. test/api_check_lib.sh
# The calls (ofi_api_calls.h) declare no layout or constant of their own:
# whatever the check below does not read would go unchecked there (needs
# no libfabric headers: first, before a SKIP can end the script).
CALLS=adaptors/net/ofi/ofi_api_calls.h
extra=$(grep -nE '^(struct [A-Za-z0-9_]* \{|enum |typedef |#define FI_)' "$CALLS")
if [ -z "$extra" ]; then
  echo "PASS ofi_api/calls_declare_no_layout"
else
  echo "FAIL ofi_api/calls_declare_no_layout $CALLS declares what belongs in $HDR (checked there): $(echo "$extra" | head -3 | tr '\n' ' ')"
fi
api_check_start "${1:-build}"
api_check_groups

# Every struct of the header was listed (the generator read it all).
want=$(grep -c '^struct [A-Za-z0-9_]* {' "$HDR")
got=$(grep -c '^struct_' "$TMP/result")
if [ "$want" -gt 0 ] && [ "$want" = "$got" ]; then
  echo "PASS ofi_api/all_structs_listed"
else
  echo "FAIL ofi_api/all_structs_listed $HDR defines $want structs, the check listed $got (test/ofi_api_gen.sh misread it)"
fi

api_mutant catches_changed_constant 's/^#define FI_FENCE (1ULL << 21)/#define FI_FENCE (1ULL << 22)/' constants
api_mutant catches_dropped_member '/^  uint64_t tag;$/d' struct_fi_cq_err_entry
api_mutant catches_dropped_op '/^  ofi_unused_op signal;$/d' struct_fi_ops_cq
exit 0
