# Sourced by the bench scripts that run on a lent GPU machine in one
# bounded command (ll128_ab.sh, gpumid_check.sh, gpu4_run.sh,
# gpularge_check.sh, tune_gpu.sh): `step NAME LIMIT LOG COMMAND...` runs
# COMMAND into LOG under a timeout no longer than what is left of the
# command's budget, adds one line to the summary and returns COMMAND's
# status (124 or 137: it ran out of time); a step the budget cannot hold is
# skipped, said, and returns 99.  `step_finish` is the usual EXIT trap.
#
# Read at each step (BUDGET is needed, the rest have defaults):
#   BUDGET         seconds the whole command may take (bash's SECONDS)
#   STEP_DIR       where a relative LOG lands (empty: LOG as given)
#   STEP_SUMMARY   the file each step's line is added to
#                  ($STEP_DIR/summary.txt)
#   STEP_SKIPPED   the file a skipped step is said in ($STEP_SUMMARY)
#   STEP_MIN_LEFT  fewer seconds left than this: skip (15)
#   STEP_MARGIN    seconds kept back from the last step's limit (0)
#   STEP_DRY=1     print each step's command instead of running it
# The line is step_line's; a script may define its own after sourcing this.

step() { # NAME LIMIT LOG COMMAND...
  local name=$1 lim=$2 log=${STEP_DIR:+$STEP_DIR/}$3
  shift 3
  local left=$((BUDGET - SECONDS))
  local summary=${STEP_SUMMARY:-$STEP_DIR/summary.txt}
  if [ "$left" -lt "${STEP_MIN_LEFT:-15}" ]; then
    echo "skipped (budget): $name" | tee -a "${STEP_SKIPPED:-$summary}"
    return 99
  fi
  left=$((left - ${STEP_MARGIN:-0}))
  [ "$lim" -gt "$left" ] && lim=$left
  if [ "${STEP_DRY:-0}" = 1 ]; then
    printf '[dry] %s (<= %ss): %s > %s\n' "$name" "$lim" "$*" "$log"
    return 0
  fi
  local t0=$SECONDS rc=0
  timeout -k 5 "$lim" "$@" >"$log" 2>&1 || rc=$?
  step_line "$name" "$rc" $((SECONDS - t0)) "$log" | tee -a "$summary"
  return $rc
}

# step_line NAME RC SECONDS LOG: the summary's line: the LOG's PASS and
# FAIL lines (and SKIP's, with STEP_COUNT="PASS FAIL SKIP") counted, then
# its first two FAIL or WRONG lines, cut to STEP_WHY characters (300); the
# name padded to STEP_WIDTH (40).
step_line() {
  local k
  printf '%-*s rc=%-3s %3ss' "${STEP_WIDTH:-40}" "$1" "$2" "$3"
  for k in ${STEP_COUNT:-PASS FAIL}; do
    printf ' %s %s' "$k" "$(grep -c "^$k" "$4")"
  done
  printf ' %s\n' "$(grep -m2 -E '^FAIL|WRONG' "$4" | tr '\n' ' ' |
    cut -c1-"${STEP_WHY:-300}")"
}

# step_finish OUTDIR TARBALL [TABLE_SCRIPT]: the end of the command (its
# EXIT trap): the short table (python3 TABLE_SCRIPT $STEP_DIR into
# table.txt), every file of STEP_DIR into OUTDIR/TARBALL, the summary (and
# table) copied to OUTDIR and printed.
step_finish() {
  local out=$1 tarball=$2 table=${3:-}
  [ -n "$table" ] && python3 "$table" "$STEP_DIR" >"$STEP_DIR/table.txt" 2>&1
  tar czf "$out/$tarball" -C "$STEP_DIR" .
  cp ${table:+"$STEP_DIR/table.txt"} "$STEP_DIR/summary.txt" "$out/" 2>/dev/null
  echo "== summary"
  cat "$STEP_DIR/summary.txt"
  if [ -n "$table" ]; then
    echo "== table"
    cat "$STEP_DIR/table.txt"
  fi
}
