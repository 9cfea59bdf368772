#!/bin/sh
# test_study_kill.sh: a study survives any kill, and one results folder has
# one writer (issue 34; docs/training.md, "Faults").
#   kill -9 of `exmy study default --tiny` at random moments of an
#   uninterrupted run's wall time, during a checkpoint write (the tmp file
#   complete, not renamed), just after a run's result.txt, and during a rerun
#   that only writes the report; every rerun must succeed and give the
#   uninterrupted run's summary.json (wall times, the command aside).
#   Two processes on one folder: a harness that kills the shell around exmy
#   leaves exmy running; a rerun then must exit 2 naming the folder and the
#   survivor's pid, the survivor must finish with the same summary.json, and
#   so must a rerun after it.  Shards share the folder; --report while a shard
#   runs is refused; `exmy train` twice on one out_dir is refused.
# EXMY_TEST_KILLS: the random kills (default 4; make check-long: 40);
# EXMY_TEST_SEED: their moments (default 34, printed).
NAME=test_study_kill
. "${srcdir:-.}/tests/cli_harness.sh"

KILLS=${EXMY_TEST_KILLS:-4}
SEED=${EXMY_TEST_SEED:-34}
echo "$NAME: $KILLS random kills, seed $SEED (EXMY_TEST_KILLS, EXMY_TEST_SEED)"
SARGS="default --tiny --steps 1200 --threads 2 --no-plots"
norm() { sed -E 's/"(seconds|threads|run_seconds)": [0-9.]+/"\1": T/g; s/"report_only": [a-z]+/"report_only": R/; s/"command": "[^"]*"/"command": C/' "$1" 2>/dev/null; }
now_ms() { date +%s%N | cut -c 1-13; }
wait_for() { # PATTERN: poll (at most ~60 s) until a file matches; 1 if not
  i=0
  while [ $i -lt 3000 ]; do
    ls $1 >/dev/null 2>&1 && return 0
    kill -0 $pid 2>/dev/null || return 1
    sleep 0.02; i=$((i + 1))
  done
  return 1
}
start() { # DIR [env...]: exmy study in the background, pid in $pid
  d=$1; shift
  env "$@" "$EXMY" study $SARGS --out "$d" </dev/null >"$T/bg.out" 2>"$T/bg.err" & pid=$!
}
rerun_same() { # DIR DESC: rerun to the end; status 0 and the reference's summary.json
  run study $SARGS --out "$1"
  norm "$1/summary.json" >"$T/got.json"
  if [ "$rc" -eq 0 ] && cmp -s "$T/ref.json" "$T/got.json"; then pass "$2"
  else fail "$2" "status $rc" "stderr: $(txt "$T/err")" "$(diff "$T/ref.json" "$T/got.json" | head -n 4 | cut -c 1-200 | tr '\n' '|')"; fi
}
phase() { # DIR: what the killed run had done (for the log)
  echo "ckpts $(ls "$1"/runs/*/ckpt.bin 2>/dev/null | wc -l), tmp $(ls "$1"/runs/*/ckpt.bin.tmp.* 2>/dev/null | wc -l), results $(ls "$1"/runs/*/result.txt 2>/dev/null | wc -l), report $(ls "$1"/summary.json 2>/dev/null | wc -l)"
}

t0=$(now_ms)
run study $SARGS --out "$T/ref"
t1=$(now_ms)
WALL=$((t1 - t0))
norm "$T/ref/summary.json" >"$T/ref.json"
if [ "$rc" -eq 0 ] && [ -s "$T/ref.json" ]; then pass "uninterrupted study (${WALL} ms)"
else fail "uninterrupted study" "status $rc" "stderr: $(txt "$T/err")"; finish; fi

# kill -9 at random moments of the run's wall time
awk -v s="$SEED" -v n="$KILLS" -v w="$WALL" 'BEGIN { srand(s); for (i = 0; i < n; i++) printf "%d\n", rand() * w }' >"$T/moments"
while read -r ms; do
  rm -rf "$T/k"; start "$T/k"
  sleep "$(awk -v m="$ms" 'BEGIN { printf "%.3f", m / 1000 }')"
  kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
  rerun_same "$T/k" "kill -9 at $ms ms ($(phase "$T/k")), rerun: the same summary.json"
done <"$T/moments"

# during a checkpoint write: the temporary file complete, not renamed yet
rm -rf "$T/k"; start "$T/k" EXMY_TEST_CKPT_DELAY_MS=400
wait_for "$T/k/runs/*/ckpt.bin.tmp.*"; sleep 0.1
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
rerun_same "$T/k" "kill -9 during a checkpoint write ($(phase "$T/k")), rerun: the same summary.json"
if ! ls "$T"/k/runs/*/ckpt.bin.tmp.* >/dev/null 2>&1; then pass "the killed writer's temporary files are gone after the rerun"
else fail "temporary files left" "$(ls "$T"/k/runs/*/ckpt.bin.tmp.* | tr '\n' ' ')"; fi

# just after a run's result.txt (its checkpoint may still be there)
rm -rf "$T/k"; start "$T/k"
wait_for "$T/k/runs/*/result.txt"
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
rerun_same "$T/k" "kill -9 after a result.txt ($(phase "$T/k")), rerun: the same summary.json"

# during a rerun that only writes the report (every run done before)
rm -rf "$T/k"; cp -r "$T/ref" "$T/k"; rm -f "$T/k/summary.json" "$T/k/report.md" "$T/k/runs.csv"
t0=$(now_ms); run study $SARGS --out "$T/k"; t1=$(now_ms)
for frac in 0.2 0.5 0.8; do
  rm -f "$T/k/summary.json"; start "$T/k"
  sleep "$(awk -v f=$frac -v w=$((t1 - t0)) 'BEGIN { printf "%.3f", f * w / 1000 }')"
  kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
  rerun_same "$T/k" "kill -9 at $frac of a report-only rerun ($(phase "$T/k")), rerun: the same summary.json"
