#!/bin/sh
# adaptors/net/ucx/ucx_api.h declares the part of UCP's ABI that the ucx
# adaptor uses; this checks it against UCX's own headers.  The Makefile
# builds one program, generated from ucx_api.h (test/ucx_api_gen.sh: every
# struct's size, every member's offset and size, every enum's size, every
# constant's value), twice: after ucx_api.h (ucx_api_ours) and after
# <ucp/api/ucp.h> (ucx_api_theirs, only where libucx-dev is installed, or
# `make UCX_INCLUDE=DIR` names headers unpacked elsewhere).  Their outputs
# must be the same line for line.  One PASS or FAIL per type and one for
# the constants; then the check proves itself: copies of ucx_api.h with a
# constant changed and with a member dropped must each be caught.
#   test/ucx_api_check.sh [BUILD]      (BUILD defaults to build)
set -u
cd "$(dirname "$0")/.." || exit 1
B=${1:-build}
HDR=adaptors/net/ucx/ucx_api.h
CC=${CC:-cc}

if [ ! -x "$B/test/ucx_api_theirs" ]; then
  if printf '#include <ucp/api/ucp.h>\n' | "$CC" -E -x c - >/dev/null 2>&1; then
    echo "FAIL ucx_api/built UCX's headers are here but $B/test/ucx_api_theirs is not built (make tests)"
  else
    echo "SKIP ucx_api: UCX's headers (Debian package libucx-dev) are not installed: nothing to compare ucx_api.h with"
  fi
  exit 0
fi
if [ ! -x "$B/test/ucx_api_ours" ]; then
  echo "FAIL ucx_api/built $B/test/ucx_api_ours is not built (make tests)"
  exit 0
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$B/test/ucx_api_theirs" >"$TMP/theirs" || echo "FAIL ucx_api/run ucx_api_theirs exited $?"
"$B/test/ucx_api_ours" >"$TMP/ours" || echo "FAIL ucx_api/run ucx_api_ours exited $?"

# compare OURS THEIRS: one line per group, "<group> ok" or "<group> bad
# <what differs>"; a group is a type (its size and members) or the
# constants.
compare() {
  awk -F'|' '
    function group(k,   g) {
      g = k
      sub(/^sizeof\(/, "", g); sub(/\)$/, "", g); sub(/\..*/, "", g)
      if (g ~ /^UC[PS]_/ || g ~ /^ucp_dt_make/) return "constants"
      return g
    }
    NR == FNR { theirs[$1] = $2; next }
    {
      g = group($1)
      if (!(g in seen)) { seen[g] = 1; order[n++] = g }
      if (!($1 in theirs))
        bad[g] = bad[g] sprintf(" %s: ours %s, not in UCX'"'"'s;", $1, $2)
      else if (theirs[$1] != $2)
        bad[g] = bad[g] sprintf(" %s: ours %s, UCX'"'"'s %s;", $1, $2, theirs[$1])
    }
    END {
      for (i = 0; i < n; i++)
        print order[i], (order[i] in bad) ? "bad" bad[order[i]] : "ok"
    }' "$2" "$1"
}

compare "$TMP/ours" "$TMP/theirs" >"$TMP/result"
while read -r g verdict; do
  case $verdict in
  ok) echo "PASS ucx_api/$g" ;;
  *) echo "FAIL ucx_api/$g ${verdict#bad }" ;;
  esac
done <"$TMP/result"

# Every struct typedef of the header was listed (the generator read it all).
want=$(grep -c '^typedef struct[ A-Za-z0-9_]*{' "$HDR")
got=$(grep -c '^sizeof(' "$TMP/ours")
enums=$(grep -c '^typedef enum' "$HDR")
if [ "$want" -gt 0 ] && [ "$got" = $((want + enums)) ]; then
  echo "PASS ucx_api/all_types_listed"
else
  echo "FAIL ucx_api/all_types_listed $HDR defines $want structs and $enums enums, the check listed $got types (test/ucx_api_gen.sh misread it)"
fi

# mutant NAME SED-EXPR GROUP: a copy of ucx_api.h changed by SED-EXPR must
# differ from UCX's in GROUP.
mutant() {
  sed "$2" "$HDR" >"$TMP/$1.h"
  if cmp -s "$HDR" "$TMP/$1.h"; then
    echo "FAIL ucx_api/$1 the edit '$2' changed nothing in $HDR"
    return
  fi
  sh test/ucx_api_gen.sh "$TMP/$1.h" >"$TMP/$1.c" &&
    "$CC" -std=c11 -D_GNU_SOURCE -w -include "$TMP/$1.h" -o "$TMP/$1" "$TMP/$1.c" &&
    "$TMP/$1" >"$TMP/$1.out" || {
    echo "FAIL ucx_api/$1 the changed copy did not build or run"
    return
  }
  if compare "$TMP/$1.out" "$TMP/theirs" | grep -q "^$3 bad"; then
    echo "PASS ucx_api/$1"
  else
    echo "FAIL ucx_api/$1 a copy of ucx_api.h with '$2' was not told apart from UCX's headers in $3"
  fi
}
mutant catches_changed_constant 's/^#define UCP_FEATURE_AMO64 (1ul << 3)/#define UCP_FEATURE_AMO64 (1ul << 4)/' constants
mutant catches_dropped_member '/^  void \*user_data;$/d' ucp_ep_params_t
mutant catches_unpacked_status 's/} __attribute__((packed)) ucs_status_t;/} ucs_status_t;/' ucs_status_t
exit 0
