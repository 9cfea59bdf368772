#!/bin/sh
# test_faults.sh: `exmy train` survives faults (docs/training.md, "Faults"):
#   kill -9 after some steps, right after a checkpoint and during a checkpoint
#   write, then --resume: every output file (config.txt, loss.csv, stats.csv,
#   stats.jsonl, outliers.csv, summary.json but its two wall-clock fields, the checkpoint)
#   is byte-identical to an uninterrupted run's;
#   SIGTERM / SIGINT: a checkpoint after the current step, one line, status
#   143 / 130, and the resumed run is again identical;
#   a write error (ulimit -f, SIGXFSZ ignored) names the file, exits 1 and
#   leaves the previous checkpoint intact;
#   a corrupt, truncated or version-1 checkpoint is refused (status 1, one
#   line naming the file).
NAME=test_faults
. "${srcdir:-.}/tests/cli_harness.sh"

A="--n_layer 1 --d_model 32 --n_head 2 --seq_len 16 --batch 4 --steps 80 --eval_batches 1 --progress 0
   --prec hybrid;round.grad=sr --stats_every 5 --outliers_every 3 --ckpt_every 10 --threads 1"
D="$T/run"
FILES="config.txt loss.csv stats.csv stats.jsonl outliers.csv summary.json k.ckpt"
go() { run train $A --out_dir "$D" --ckpt "$D/k.ckpt" "$@"; }
bg() { $PRE "$EXMY" train $A --out_dir "$D" --ckpt "$D/k.ckpt" "$@" </dev/null >"$T/out" 2>"$T/err" & pid=$!; }
PRE=
tmps() { ls "$D" | grep -c '^k\.ckpt\.tmp\.[0-9]*\.[0-9]*$'; } # the checkpoint's temporary files (PATH.tmp.PID.TID)
wait_for() { # FILE...: poll (at most ~60 s) until they all exist (FILE may be a pattern)
  i=0
  while [ $i -lt 1200 ]; do
    ok=1
    for f in "$@"; do ls $f >/dev/null 2>&1 || ok=0; done
    [ $ok = 1 ] && return 0
    sleep 0.05; i=$((i + 1))
  done
  return 1
}
nowall() { grep -v -e '"seconds":' -e '"tokens_per_s":' "$1"; }
same_as_ref() { # desc: every output file identical to the uninterrupted run's
  bad=""
  for f in $FILES; do
    if [ "$f" = summary.json ]; then
      nowall "$T/ref/$f" >"$T/a.json"; nowall "$D/$f" >"$T/b.json" 2>/dev/null
      cmp -s "$T/a.json" "$T/b.json" || bad="$bad $f"
    else cmp -s "$T/ref/$f" "$D/$f" || bad="$bad $f"; fi
  done
  [ "$(ls "$D")" = "$(ls "$T/ref")" ] || bad="$bad (files: $(ls "$D" | tr '\n' ' '))"
  if [ -z "$bad" ] && [ "$rc" -eq 0 ]; then pass "$1"; else fail "$1" "status $rc, differ:$bad" "stderr: $(txt "$T/err")"; fi
}
resume() { # finish an interrupted run: from its checkpoint if it has one
  if [ -e "$D/k.ckpt" ]; then go --resume "$D/k.ckpt"; else go; fi
}

go
check_ok "uninterrupted run"
cp -r "$D" "$T/ref"

# kill -9 at a few moments (wherever they land), then resume
for delay in 0.1 0.3 0.5; do
  rm -rf "$D"; bg; sleep $delay; kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
  at=$(awk 'END{print NR - 1}' "$D/loss.csv" 2>/dev/null)
  resume
  same_as_ref "kill -9 after ${delay}s (loss.csv had $at rows), resume: all files identical"
done
# kill -9 right after the first checkpoint (rows after it may be half written)
rm -rf "$D"; bg; wait_for "$D/k.ckpt"; kill -9 $pid; wait $pid 2>/dev/null
resume
same_as_ref "kill -9 just after a checkpoint, resume: all files identical"
# kill -9 while the second checkpoint is being written (k.ckpt.tmp.PID.TID complete, not renamed)
rm -rf "$D"; EXMY_TEST_CKPT_DELAY_MS=3000 bg; wait_for "$D/k.ckpt"; sleep 0.1; wait_for "$D/k.ckpt.tmp.*"
kill -9 $pid; wait $pid 2>/dev/null
if [ "$(tmps)" -eq 1 ] && [ -e "$D/k.ckpt" ]; then pass "killed during a checkpoint write (k.ckpt.tmp.PID.TID left, k.ckpt kept)"
else fail "killed during a checkpoint write" "$(ls "$D" | tr '\n' ' ')"; fi
resume
same_as_ref "kill -9 during a checkpoint write, resume: all files identical (the dead writer's temporary file removed)"

