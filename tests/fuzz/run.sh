#!/bin/sh
# run.sh SRCDIR OUT SECONDS [TARGET...]: run each libFuzzer target of OUT
# (built by build.sh) for SECONDS, starting from tests/fuzz/corpus/TARGET
# (copied into OUT/corpus/TARGET, which grows; the source corpus is not
# touched).  Crashes go to OUT/crash-TARGET-*.  One line per target:
# "fuzz: TARGET: PASS|FAIL, N executions in S s"; exit 1 if any failed.
# FUZZ_RUNS=N in the environment: stop a target after N executions too.
set -u
src=$1; out=$2; secs=$3; shift 3
[ $# -gt 0 ] || set -- $(cd "$out" && ls fuzz_* 2>/dev/null | grep -v '\.' | sed 's/^fuzz_//')
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
status=0
for t in "$@"; do
  bin="$out/fuzz_$t"
  [ -x "$bin" ] || { echo "fuzz: $t: FAIL (no $bin: run make fuzz-build)"; status=1; continue; }
  mkdir -p "$out/corpus/$t"
  [ -d "$src/tests/fuzz/corpus/$t" ] && cp -n "$src/tests/fuzz/corpus/$t"/* "$out/corpus/$t"/ 2>/dev/null
  log="$out/fuzz_$t.log"
  start=$(date +%s)
  "$bin" -max_total_time="$secs" ${FUZZ_RUNS:+-runs=$FUZZ_RUNS} -print_final_stats=1 -timeout=25 -rss_limit_mb=2048 -max_len=4096 \
    -artifact_prefix="$out/crash-$t-" "$out/corpus/$t" >"$log" 2>&1
  rc=$?
  took=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ $rc -eq 0 ]; then
    echo "fuzz: $t: PASS, ${execs:-?} executions in $took s"
  else
    echo "fuzz: $t: FAIL (status $rc, ${execs:-?} executions); log $log:"
    grep -E 'ERROR|SUMMARY|fuzz property|runtime error|Test unit written' "$log" | head -20
    status=1
  fi
done
exit $status
