#!/bin/sh
# test_waits.sh: busy machines (docs/training.md, "Busy machines"): exmy train
# and study run with a bounded OpenMP spin (GOMP_SPINCOUNT, set by a restart
# of the command: 100 when fewer than two cores are free, 30000 otherwise)
# unless the user chose OMP_WAIT_POLICY or GOMP_SPINCOUNT; a study never runs more runs at once than its cores.
NAME=test_waits
. "${srcdir:-.}/tests/cli_harness.sh"

spin_of() { # ENV...: the GOMP_SPINCOUNT a running exmy train sees ("none" when unset)
  env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$@" "$EXMY" train --steps 1000000 --progress 0 </dev/null >/dev/null 2>&1 & p=$!
  i=0; s=""
  while [ $i -lt 200 ] && [ -z "$s" ]; do
    sleep 0.05; i=$((i + 1))
    s=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | sed -n 's/^GOMP_SPINCOUNT=//p')
    [ -z "$s" ] && [ $i -gt 20 ] && s=none # the restart comes within milliseconds
  done
  kill $p 2>/dev/null; wait $p 2>/dev/null
  echo "$s"
}
if [ ! -r /proc/self/environ ]; then skip "the spin count" "no /proc"
else
  s=$(spin_of)
  if [ "$s" = 100 ] || [ "$s" = 30000 ]; then pass "no wait policy set: exmy train runs with a spin count ($s)"
  else fail "no wait policy set: GOMP_SPINCOUNT 100 or 30000" "saw '$s'"; fi
  # a busy machine: as many spinning jobs as cores, so fewer than two are free
  nc=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2); pids=""
  i=0; while [ $i -lt "$nc" ]; do sh -c 'while :; do :; done' & pids="$pids $!"; i=$((i + 1)); done
  sleep 0.2
  s=$(spin_of)
  kill $pids 2>/dev/null; wait $pids 2>/dev/null
  if [ "$s" = 100 ]; then pass "busy cores ($nc spinning jobs): exmy train runs with GOMP_SPINCOUNT=100"
  else fail "busy cores: GOMP_SPINCOUNT=100" "saw '$s'"; fi
  s=$(spin_of GOMP_SPINCOUNT=7)
  if [ "$s" = 7 ]; then pass "GOMP_SPINCOUNT=7 given: kept"; else fail "GOMP_SPINCOUNT=7 given: kept" "saw '$s'"; fi
  s=$(spin_of OMP_WAIT_POLICY=ACTIVE)
  if [ "$s" = none ]; then pass "OMP_WAIT_POLICY=ACTIVE given: no spin count added"; else fail "OMP_WAIT_POLICY given" "saw '$s'"; fi
fi
if command -v taskset >/dev/null 2>&1 && taskset -c 0 true 2>/dev/null; then
  taskset -c 0 "$EXMY" study --tiny --steps 3 --threads 4 --no-plots --out "$T/s" </dev/null >"$T/out" 2>"$T/err"; rc=$?
  if [ "$rc" -eq 0 ] && grep -q "^study: --threads 4 is more than the 1 cores this process may use: 1 runs at a time" "$T/out" &&
     grep -q ", 1 at a time;" "$T/out"; then pass "study --threads 4 on one core: 1 run at a time, says so"
  else fail "study --threads 4 on one core" "status $rc" "$(head -n 3 "$T/out" | tr '\n' '|')"; fi
else skip "study on one core" "no taskset"; fi
finish