# SIGTERM and SIGINT (a script's background job starts with SIGINT ignored, and exmy keeps
# an ignored signal ignored: perl puts back the default for the SIGINT case)
for sig in TERM INT; do
  want=143 PRE=""
  if [ $sig = INT ]; then
    want=130
    if ! perl -e 1 2>/dev/null; then skip "SIGINT" "no perl"; continue; fi
    PRE="perl -e \$SIG{INT}='DEFAULT';exec(@ARGV)"
  fi
  rm -rf "$D"; bg; wait_for "$D/k.ckpt"; kill -$sig $pid; wait $pid; rc=$?
  PRE=""
  steps=$(sed -n "s/.*stopped by SIG$sig after \([0-9]*\) steps; checkpoint '.*k.ckpt' written.*/\1/p" "$T/err")
  rows=$(awk 'END{print NR - 1}' "$D/loss.csv" 2>/dev/null)
  if [ "$rc" -eq $want ] && [ "$(awk 'END{print NR}' "$T/err")" -eq 1 ] && [ -n "$steps" ] && [ "$steps" = "$rows" ] &&
     [ ! -e "$D/summary.json" ] && [ "$(tmps)" -eq 0 ]; then
    pass "SIG$sig: status $want, one line, checkpoint after step $steps = loss.csv's $rows rows"
  else fail "SIG$sig: status $want, one line, checkpoint" "status $rc steps '$steps' rows '$rows'" "stderr: $(txt "$T/err")"; fi
  resume
  same_as_ref "SIG$sig, resume: all files identical"
done
rm -rf "$D"
"$EXMY" train $A --out_dir "$D" </dev/null >"$T/out" 2>"$T/err" & pid=$!
wait_for "$D/loss.csv"; kill -TERM $pid; wait $pid; rc=$?
if [ "$rc" -eq 143 ] && grep -q "stopped by SIGTERM after [0-9]* steps; no checkpoint" "$T/err"; then pass "SIGTERM without --ckpt: 143, says so"
else fail "SIGTERM without --ckpt" "status $rc" "stderr: $(txt "$T/err")"; fi

# write errors: a checkpoint that cannot be written (ulimit -f: 75 or 150 KiB < the 190 KiB
# checkpoint, more than the logs) leaves the previous one intact
rm -rf "$D"; go --stop_after 20
cp "$D/k.ckpt" "$T/k20"
(trap '' XFSZ; ulimit -f 150; exec "$EXMY" train $A --out_dir "$D" --ckpt "$D/k.ckpt" --resume "$D/k.ckpt" \
  </dev/null >"$T/out" 2>"$T/err"); rc=$?
if [ "$rc" -eq 1 ] && [ "$(awk 'END{print NR}' "$T/err")" -eq 1 ] && grep -q "'$D/k.ckpt.tmp\.[0-9]*\.[0-9]*' failed: File too large" "$T/err" &&
   cmp -s "$T/k20" "$D/k.ckpt" && [ "$(tmps)" -eq 0 ]; then pass "checkpoint write error: status 1, names the file, previous checkpoint intact"
else fail "checkpoint write error" "status $rc" "stderr: $(txt "$T/err")"; fi
resume
same_as_ref "after the write error, resume: all files identical"
# a log that cannot be written (10 or 20 KiB: stats.csv and stats.jsonl outgrow it)
rm -rf "$D"
(trap '' XFSZ; ulimit -f 20; exec "$EXMY" train $A --out_dir "$D" </dev/null >"$T/out" 2>"$T/err"); rc=$?
if [ "$rc" -eq 1 ] && [ "$(awk 'END{print NR}' "$T/err")" -eq 1 ] && grep -q "cannot write '$D/stats\.[a-z]*': File too large" "$T/err"
then pass "log write error: status 1, names the file"; else fail "log write error" "status $rc" "stderr: $(txt "$T/err")"; fi

# bad checkpoints: corrupt (one byte flipped), truncated, an older version
bad_ckpt() { # desc pattern
  go --resume "$T/bad.ckpt"
  if [ "$rc" -eq 1 ] && [ "$(awk 'END{print NR}' "$T/err")" -eq 1 ] && grep -q "'$T/bad.ckpt' $2" "$T/err"; then pass "$1"
  else fail "$1" "status $rc (want 1)" "stderr: $(txt "$T/err")"; fi
}
rm -rf "$D"
cp "$T/k20" "$T/bad.ckpt"
printf '\377' | dd of="$T/bad.ckpt" bs=1 seek=100000 conv=notrunc 2>/dev/null
bad_ckpt "a flipped byte is refused" "is corrupt or truncated"
head -c 150000 "$T/k20" >"$T/bad.ckpt"
bad_ckpt "a truncated checkpoint is refused" "is corrupt or truncated"
cp "$T/k20" "$T/bad.ckpt"
printf '\001' | dd of="$T/bad.ckpt" bs=1 seek=8 conv=notrunc 2>/dev/null
bad_ckpt "a version-1 checkpoint is refused" "is a version 1 checkpoint"
head -c 4 "$T/k20" >"$T/bad.ckpt"
bad_ckpt "a 4-byte file is refused" "is not an exmy checkpoint"
finish
