# cli_harness.sh: the small harness the CLI test scripts share (sourced).
# Set NAME before sourcing.  Provides: $EXMY, a temporary folder $T removed
# at exit, pass/fail/skip printing `ok N - desc` / `not ok N - desc`, run
# (status in $rc, stdout in $T/out, stderr in $T/err), check_ok, check_err
# (status 2 and one stderr line naming the bad text), npy_is FILE DTYPE R C,
# and finish, which prints `NAME: N checks, N failures` and sets the status.
EXMY=${EXMY:-./exmy}
n=0
nfail=0
T=$(mktemp -d "${TMPDIR:-/tmp}/exmy_${NAME}.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
trap 'rm -rf "$T"; exit 1' HUP INT TERM
echo "$NAME: exmy $EXMY"
pass() { n=$((n + 1)); echo "ok $n - $1"; }
fail() {
  n=$((n + 1)); nfail=$((nfail + 1))
  echo "not ok $n - $1"; shift
  for l in "$@"; do printf '#   %s\n' "$l"; done
}
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
run() { "$EXMY" "$@" </dev/null >"$T/out" 2>"$T/err"; rc=$?; }
txt() { head -n 3 "$1" | tr '\n' '|'; }
npy_is() {
  h=$(head -c 256 "$1" 2>/dev/null | tr -cd '[:print:]')
  printf '%s' "$h" | grep -Eq "'descr': *'[<|]$2'" && printf '%s' "$h" | grep -Eq "'shape': *\\($3, *$4,? *\\)"
}
check_ok() { # desc
  if [ "$rc" -eq 0 ]; then pass "$1"; else fail "$1" "status $rc" "stderr: $(txt "$T/err")"; fi
}
check_err() { # desc pattern
  if [ "$rc" -eq 2 ] && [ "$(awk 'END{print NR}' "$T/err")" -eq 1 ] && grep -q -- "$2" "$T/err"; then pass "$1"
  else fail "$1" "status $rc (want 2)" "stderr: $(txt "$T/err")" "want a line naming: $2"; fi
}
finish() {
  echo "$NAME: $n checks, $nfail failures"
  [ "$nfail" -eq 0 ]
  exit $?
}