done

# two processes on one folder: the harness kills the shell, exmy survives
rm -rf "$T/k"
sh -c "\"$EXMY\" study $SARGS --out \"$T/k\" </dev/null >\"$T/sv.out\" 2>&1; echo \$? >\"$T/sv.rc\"" & sh=$!
pid=$sh; wait_for "$T/k/runs/*/ckpt.bin"
kill -9 $sh 2>/dev/null; wait $sh 2>/dev/null
run study $SARGS --out "$T/k"
surv=$(sed -n 's/.*in use by another exmy (pid \([0-9]*\)).*/\1/p' "$T/err")
if [ "$rc" -eq 2 ] && [ "$(awk 'END{print NR}' "$T/err")" -eq 1 ] && grep -q "results folder '$T/k' is in use" "$T/err" &&
   [ -n "$surv" ] && kill -0 "$surv" 2>/dev/null; then pass "a second study on a busy folder: status 2, names the folder and the running exmy's pid $surv"
else fail "a second study on a busy folder: status 2 naming the folder and pid" "status $rc" "stderr: $(txt "$T/err")"; fi
i=0; while [ -n "$surv" ] && kill -0 "$surv" 2>/dev/null && [ $i -lt 3000 ]; do sleep 0.02; i=$((i + 1)); done
norm "$T/k/summary.json" >"$T/got.json"
if cmp -s "$T/ref.json" "$T/got.json" && ! grep -q 'runs failed' "$T/sv.out"; then pass "the running study was not disturbed: the same summary.json"
else fail "the running study was disturbed" "$(tail -n 2 "$T/sv.out" | tr '\n' '|')" "$(diff "$T/ref.json" "$T/got.json" | head -n 4 | cut -c 1-200 | tr '\n' '|')"; fi
rerun_same "$T/k" "a rerun after it: the same summary.json"

# shards share the folder (each locks its runs' folders); --report waits for them
rm -rf "$T/s"
"$EXMY" study $SARGS --out "$T/s" --shard 1/2 </dev/null >"$T/s1.out" 2>&1 & s1=$!
pid=$s1; wait_for "$T/s/runs/*/ckpt.bin"
run study $SARGS --out "$T/s" --report
if [ "$rc" -eq 2 ] && grep -q "results folder '$T/s' is in use by another exmy (pid $s1)" "$T/err"; then pass "--report while a shard runs: status 2, names the shard's pid"
else fail "--report while a shard runs: status 2" "status $rc" "stderr: $(txt "$T/err")"; fi
run study $SARGS --out "$T/s" --shard 2/2
wait $s1; r1=$?
if [ "$rc" -eq 0 ] && [ "$r1" -eq 0 ]; then pass "two shards at once on one folder"
else fail "two shards at once on one folder" "status $r1 $rc" "$(tail -n 1 "$T/s1.out")" "stderr: $(txt "$T/err")"; fi
run study $SARGS --out "$T/s" --report
norm "$T/s/summary.json" | sed "s#$T/s#$T/ref#g" >"$T/got.json"
if [ "$rc" -eq 0 ] && cmp -s "$T/ref.json" "$T/got.json"; then pass "shards + --report: the same summary.json"
else fail "shards + --report" "status $rc" "$(diff "$T/ref.json" "$T/got.json" | head -n 4 | cut -c 1-200 | tr '\n' '|')"; fi

# the same shard twice at once (by mistake): a run folder has one writer; the other
# process's run fails naming it, and --report after both has every run
rm -rf "$T/s"
"$EXMY" study $SARGS --out "$T/s" --shard 1/2 </dev/null >"$T/s1.out" 2>&1 & s1=$!
pid=$s1; wait_for "$T/s/runs/*/ckpt.bin"
run study $SARGS --out "$T/s" --shard 1/2
wait $s1; r1=$?
bad=$(cat "$T/s1.out" "$T/out" "$T/err" | grep 'FAILED' | grep -vc "run folder '$T/s/runs/[^']*' is in use by another exmy (pid [0-9]*)")
run study $SARGS --out "$T/s" --shard 2/2
run study $SARGS --out "$T/s" --report
norm "$T/s/summary.json" | sed "s#$T/s#$T/ref#g" >"$T/got.json"
if [ "$bad" -eq 0 ] && [ "$rc" -eq 0 ] && cmp -s "$T/ref.json" "$T/got.json"; then
  pass "one shard twice at once: only 'run folder in use' failures (status $r1), then --report: the same summary.json"
else fail "one shard twice at once" "status $r1, $bad other failures, report status $rc" "$(cat "$T/s1.out" "$T/out" | grep FAILED | head -n 2 | cut -c 1-200 | tr '\n' '|')"; fi

# exmy train twice on one out_dir
"$EXMY" train --steps 100000 --progress 0 --out_dir "$T/t" </dev/null >/dev/null 2>&1 & tp=$!
pid=$tp; wait_for "$T/t/loss.csv"
run train --steps 5 --progress 0 --out_dir "$T/t"
kill $tp 2>/dev/null; wait $tp 2>/dev/null
if [ "$rc" -eq 2 ] && [ "$(awk 'END{print NR}' "$T/err")" -eq 1 ] && grep -q "out_dir: folder '$T/t' is in use by another exmy (pid $tp)" "$T/err"
then pass "a second exmy train on a busy out_dir: status 2, names the folder and pid"
else fail "a second exmy train on a busy out_dir" "status $rc" "stderr: $(txt "$T/err")"; fi
finish
