# Sourced by test/ofi_api_check.sh and test/ucx_api_check.sh: the drift
# check of a header of ours that declares a vendor's ABI (ofi_api.h,
# ucx_api.h) against the vendor's own headers.  The Makefile builds one
# program, generated from our header by test/<engine>_api_gen.sh, twice:
# after our header (<engine>_api_ours) and after the vendor's
# (<engine>_api_theirs, only where its -dev package is installed).  Their
# outputs must be the same line for line.
#
# The caller, in the repository root, sets:
#   ENGINE   ofi or ucx: names the programs, the generator and the tests
#   HDR      our header
#   VENDOR   the vendor's name as the messages say it ("libfabric")
#   VHDR     a header of the vendor's, to see whether they are installed
#   PKG      the Debian package that installs them
#   API_GROUPS awk statements: given a fact's type or constant name in g,
#              return its group's name where the vendor's naming decides it
#              (the constants, ...); what falls through is g, spaces as _
# then calls api_check_start BUILD, api_check_groups, its own checks, and
# api_mutant for each way of breaking a copy of HDR that must be caught.

# api_check_start BUILD: both programs' outputs in $TMP/ours and
# $TMP/theirs; exits (0, after a SKIP or FAIL line) where either is absent.
api_check_start() {
  B=$1
  T=${ENGINE}_api
  CC=${CC:-cc}
  if [ ! -x "$B/test/${T}_theirs" ]; then
    if printf '#include <%s>\n' "$VHDR" | "$CC" -E -x c - >/dev/null 2>&1; then
      echo "FAIL $T/built $VENDOR's headers are here but $B/test/${T}_theirs is not built (make tests)"
    else
      echo "SKIP $T: $VENDOR's headers (Debian package $PKG) are not installed: nothing to compare ${T}.h with"
    fi
    exit 0
  fi
  if [ ! -x "$B/test/${T}_ours" ]; then
    echo "FAIL $T/built $B/test/${T}_ours is not built (make tests)"
    exit 0
  fi
  TMP=$(mktemp -d)
  trap 'rm -rf "$TMP"' EXIT
  "$B/test/${T}_theirs" >"$TMP/theirs" || echo "FAIL $T/run ${T}_theirs exited $?"
  "$B/test/${T}_ours" >"$TMP/ours" || echo "FAIL $T/run ${T}_ours exited $?"
}

# api_compare OURS THEIRS: one line per group, "<group> ok" or
# "<group> bad <what differs>"; a group is a type (its size and members)
# or what API_GROUPS names.
api_compare() {
  awk -F'|' -v vendor="$VENDOR" '
    function group(k,   g) {
      g = k
      sub(/^sizeof\(/, "", g); sub(/\)$/, "", g); sub(/\..*/, "", g)
      '"$API_GROUPS"'
      gsub(/ /, "_", g)
      return g
    }
    NR == FNR { theirs[$1] = $2; next }
    {
      g = group($1)
      if (!(g in seen)) { seen[g] = 1; order[n++] = g }
      if (!($1 in theirs))
        bad[g] = bad[g] sprintf(" %s: ours %s, not in %s'"'"'s;", $1, $2, vendor)
      else if (theirs[$1] != $2)
        bad[g] = bad[g] sprintf(" %s: ours %s, %s'"'"'s %s;", $1, $2, vendor, theirs[$1])
    }
    END {
      for (i = 0; i < n; i++)
        print order[i], (order[i] in bad) ? "bad" bad[order[i]] : "ok"
    }' "$2" "$1"
}

# api_check_groups: a PASS or FAIL per group; the verdicts stay in
# $TMP/result for the caller's own checks.
api_check_groups() {
  api_compare "$TMP/ours" "$TMP/theirs" >"$TMP/result"
  while read -r g verdict; do
    case $verdict in
    ok) echo "PASS $T/$g" ;;
    *) echo "FAIL $T/$g ${verdict#bad }" ;;
    esac
  done <"$TMP/result"
}

# api_mutant NAME SED-EXPR GROUP: the check proves itself: a copy of HDR
# changed by SED-EXPR must differ from the vendor's in GROUP.
api_mutant() {
  sed "$2" "$HDR" >"$TMP/$1.h"
  if cmp -s "$HDR" "$TMP/$1.h"; then
    echo "FAIL $T/$1 the edit '$2' changed nothing in $HDR"
    return
  fi
  sh "test/${T}_gen.sh" "$TMP/$1.h" >"$TMP/$1.c" &&
    "$CC" -std=c11 -D_GNU_SOURCE -w -include "$TMP/$1.h" -o "$TMP/$1" "$TMP/$1.c" &&
    "$TMP/$1" >"$TMP/$1.out" || {
    echo "FAIL $T/$1 the changed copy did not build or run"
    return
  }
  if api_compare "$TMP/$1.out" "$TMP/theirs" | grep -q "^$3 bad"; then
    echo "PASS $T/$1"
  else
    echo "FAIL $T/$1 a copy of ${T}.h with '$2' was not told apart from $VENDOR's headers in $3"
  fi
}
