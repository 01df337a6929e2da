# Sourced by the GPU scripts (gpu_verify.sh, gpu_hang.sh): `suite NAME
# TIMEOUT COMMAND...` runs one suite under a timeout (a hang shows as rc
# 124) into $OUTDIR/NAME.txt and adds its line to rows: rc, seconds, and the
# PASS, FAIL and SKIP lines counted.
rows=()
suite() { # name timeout command...
  local name=$1 t=$2
  shift 2
  local t0=$SECONDS
  timeout -k 5 "$t" "$@" >"$OUTDIR/$name.txt" 2>&1
  local rc=$?
  rows+=("$(printf '%-30s rc %-4s %3ss  pass %3s fail %3s skip %3s' "$name" \
    "$rc" $((SECONDS - t0)) "$(grep -c '^PASS' "$OUTDIR/$name.txt")" \
    "$(grep -c '^FAIL' "$OUTDIR/$name.txt")" \
    "$(grep -c '^SKIP' "$OUTDIR/$name.txt")")")
}
