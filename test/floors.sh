#!/bin/sh
# The floors of core/ (docs/architecture.md), checked at every build:
#   base < boot < comm < mem < win < api
# A file may include headers of its own floor and the floors below, and call
# functions defined there; nothing of a higher floor.  No circle of includes
# or calls between files.  The core includes nothing of adaptors/, names no
# vendor library or vendor function, and loads shared objects in one file.
# Usage: test/floors.sh OBJDIR (the core's objects, BUILD/obj/core).
set -u
objdir=${1:?usage: floors.sh BUILD/obj/core}
NM=${NM:-nm}
floors="base boot comm mem win api"
rank() { # rank FLOOR: its place, 0 when it is no floor
  n=1
  for f in $floors; do [ "$f" = "$1" ] && { echo $n; return; }; n=$((n + 1)); done
  echo 0
}
fail=0
bad() { echo "floors: $*" >&2; fail=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Every file in a floor folder; nothing loose in core/.
for f in core/*.[ch]; do
  [ -e "$f" ] && bad "$f: every core file lives in a floor folder (core/{$(echo $floors | tr ' ' ,)}/)"
done
for d in core/*/; do
  d=${d%/}
  [ "$(rank "${d#core/}")" -gt 0 ] || bad "$d: not a floor ($floors)"
done

# Includes: a header of the same or a lower floor, a public header.
for f in core/*/*.[ch]; do
  floor=$(echo "$f" | cut -d/ -f2)
  me=$(rank "$floor")
  grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | while IFS= read -r line; do
    inc=$(echo "$line" | sed 's/.*include[[:space:]]*"\([^"]*\)".*/\1/')
    num=${line%%:*}
    case $inc in
    */*)
      to=${inc%%/*}
      r=$(rank "$to")
      if [ "$r" -eq 0 ]; then
        echo "$f:$num: includes \"$inc\", which is not a header of a floor (adaptors/ and the like are out of the core's reach)"
      elif [ "$r" -gt "$me" ]; then
        echo "$f:$num: includes \"$inc\", of floor $to, above $floor"
      fi
      [ -e "core/$inc" ] && echo "$f core/$inc" >>"$tmp/edges"
      ;;
    *)
      if [ -e "core/$floor/$inc" ]; then
        echo "$f core/$floor/$inc" >>"$tmp/edges"
      elif [ ! -e "include/$inc" ]; then
        echo "$f:$num: includes \"$inc\", neither of its floor (core/$floor/) nor public (include/)"
      fi
      ;;
    esac
  done
done >"$tmp/inc"
[ -s "$tmp/inc" ] && { sed 's/^/floors: /' "$tmp/inc" >&2; fail=1; }

# Calls: every symbol an object of a floor takes from another object of the
# core is defined on the same floor or a lower one.
for o in "$objdir"/*/*.o; do
  [ -e "$o" ] || continue
  "$NM" --defined-only -g "$o" | awk -v o="$o" 'NF == 3 {print $3, o}'
done | sort -k1,1 >"$tmp/defs"
for o in "$objdir"/*/*.o; do
  [ -e "$o" ] || continue
  "$NM" -u "$o" | awk -v o="$o" '{print $NF, o}'
done | sort -k1,1 >"$tmp/uses"
join "$tmp/uses" "$tmp/defs" | while read -r sym user owner; do
  [ "$user" = "$owner" ] && continue
  uf=$(basename "$(dirname "$user")")
  of=$(basename "$(dirname "$owner")")
  src_u=core/$uf/$(basename "$user" .o).c
  src_o=core/$of/$(basename "$owner" .o).c
  echo "$src_u $src_o" >>"$tmp/edges"
  if [ "$(rank "$of")" -gt "$(rank "$uf")" ]; then
    echo "$src_u calls $sym, defined in $src_o: floor $of is above $uf"
  fi
done >"$tmp/calls"
[ -s "$tmp/calls" ] && { sed 's/^/floors: /' "$tmp/calls" >&2; fail=1; }

# No circle: the files in an order where each comes after all it uses (a
# file includes headers; a .c calls the .c that defines the name).
if [ -s "$tmp/edges" ]; then
  awk '$1 != $2' "$tmp/edges" | sort -u >"$tmp/rooms"
  if tsort "$tmp/rooms" 2>&1 >/dev/null | grep -q .; then
    tsort "$tmp/rooms" 2>"$tmp/loop" >/dev/null
    bad "a circle of includes or calls among these files (each uses the next):"
    grep -v 'input contains a loop' "$tmp/loop" | sed 's/^tsort: /  /' >&2
  fi
fi

# No vendor in the core: no library name, no vendor call, nothing of
# adaptors/; dlopen in core/base/dl.c alone.
vendor() { # vendor WHAT: grep's lines, if any, fail the check
  if [ -s "$tmp/v" ]; then sed "s/^/floors: $1: /" "$tmp/v" >&2; fail=1; fi
}
grep -nE 'lib(cuda|nccl|ibverbs|amdhip64|mpi|hip)[a-z0-9_]*\.so' core/*/*.[ch] >"$tmp/v"
vendor "names a vendor library"
grep -nE '\b(cu[A-Z][A-Za-z0-9_]*|nccl[A-Z][A-Za-z0-9_]*|ibv_[a-z_]+|hip[A-Z][A-Za-z0-9_]*|MPI_[A-Z][a-z_]+)[[:space:]]*\(' \
  core/*/*.[ch] >"$tmp/v"
vendor "calls a vendor function"
grep -nE '#[[:space:]]*include[[:space:]]*[<"].*(adaptors/|\.\./)' core/*/*.[ch] >"$tmp/v"
vendor "includes outside the core"
grep -lE '\bdl(open|sym|close|addr)[[:space:]]*\(' core/*/*.c | grep -v '^core/base/dl\.c$' >"$tmp/v"
vendor "loads shared objects outside core/base/dl.c"

if [ $fail -ne 0 ]; then
  echo "floors: the core's floors are broken (see above; docs/architecture.md says what may use what)" >&2
  exit 1
fi
exit 0
