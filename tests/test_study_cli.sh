#!/bin/sh
# test_study_cli.sh: the contract of `exmy study`:
#   --help, --list (every study with a description), --dry-run (one line per
#   run with its keys);
#   every study runs end to end at --tiny size: runs.csv (a header and one
#   row per run), summary.json (valid JSON with runs and findings when
#   python3 is there), report.md (setup, a table, "Reproduced / not
#   reproduced" with a verdict per finding), runs/LABEL/loss.csv per run, and
#   SVG + PNG plots when gnuplot is installed (skipped otherwise);
#   `exmy study` with no name is the default study and ends with the table and
#   where the report is; --threads 1 and 2 give the same numbers;
#   at --tiny (fixed seeds 1..N, fixed steps, built-in corpus) every study's
#   verdicts, with the numbers in them that decide them, are exactly the ones
#   recorded below (the runs are deterministic for any thread count);
#   errors (unknown study, bad --lrs, --set with an unknown key, --tiny with
#   --full, a bad --steps) exit 2 with one line naming the bad text.
#   study files: bad lines (engine keys, ranges, claims, from/more_steps,
#   gemm.*) exit 2 naming FILE:LINE; arm.NAME.from continuations resume their
#   own parent's kept checkpoint, also sharded in any shard order; a gemm.*
#   experiment writes gemm.csv, its report section and summary.json's gemm.
# Prints `ok N - desc` / `not ok N - desc`; ends `test_study_cli: N checks, N failures`.

NAME=test_study_cli
. "${srcdir:-.}/tests/cli_harness.sh"
OMP_WAIT_POLICY=PASSIVE
export OMP_WAIT_POLICY
have_gnuplot=0
command -v gnuplot >/dev/null 2>&1 && have_gnuplot=1
have_py=0
PY=${PYTHON3:-python3}
command -v "$PY" >/dev/null 2>&1 && have_py=1

run study --help
if [ "$rc" -eq 0 ] && grep -q "usage: exmy study" "$T/out"; then pass "study --help"; else fail "study --help" "status $rc"; fi

run study --list
studies="default mantissa recipes fallback calibration accumulation rounding lrsweep rangeshift delayedlag failsafe outliers faithful"
ok=1
for s in $studies; do grep -Eq "^$s +[a-zA-Z0-9]" "$T/out" || ok=0; done
if [ "$rc" -eq 0 ] && [ $ok -eq 1 ]; then pass "study --list names every study with a description"
else fail "study --list names every study with a description" "$(txt "$T/out")"; fi
# --help's list is made from the same studies: every one of them, once
run study --help
hl=$(sed -n '/^Studies: /,$p' "$T/out" | tr -s ' ,\n' '\n' | grep -v '^Studies:$' | grep .)
if [ "$rc" -eq 0 ] && [ "$(printf '%s\n' $hl | sort)" = "$(printf '%s\n' $studies | sort)" ]; then
  pass "study --help lists every built-in study"
else fail "study --help lists every built-in study" "$(printf '%s ' $hl)"; fi

run study mantissa --tiny --dry-run
if [ "$rc" -eq 0 ] && grep -q '^\[1/' "$T/out" && grep -q 'prec=e8m1;round=rtz' "$T/out" && [ ! -d results/mantissa ]; then
  pass "study mantissa --dry-run prints the runs' keys, runs nothing"
else fail "study mantissa --dry-run prints the runs' keys, runs nothing" "status $rc" "$(txt "$T/out")"; fi

# errors
run study nosuch
check_err "unknown study" "nosuch"
run study mantissa --lrs 1e-3,abc --tiny
check_err "bad --lrs" "abc"
run study --tiny --set nosuchkey=1
check_err "--set with an unknown key" "nosuchkey"
run study --tiny --set "prec=e9m9x"
check_err "--set with a bad precision" "e9m9x"
run study --tiny --full
check_err "--tiny with --full" "full"
run study --steps 0
check_err "bad --steps" "steps"
run study --set novalue
check_err "--set without =" "novalue"
run study --tiny --data "$T/no-such-file.txt"
check_err "--data with a missing file" "no-such-file.txt"

# study files: every bad line exits 2 with one line naming FILE:LINE and the bad text
sf_err() { # desc, file text, expected line number, expected text
  printf "$2" >"$T/bad.study"
  run study "$T/bad.study" --tiny --dry-run
  if [ "$rc" -eq 2 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "bad.study:$3: " "$T/err" && grep -qF -- "$4" "$T/err"; then
    pass "study file: $1 (exit 2, line $3)"
  else fail "study file: $1" "status $rc" "$(txt "$T/err")"; fi
}
sf_err "an unknown key" 'description = d\nsteps = 3\nnosuchkey = 1\n' 3 nosuchkey
sf_err "a bad engine value" 'description = d\narm.a.prec = e99m99\n' 2 e99m99
sf_err "a bad range" 'description = d\naxis.lr = logspace(1e-3, -1, 4)\n' 2 'logspace(1e-3, -1, 4)'
sf_err "a bad count" 'description = d\naxis.lr = linspace(0.1, 0.2, 0)\n' 2 'linspace(0.1, 0.2, 0)'
sf_err "an unknown metric" 'description = d\nclaim.c.metric = accuracyx\n' 2 accuracyx
sf_err "an unknown rule" 'description = d\nclaim.c.rule = roughly\n' 2 roughly
sf_err "a line without =" 'description = d\n\n# comment\nsteps 3\n' 4 'steps 3'
sf_err "bad seeds" 'description = d\nseeds = 0\n' 2 'seeds = 0'
sf_err "a bad lr_delta" 'description = d\nlr_delta = -0.1\n' 2 'lr_delta = -0.1'
sf_err "a zip of unequal axes" 'description = d\naxis.prec = fp32, bf16\naxis.weight_decay = 0, 0.1, 0.2\nzip = prec, weight_decay\n' 4 weight_decay
sf_err "no description" 'steps = 3\n' 1 description
sf_err "a claim on an unknown arm" 'description = d\narm.a.prec = bf16\nclaim.c.arms = a, nosucharm\n' 3 nosucharm
# 8 axes of 61 values would be 1.9e14 points (an int overflow, then an
# allocation of every run): refused before any run is made
big='description = d\n'
for k in n_layer d_model n_head batch weight_decay clip log_every calibrate; do big="${big}axis.$k = linspace(4, 64, 61)\n"; done
sf_err "too many runs" "$big" 9 'at most 20000'
run study "$T/no-such.study"
check_err "a missing study file" "no-such.study"
# run names are cut at 159 characters: two runs cut alike would write one folder
lv=$(printf 'h%.0s' $(seq 170))
printf "description = d\narm.a.prec = bf16\naxis.dump_layers = ${lv}1, ${lv}2\n" >"$T/long.study"
run study "$T/long.study" --tiny --dry-run
check_err "runs whose names are cut alike (they would share a folder)" "would share the folder"
# from = ARM, more_steps = N (a run starting from another arm's checkpoint) and
# the gemm.* experiment: each bad value names its line
sf_err "from an unknown arm" 'description = d\narm.a.prec = bf16\narm.b.from = nosuch\n' 3 "no arm 'nosuch'"
sf_err "from itself" 'description = d\narm.a.prec = bf16\narm.a.from = a\n' 3 'arm.a.from = a: an arm cannot start from itself'
sf_err "from in a cycle" 'description = d\narm.a.from = b\narm.b.from = a\n' 2 'form a cycle'
sf_err "more_steps 0" 'description = d\narm.a.prec = bf16\narm.b.from = a\narm.b.more_steps = 0\n' 4 'arm.b.more_steps = 0'
sf_err "more_steps not a number" 'description = d\narm.a.prec = bf16\narm.b.from = a\narm.b.more_steps = 2x\n' 4 '= 2x'
sf_err "more_steps without from" 'description = d\narm.a.prec = bf16\narm.a.more_steps = 5\n' 3 'needs arm.a.from'
sf_err "an unknown gemm model" 'description = d\ngemm.accum = fp32; acc=f99\ngemm.k = 16\n' 2 'f99'
sf_err "a bad gemm k" 'description = d\ngemm.accum = fp32\ngemm.k = 16, 0\n' 3 "gemm.k: '0'"
sf_err "unknown gemm data" 'description = d\ngemm.accum = fp32\ngemm.k = 16\ngemm.data = uniform\n' 4 "unknown data 'uniform'"
sf_err "a bad gemm m" 'description = d\ngemm.accum = fp32\ngemm.k = 16\ngemm.m = 0\n' 4 'gemm.m = 0'
sf_err "a bad gemm format" 'description = d\ngemm.format = e9m9x\n' 2 'e9m9x'
sf_err "an unknown gemm key" 'description = d\ngemm.size = 3\n' 2 'gemm.size'
sf_err "gemm without its models" 'description = d\ngemm.k = 16\nsteps = 3\n' 2 'gemm.accum missing'

# a study file: arms crossed with an axis, zipped axes, size lines
cat >"$T/mine.study" <<'EOF_STUDY'
# a study of two arms crossed with a zipped pair of axes
description = two weight decays, two precisions, zipped with master rounding
steps = 100
tiny.steps = 3
tiny.n_layer = 1
tiny.d_model = 16
tiny.n_head = 2
tiny.seq_len = 16
tiny.batch = 2
tiny.eval_batches = 1
seeds = 2
axis.prec = fp32, bf16
axis.master_round = rne, sr
zip = prec, master_round
arm.wd0.weight_decay = 0
arm.wd1.weight_decay = 0.2
EOF_STUDY
run study "$T/mine.study" --tiny --dry-run
if [ "$rc" -eq 0 ] && [ "$(grep -c '^\[[0-9]*/8\] ' "$T/out")" -eq 8 ] &&
   grep -q '^\[8/8\] wd1 prec=bf16 master_round=sr seed=2: .*master_round=sr.*weight_decay=0.2[0-9]* seed=2' "$T/out" &&
   grep -q 'steps=3' "$T/out"; then
  pass "study FILE: arms x zipped axes x seeds, tiny. lines applied (8 runs)"
else fail "study FILE: arms x zipped axes x seeds" "status $rc" "$(txt "$T/err")" "$(head -n 3 "$T/out" | tr '\n' '|')"; fi

# a study with a new analysis added as a file only: table.*, plot.* and
# claim.* blocks over registered metrics, no C; 5 seeds so the claims decide
cat >"$T/blocks.study" <<'EOF_STUDY'
description = a file-only analysis: a table, a metric plot and claims
steps = 4
n_layer = 1
d_model = 16
n_head = 2
seq_len = 16
batch = 2
eval_batches = 1
seeds = 5
axis.lr = 0.001, 0.01
arm.fp32.prec = fp32
arm.cut.prec = e8m1;round=rtz
reference = fp32
table.t.title = Per arm and learning rate
table.t.metrics = val_loss, first_loss, diverged, undertrained
plot.vl.kind = metric
plot.vl.metric = val_loss
plot.vl.x = lr
plot.vl.title = validation loss against the learning rate
claim.same.text = the first-step loss does not depend on the format within 0.5 nats
claim.same.arms = cut, fp32
claim.same.metric = first_loss
claim.same.rule = tracks
claim.same.margin = 0.5
claim.rate.text = the cut format fails more often
claim.rate.arms = cut, fp32
claim.rate.metric = failed
claim.rate.rule = higher
claim.rate.effect = 0.5
table.e.title = Stability edges
table.e.metrics = lr_edge, lr_edge_fit, lr_sens
claim.edge.text = the cut format's stability edge lies below fp32's
claim.edge.arms = cut, fp32
claim.edge.metric = lr_edge
claim.edge.rule = lower
EOF_STUDY
run study "$T/blocks.study" --out "$T/blocks" --no-plots
if [ "$rc" -eq 0 ] && grep -q '^## Per arm and learning rate' "$T/blocks/report.md" &&
   grep -Eq '^\| cut +\| 0\.01 +\| [0-9.]+ \+- [0-9.]+ +\| [0-9.]+ \+- [0-9.]+ +\| [0-5]/5 +\| [0-5]/5 ' "$T/blocks/report.md" &&
   [ -f "$T/blocks/vl.gp" ] && grep -q "^  \[reproduced\] the first-step loss" "$T/out" &&
   grep -q "^  \[not testable here\] the cut format fails more often.*over 2 learning-rate groups" "$T/out" &&
   grep -Eq '^\| fp32 +\| > 0\.01 +\| > 0\.01, none failed +\| [0-9.]+ \(5 seeds\)' "$T/blocks/report.md" &&
   grep -q "^  \[not testable here\] the cut format's stability edge.*beyond the same end" "$T/out"; then
  pass "a new analysis as a file only: its table, its plot and its claims' verdicts"
else fail "a new analysis as a file only" "status $rc" "$(txt "$T/err")" "$(grep -E '^\| cut|\[' "$T/out" "$T/blocks/report.md" | head -n 5 | tr '\n' '|')"; fi
sf_err "a table of an unknown metric" 'description = d\ntable.t.metrics = val_loss, lr_edgy\n' 2 "unknown metric 'lr_edgy'"
sf_err "an unknown plot kind" 'description = d\nplot.p.kind = pie\n' 2 "unknown plot kind 'pie'"
sf_err "an unknown claim field" 'description = d\nclaim.c.power = 3\n' 2 "claim.c.power"
sf_err "a table mixing edge and run metrics" 'description = d\ntable.t.metrics = lr_edge, val_loss\n' 2 'separate tables'
sf_err "a claim on the fitted edge" 'description = d\nclaim.c.metric = lr_edge_fit\n' 2 'lr_edge_fit is for tables'
sf_err "a claim effect of 0" 'description = d\nclaim.c.effect = 0\n' 2 'effect = 0'

# from and more_steps: each continuation resumes its own parent (same axis
# point and seed) a phase later and trains more_steps past it; the parents
# keep their checkpoints; a gemm.* experiment writes gemm.csv and its section
cat >"$T/from.study" <<'EOF_STUDY'
description = a continuation per axis point and seed, and a GEMM experiment
steps = 4
n_layer = 1
d_model = 16
n_head = 2
seq_len = 16
batch = 2
eval_batches = 1
seeds = 2
axis.weight_decay = 0, 0.1
arm.pre.prec = bf16
arm.cont.from = pre
arm.cont.more_steps = 3
arm.cont.prec = hybrid
gemm.accum = fp32; acc=f16
gemm.k = 64, 256
gemm.m = 2
gemm.n = 3
EOF_STUDY
run study "$T/from.study" --dry-run --out "$T/from"
if [ "$rc" -eq 0 ] && grep -q '^\[8/8\] cont weight_decay=0.1 seed=2 (phase 2): prec=hybrid .*steps=7 .*resume=.*/runs/pre_weight_decay_0.1_seed_2/ckpt.bin' "$T/out" &&
   grep -q '^\[5/8\] cont weight_decay=0 seed=1 (phase 2): .*steps=7 .*resume=.*/runs/pre_weight_decay_0_seed_1/ckpt.bin' "$T/out" &&
   grep -q '^\[1/8\] pre weight_decay=0 seed=1: .*steps=4 .*ckpt=.*/runs/pre_weight_decay_0_seed_1/ckpt.bin' "$T/out"; then
  pass "from = ARM: each continuation names its own parent's checkpoint (axis point, seed), phase 2, steps 4 + more_steps 3"
else fail "from = ARM: each continuation names its own parent's checkpoint" "status $rc" "$(grep cont "$T/out" | head -n 2 | tr '\n' '|')"; fi
run study "$T/from.study" --no-plots --threads 1 --out "$T/from"
norm() { sed -E 's/"(seconds|threads)": [0-9.]+/"\1": T/g; s/"command": "[^"]*"/"command": C/' "$1"; }
if [ "$rc" -eq 0 ] && [ "$(sed -n 2p "$T/from/runs/cont_weight_decay_0.1_seed_2/loss.csv" | cut -d, -f1)" = 4 ] &&
   [ "$(tail -n 1 "$T/from/runs/cont_weight_decay_0.1_seed_2/loss.csv" | cut -d, -f1)" = 6 ] &&
   [ -s "$T/from/runs/pre_weight_decay_0.1_seed_2/ckpt.bin" ] && [ ! -e "$T/from/runs/cont_weight_decay_0.1_seed_2/ckpt.bin" ] &&
   grep -q '^positive,256,"acc=f16",0\.00' "$T/from/gemm.csv" && grep -q '^## GEMM error against the reference' "$T/from/report.md" &&
   grep -q '"gemm": {"format": "e4m3fn"' "$T/from/summary.json"; then
  pass "from: the continuation trains steps 4..6 from its parent's kept checkpoint; gemm.csv, its report section and summary.json's gemm"
else fail "from: the continuation trains from its parent's checkpoint; gemm.csv" "status $rc" "$(txt "$T/err")" "$(head -n 3 "$T/from/runs/cont_weight_decay_0.1_seed_2/loss.csv" 2>/dev/null | tr '\n' '|')"; fi
norm "$T/from/summary.json" >"$T/from.json"
# a parent's checkpoint gone (deleted, or an older exmy's folder) while a
# continuation still has to run: the parent trains again, same numbers
rm -f "$T/from/runs/pre_weight_decay_0_seed_2/ckpt.bin" "$T/from/runs/cont_weight_decay_0_seed_2/result.txt"
run study "$T/from.study" --no-plots --threads 1 --out "$T/from"
norm "$T/from/summary.json" >"$T/from2.json"
if [ "$rc" -eq 0 ] && cmp -s "$T/from.json" "$T/from2.json" && [ -s "$T/from/runs/pre_weight_decay_0_seed_2/ckpt.bin" ] &&
   [ "$(grep -c 'done before' "$T/out")" -eq 6 ] && grep -q '^\[[0-9]/8\] pre weight_decay=0 lr=0.003 seed=2: .*s)' "$T/out"; then
  pass "from: a parent whose checkpoint is gone trains again for its continuation (6 runs done before; the same summary.json)"
else fail "from: a parent whose checkpoint is gone trains again" "status $rc" "$(txt "$T/err")" "$(grep 'seed=2' "$T/out" | head -n 3 | tr '\n' '|')"; fi
# sharded: a continuation goes to its parent's shard, so shards in any order
# (here 3, 2, 1) need no other shard's checkpoint; --report equals one run
ok=1
for i in 3 2 1; do
  run study "$T/from.study" --no-plots --threads 1 --out "$T/froms" --shard $i/3
  [ "$rc" -eq 0 ] && grep -q "^shard $i/3: " "$T/out" || ok=0
done
[ -f "$T/froms/gemm.csv" ] || ok=0
run study "$T/from.study" --no-plots --threads 1 --out "$T/froms" --report
norm "$T/froms/summary.json" | sed "s#$T/froms#$T/from#g" >"$T/froms.json"
if [ $ok -eq 1 ] && [ "$rc" -eq 0 ] && cmp -s "$T/from.json" "$T/froms.json"; then
  pass "from, sharded: shards 3/3, 2/3, 1/3 (each continuation with its parent) and --report give the one-run summary.json (gemm from shard 1)"
else fail "from, sharded" "status $rc ok $ok" "$(diff "$T/from.json" "$T/froms.json" | head -n 4 | cut -c 1-300 | tr '\n' '|')"; fi

# resumable and shardable: summary.json (timings, thread count and the
# command line aside) is the same for an uninterrupted run, a run killed
# with SIGKILL mid-study and rerun, and three shards followed by --report
norm_summary() { sed -E 's/"(seconds|threads)": [0-9.]+/"\1": T/g; s/"command": "[^"]*"/"command": C/' "$1"; }
sargs="--tiny --no-plots --steps 200 --threads 1"
run study $sargs --out "$T/whole"
norm_summary "$T/whole/summary.json" >"$T/whole.json"
(cd "$T" && exec "$EXMY" study $sargs --out "$T/killed" >"$T/killed.log" 2>&1) &
kp=$!
w=0
while [ $w -lt 200 ] && ! ls "$T"/killed/runs/*/ckpt.bin >/dev/null 2>&1; do sleep 0.05; w=$((w + 1)); done
kill -9 $kp 2>/dev/null
wait $kp 2>/dev/null
had_ckpt=$(ls "$T"/killed/runs/*/ckpt.bin 2>/dev/null | wc -l)
run study $sargs --out "$T/killed"
norm_summary "$T/killed/summary.json" >"$T/killed.json"
if [ "$rc" -eq 0 ] && [ -s "$T/whole.json" ] && cmp -s "$T/whole.json" "$T/killed.json" &&
   [ "$(grep -c 'done before\|resumed from its checkpoint' "$T/out")" -ge "$had_ckpt" ]; then
  pass "kill -9 mid-study, rerun: the same summary.json (checkpoints at the kill: $had_ckpt; runs done before: $(grep -c 'done before' "$T/out"), resumed: $(grep -c 'resumed from' "$T/out"))"
else fail "kill -9 mid-study, rerun: the same summary.json" "status $rc" "$(diff "$T/whole.json" "$T/killed.json" | head -n 4 | cut -c 1-300 | tr '\n' '|')"; fi
ok=1
for i in 1 2 3; do
  run study $sargs --out "$T/shard" --shard $i/3
  [ "$rc" -eq 0 ] && grep -q "^shard $i/3: " "$T/out" && [ ! -f "$T/shard/report.md" ] || ok=0
done
run study $sargs --out "$T/shard" --report
norm_summary "$T/shard/summary.json" >"$T/shard.json"
if [ $ok -eq 1 ] && [ "$rc" -eq 0 ] && cmp -s "$T/whole.json" "$T/shard.json"; then
  pass "--shard 1/3, 2/3, 3/3 then --report: the same summary.json as one run"
else fail "--shard 1/3..3/3 then --report" "status $rc ok $ok" "$(diff "$T/whole.json" "$T/shard.json" | head -n 4 | cut -c 1-300 | tr '\n' '|')"; fi
run study $sargs --out "$T/half" --shard 2/3
run study $sargs --out "$T/half" --report
if [ "$rc" -eq 0 ] && grep -q "^missing runs (3 of 4" "$T/out" && grep -q "'fp32'" "$T/out" && grep -q '^\*\*Missing runs\*\* (3 of 4' "$T/half/report.md"; then
  pass "--report with runs missing: the report and the console name them"
else fail "--report with runs missing names them" "status $rc" "$(tail -n 3 "$T/out" | tr '\n' '|')"; fi
# lrsweep's analysis with runs missing: a run not yet run is unknown, not a
# failure (a seed missing one is left out of LR_max; failure rates count the
# runs that are there).  Tiny: 3 arms x 3 lrs x 1 seed; shard 1/2 runs 5 of 9
# (fp32 2 of 3).
run study lrsweep --tiny --no-plots --threads 1 --out "$T/lrhalf" --shard 1/2
run study lrsweep --tiny --no-plots --threads 1 --out "$T/lrhalf" --report
fprow=$(grep '^| fp32 |' "$T/lrhalf/report.md")
if [ "$rc" -eq 0 ] && printf '%s' "$fprow" | grep -q '^| fp32 | 0 of 1 |' && printf '%s' "$fprow" | grep -q ' [0-2]/2 \[' &&
   ! grep -q '\*\*reproduced\*\*' "$T/lrhalf/report.md" && grep -q '^| fp32 | 0.01 | 1 | not run yet |' "$T/lrhalf/report.md" &&
   ! grep -q '| failed |' "$T/lrhalf/report.md"; then
  pass "lrsweep --report with runs missing: no seed with a missing run in LR_max, missing runs not counted as failures"
else fail "lrsweep --report with runs missing" "status $rc" "$fprow"; fi
run study --tiny --shard 4/3
check_err "--shard 4/3" "4/3"
(cd "$T" && SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=5 SLURM_ARRAY_TASK_COUNT=2 "$EXMY" study $sargs --out "$T/slurm" >"$T/out" 2>&1); rc=$?
if [ "$rc" -eq 0 ] && grep -q '^shard 1/2: 2 of the 4 runs' "$T/out"; then pass "SLURM_ARRAY_TASK_ID/MIN/COUNT give the shard"
else fail "SLURM_ARRAY_TASK_* give the shard" "status $rc" "$(tail -n 2 "$T/out" | tr '\n' '|')"; fi

# the documented example study file runs at --tiny with its claims (docs/studies/README.md)
run study "${srcdir:-.}/docs/studies/example.study" --tiny --no-plots --out "$T/example"
if [ "$rc" -eq 0 ] && grep -q '^## What this study can and cannot conclude' "$T/example/report.md" &&
   grep -q 'tracks = the 90% CI inside the margin (TOST)' "$T/example/report.md" && grep -q '"claims": \[' "$T/example/summary.json" &&
   [ "$(grep -c '^\[[0-9]*/18\] ' "$T/out")" -eq 18 ]; then
  pass "docs/studies/example.study runs at --tiny: 18 runs, claims, what it can conclude"
else fail "docs/studies/example.study runs at --tiny" "status $rc" "$(txt "$T/err")"; fi

# Open MPI: 3 ranks (rank 0 serves a queue, 2 train) give the one-process
# summary.json (timings, threads, command aside); calibration's phase 2 waits
# for its phase 1 (the same relative --out in two folders: its config holds paths)
run study --help
if command -v mpirun >/dev/null 2>&1 && grep -q '^MPI: built' "$T/out"; then
  mkdir -p "$T/m1" "$T/m2"
  ok_mpi=1
  # calibration with one seed: its one pretraining run must end before the second worker may start a continuation
  for s in default calibration; do
    sd=2; [ $s = calibration ] && sd=1
    (cd "$T/m1" && "$EXMY" study $s --tiny --no-plots --seeds $sd --out r$s >"$T/out" 2>&1) || ok_mpi=0
    # Under ASan, LeakSanitizer reports Open MPI's own allocations (libmpi,
    # libopen-pal and its dlopened components) at exit and fails the ranks;
    # no leak names exmy's code.  Leak checks stay on everywhere else.
    (cd "$T/m2" && ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
       mpirun --oversubscribe --allow-run-as-root -n 3 "$EXMY" study $s --tiny --no-plots --seeds $sd --out r$s \
       >"$T/mpiout" 2>&1) || ok_mpi=0
    norm_summary "$T/m1/r$s/summary.json" >"$T/m1.json"
    norm_summary "$T/m2/r$s/summary.json" >"$T/m2.json"
    if [ $ok_mpi -eq 1 ] && [ -s "$T/m1.json" ] && cmp -s "$T/m1.json" "$T/m2.json"; then
      pass "mpirun -n 3 exmy study $s: the same summary.json as one process"
    else fail "mpirun -n 3 exmy study $s: the same summary.json as one process" "$(tail -n 3 "$T/mpiout" | tr '\n' '|')" \
      "$(diff "$T/m1.json" "$T/m2.json" | head -n 4 | cut -c 1-300 | tr '\n' '|')"; fi
  done
else skip "mpirun -n 3 exmy study" "no mpirun, or exmy built without MPI"; fi

# --plot FILE: the main figure (the claims' gaps with their CIs) in the format its extension names
run study --tiny --plot "$T/fig.bmp"
check_err "--plot with an unsupported extension" "fig.bmp"
if [ $have_gnuplot -eq 1 ]; then
  run study --tiny --seeds 3 --out "$T/fig" --plot "$T/fig.pdf"
  if [ "$rc" -eq 0 ] && [ "$(head -c 4 "$T/fig.pdf")" = "%PDF" ] && grep -q '<svg' "$T/fig/claims.svg" &&
     grep -q 'xerrorbars' "$T/fig/claims.gp" && grep -q "linetype 1 lc rgb '#0072B2'" "$T/fig/loss.gp"; then
    pass "--plot FILE.pdf: a PDF of the claims' error bars (and claims.svg; Okabe-Ito colours)"
  else fail "--plot FILE.pdf" "status $rc" "$(txt "$T/err")"; fi
else skip "--plot FILE.pdf" "gnuplot not installed"; fi

# The verdict lines of each study's report.md ("- **VERDICT**: claim.
# evidence") at --tiny with the study's defaults, prefixed with the study's
# name.  Recorded from a run; a change here is a change of the studies'
# results: check it is meant, then record the new lines (the failure shows
# the difference).
expected_verdicts() {
  cat <<'END_OF_VERDICTS'
default: - **reproduced**: FP8 (HYBRID, current scaling) loss tracks BF16 (Megatron-LM FP8, 1B, 21K steps). final hybrid 3.6165 vs bf16 3.6164: gap +0.00%; tracks = |gap| < 5%.
default: - **reproduced**: FP8's loss is consistently a little higher than BF16's (Megatron-LM FP8). gap +0.00% at the end; hybrid's trailing-mean loss is above bf16's in 67% of the second half's steps (consistently higher = gap > 0 and above in more than 50% of them).
default: - **not reproduced**: Cutting every GEMM input to 2 mantissa bits with round-toward-zero (Lee et al.'s simulation) degrades or destabilizes training. E8M2 rtz: 0/1 diverged, final 3.6494 vs bf16 3.6164 (+0.91%); worse = more divergences or > 2% higher final loss.
default: - **inconclusive**: FP8 (HYBRID, current scaling) validation loss tracks BF16's within 0.02 nats (Megatron-LM FP8, 1B, 21K steps). val_loss hybrid - bf16 over n = 1 paired runs: mean +0.0018, 95% CI [+0.0018, +0.0018] (bootstrap, 2000 resamples); tracks = the 90% CI inside the margin (TOST), margin 0.02 nats; inconclusive: fewer than 3 pairs (one seed).
default: - **inconclusive**: FP8's validation loss is a little higher than BF16's (Megatron-LM FP8). val_loss hybrid - bf16 over n = 1 paired runs: mean +0.0018, 95% CI [+0.0018, +0.0018] (bootstrap, 2000 resamples); higher = the 95% CI above 0; inconclusive: fewer than 3 pairs (one seed).
default: - **inconclusive**: E8M2 with round-toward-zero on every GEMM input ends above fp32 (Lee et al. 2024, simulated by masking mantissa bits). val_loss e8m2 rtz - fp32 over n = 1 paired runs: mean +0.0101, 95% CI [+0.0101, +0.0101] (bootstrap, 2000 resamples); higher = the 95% CI above 0; inconclusive: fewer than 3 pairs (one seed).
default: - **inconclusive**: E8M2 round-toward-zero fails (diverges or does not converge) more often than fp32 (Lee et al. 2024: E8M3-E8M5 fail to converge at 120M). failed rate: e8m2 rtz 0/1 [0.00, 0.97], fp32 0/1 [0.00, 0.97] (exact 95% intervals); higher = the intervals disjoint in that direction; inconclusive: fewer than 3 runs per arm (one seed).
mantissa: - **not reproduced**: Instability rises as mantissa bits fall (Lee et al.: E8M3-E8M5 fail to converge at 120M; only E8M5-E8M6 relatively stable at 7B). divergences (rtz, all lrs and seeds): E8M1 0/2, E8M2 0/2, E8M3 0/2, E8M4 0/2, E8M5 0/2, E8M6 0/2, E8M7 0/2, bf16 0/2, fp32 0/2; spikes per 1000 steps: E8M1 0.0, E8M2 0.0, E8M3 0.0, E8M4 0.0, E8M5 0.0, E8M6 0.0, E8M7 0.0. Spearman rho(bits, divergence fraction + spike rate) = nan (no E8My run diverged or spiked); reproduced when rho <= -0.5, some run is unstable and E8M1 is less stable than fp32.
mantissa: - **not reproduced**: Loss rises as mantissa bits fall (fewer bits, worse final loss). Spearman rho(bits, final loss with diverged runs counted at their first loss) = 0.61 over E8M1..E8M7 rtz (reproduced when <= -0.5).
mantissa: - **not reproduced**: E8M3, E8M4 and E8M5 fail to converge (Lee et al., 120M TinyLLaMA). E8M3-E8M5 rtz runs that diverged: 0/6 (reproduced when more than half; this model has 5053 parameters and trains 10 steps, far from 120M parameters and their token counts).
mantissa: - **observation**: Control: round-toward-zero (masking) against round-to-nearest-even and stochastic rounding. E8M1: rtz 0/2 diverged, final 3.4687; rne 0/2, 3.4365; sr 0/2, 3.4403. rtz is worse than rne at 1 of 1 widths.
mantissa: - **observation**: Learning rate: the largest learning rate against the smallest. E8M1..E8M7 rtz runs diverged: 0/7 at lr 0.003, 0/7 at lr 0.03.
mantissa: - **inconclusive**: E8M3 with round-toward-zero on every GEMM input fails (diverges or does not converge) more often than fp32 (Lee et al. 2024: E8M3-E8M5 fail to converge at 120M). failed rate: e8m3 rtz 0/2 [0.00, 0.84], fp32 0/2 [0.00, 0.84] (exact 95% intervals); higher = the intervals disjoint in that direction; inconclusive: fewer than 3 runs per arm.
mantissa: - **inconclusive**: E8M1 round-toward-zero ends above fp32 (validation loss) (Lee et al. 2024: fewer mantissa bits, worse training). val_loss e8m1 rtz - fp32 over n = 2 paired runs: mean -0.1615, 95% CI [-0.3400, +0.0170] (bootstrap, 2000 resamples); higher = the 95% CI above 0; inconclusive: fewer than 3 pairs.
recipes: - **reproduced**: Delayed scales lag a moving distribution: the delayed/current scale ratio departs from 1 (TE delayed scaling). len=1 margin=0: mean |log2 ratio| 0.163, overflow 0.0497%; len=16 margin=0: mean |log2 ratio| 0.417, overflow 0.0218%; len=1024 margin=0: mean |log2 ratio| 0.417, overflow 0.0218%; len=1 margin=1: mean |log2 ratio| 1.021, overflow 0.0000%; len=16 margin=1: mean |log2 ratio| 1.356, overflow 0.0000%; len=1024 margin=1: mean |log2 ratio| 1.356, overflow 0.0000%; current scaling: overflow 0.0000%, underflow 0.001%. Reproduced when history 1 (the pure one-step lag) departs from 1 by more than 0.05 binades on average.
recipes: - **observation**: A longer amax history (max over it) keeps the scale further below the current one. mean |log2 ratio|: history 1 0.163, history 1024 0.417 binades (margin 0).
recipes: - **observation**: Underflow under delayed scaling (scales at or below the current one) and current scaling. mean underflow over the delayed runs 0.0008% vs current scaling 0.0007% of elements (step 0 left out).
recipes: - **reproduced**: The lag makes delayed scaling overflow where current scaling does not; a margin reduces it. overflow (history 1): margin 0 0.0497%, margin 1 0.0000%; current scaling 0.0000%. Reproduced when margin 0's overflow exceeds current scaling's.
recipes: - **reproduced**: FP8 (HYBRID, current scaling) loss tracks BF16 (Megatron-LM FP8, 1B, 21K steps). final hybrid current 3.6244 vs bf16 3.6232: gap +0.03%; tracks = |gap| < 5%.
recipes: - **not reproduced**: FP8's loss is consistently a little higher than BF16's (Megatron-LM FP8). gap +0.03% at the end; hybrid current's trailing-mean loss is above bf16's in 40% of the second half's steps (consistently higher = gap > 0 and above in more than 50% of them).
recipes: - **inconclusive**: FP8 (HYBRID, current scaling) validation loss tracks BF16's within 0.02 nats (Megatron-LM FP8, 1B, 21K steps). val_loss hybrid current - bf16 over n = 1 paired runs: mean +0.0001, 95% CI [+0.0001, +0.0001] (bootstrap, 2000 resamples); tracks = the 90% CI inside the margin (TOST), margin 0.02 nats; inconclusive: fewer than 3 pairs (one seed).
fallback: - **inconclusive**: Keeping the first and last layers in BF16 lowers the loss (published: helps noticeably). e4m3fn: all 3.6254 (0/1 diverged) -> first/last bf16 3.6234 (0/1): gain +0.0020, 92% of the gap to bf16 recovered (one seed: no noise estimate); e5m2: all 3.6277 (0/1 diverged) -> first/last bf16 3.6221 (0/1): gain +0.0056, 125% of the gap to bf16 recovered (one seed: no noise estimate); reproduced when it lowers the final loss (or prevents a divergence) for both formats by more than the seed-to-seed spread (sd of the difference); inconclusive when the direction holds but not beyond the spread. Beyond the spread: 0 of 2.
fallback: - **observation**: Check-and-fallback (periodic bf16 check, fall back on disagreement). e5m2 all + check: 5 checks, 0 fallbacks over 1 runs; final 3.6277 vs 3.6277 without the check.
fallback: - **inconclusive**: Keeping the first and last layers in BF16 lowers e4m3fn's validation loss (reported by FP8 practitioners: helps noticeably). val_loss e4m3fn firstlast - e4m3fn all over n = 1 paired runs: mean +0.0008, 95% CI [+0.0008, +0.0008] (bootstrap, 2000 resamples); lower = the 95% CI below 0; inconclusive: fewer than 3 pairs (one seed).
calibration: - **observation**: What the first FP8 step after the resume saw (seed 1, mean over layers). hybrid current: input underflow 0.00% overflow 0.000%, weight underflow 0.00% overflow 0.000%, grad underflow 0.00% overflow 0.000%; hybrid delayed, no calibration: input underflow 0.42% overflow 0.000%, weight underflow 2.88% overflow 0.000%, grad underflow 12.64% overflow 0.000%; hybrid delayed, calibrate=1: input underflow 0.00% overflow 0.000%, weight underflow 0.00% overflow 0.000%, grad underflow 0.00% overflow 0.000%.
calibration: - **not reproduced**: Resuming FP8 (delayed scaling) from a BF16 checkpoint without an amax history gives an abnormal first-step loss. first step after the resume: bf16 3.6090, delayed without calibration 3.6099 (+0.0%); abnormal = more than 5% above bf16.
calibration: - **inconclusive**: A calibration step (high precision, fills the histories) fixes it. first FP8 step after one calibration step: 3.6079 (-0.0% vs bf16; fixed = within 5% and below the uncalibrated jump; inconclusive here: the uncalibrated step was not abnormal). Current scaling, which needs no history: 3.6083 (-0.0%).
accumulation: - **not reproduced**: An FP16 accumulator loses about half of a long positive sum (Wang et al. 2018, k = 16384). k = 1024, positive e4m3fn products, acc=f16: relative error 0.6% (reproduced when 25%-75%).
accumulation: - **reproduced**: Chunk-based accumulation (chunks of 64) brings the error to about 0.15%. k = 1024: chunk=64 0.022%, chunk=128 0.053% (fp16 inside each chunk, fp32 across chunks); reproduced when chunk=64 is at most 1%.
accumulation: - **reproduced**: Limited tensor-core accumulation (fast accumulation) hurts at large k; promoting to fp32 every 128 products fixes it (DeepSeek-V3). positive data: tc:hopper-fastacc 1.79e-03 at k = 256 -> 1.35e-02 at k = 1024; tc:hopper (promotion every 128) 5.31e-04; fp32 5.51e-08. Signed data at k = 1024: fastacc 5.50e-04, promoted 1.53e-04. Reproduced when fastacc's error grows more than 2x over the k range and ends more than 4x above the promoted one.
accumulation: - **observation**: In training, fast accumulation costs more at the larger width (larger k). final loss vs fp32 accumulation, tc:hopper-fastacc: -0.01% (narrow), +0.01% (wide), means over seeds (the paired claim below decides, with its CI). Final losses (means over seeds): d=16 fp32 3.6546; d=16 tc:hopper-fastacc 3.6543; d=16 tc:hopper 3.6543; d=16 chunk=128,inner=acc=f16 nan (diverged); d=16 acc=f16 nan (diverged); d=64 fp32 3.4366; d=64 tc:hopper-fastacc 3.4369; d=64 tc:hopper 3.4387; d=64 chunk=128,inner=acc=f16 nan (diverged); d=64 acc=f16 nan (diverged); seed-to-seed sd of the wide fp32 run: nan.
accumulation: - **observation**: FP16 accumulation of per-tensor-scaled FP8 operands in training. 4 of 4 training runs with an fp16 accumulator (plain or inside 128-chunks) diverged. With current scaling the largest inputs sit near 448 (e4m3fn) and 57344 (e5m2), so single products exceed fp16's largest finite value 65504 before the scale is applied in the epilogue: the accumulator overflows, unlike Wang et al.'s unscaled FP8 products.
accumulation: - **inconclusive**: At the wider width, HYBRID training with fast accumulation (tc:hopper-fastacc) ends above the same runs with promotion to fp32 every 128 products (tc:hopper) (validation loss) (DeepSeek-V3: limited tensor-core accumulation hurts; promotion every 128 products fixes it). val_loss wide fastacc - wide promoted over n = 1 paired runs: mean +0.0016, 95% CI [+0.0016, +0.0016] (bootstrap, 2000 resamples); higher = the 95% CI above 0; inconclusive: fewer than 3 pairs (one seed).
rounding: - **not reproduced**: Stochastic rounding of low-mantissa gradients trains at least as well as round-to-nearest. E8M3: rne 3.6262 (0/1 diverged), sr 3.6262 (0/1), difference +0.0001 vs seed sd nan/nan; E8M4: rne 3.6259 (0/1 diverged), sr 3.6258 (0/1), difference -0.0001 vs seed sd nan/nan; E8M5: rne 3.6257 (0/1 diverged), sr 3.6254 (0/1), difference -0.0002 vs seed sd nan/nan; bf16 gradients: 3.6255. Reproduced when sr's final loss is lower (or it diverges less) at every width; here at 2 of 3.
rounding: - **reproduced**: With bf16 weights, round-to-nearest updates vanish as the learning rate decays; stochastic rounding removes the bias. final loss above fp32 master weights: rne +0.0018, sr +0.0005 (fp32 master 3.6255). Reproduced when rne's gap is positive and larger than sr's.
rounding: - **inconclusive**: With pure bf16 weights, stochastic rounding of the updates ends below round-to-nearest (validation loss) (SR removes the bias that makes small updates vanish). val_loss bf16 weights sr - bf16 weights rne over n = 1 paired runs: mean -0.0003, 95% CI [-0.0003, -0.0003] (bootstrap, 2000 resamples); lower = the 95% CI below 0; inconclusive: fewer than 3 pairs (one seed).
lrsweep: - **inconclusive**: e8m3 rtz: LR_max below fp32's (paired by seed), as the published claim predicts (Lee et al. 2024: E8M3-E8M5 unstable). shift log2 LR_max = +0.00 over n = 1 seeds (0 censored); inconclusive: fewer than 3 seeds. Against the arm's own best loss (its stability edge apart from a loss offset): +0.00 over n = 1
lrsweep: - **observation**: hybrid: LR_max against fp32's (paired by seed). shift log2 LR_max = +0.00 over n = 1 seeds (0 censored); inconclusive: fewer than 3 seeds. Against the arm's own best loss (its stability edge apart from a loss offset): +0.00 over n = 1
lrsweep: - **inconclusive**: E8M3 with round-toward-zero on every GEMM input fails more often than fp32 over the grid (Lee et al. 2024: E8M3-E8M5 fail to converge at 120M). failed rate: e8m3 rtz 0/3 [0.00, 0.71], fp32 0/3 [0.00, 0.71] (exact 95% intervals); higher = the intervals disjoint in that direction.
lrsweep: - **inconclusive**: HYBRID FP8 (current scaling) tracks fp32 in validation loss within 0.05 nats (Micikevicius et al. 2022 (arXiv 2209.05433): FP8 training matches 16-bit training). val_loss hybrid - fp32 over n = 3 paired runs: mean -0.0252, 95% CI [-0.0787, +0.0034] (bootstrap, 2000 resamples); tracks = the 90% CI inside the margin (TOST), margin 0.05 nats.
rangeshift: - **inconclusive**: Resuming FP8 delayed scaling from a BF16 checkpoint without an amax history gives an abnormal first step once the activations leave e4m3's range at scale 1. abnormal seeds without calibration (> 5% above bf16 at the same seed): s=0: 0/1, s=2: 0/1, s=4: 0/1, s=6: 0/1, s=8: 1/1, s=10: 1/1. Rule: reproduced when every seed (at least 3) is abnormal at some s (here from s = 8); inconclusive when only some are or there are fewer seeds.
rangeshift: - **inconclusive**: A calibration step (high precision, fills the histories) removes the abnormal first step. with calibrate=1, abnormal first steps at the shifts where the uncalibrated run had any: 0 of 2 (95% Clopper-Pearson [0.00, 0.84]). Rule: reproduced when none is and the interval's upper end is below 0.5; not reproduced when any is; inconclusive otherwise.
delayedlag: - **inconclusive**: Delayed scaling (amax history) lags a moving distribution: after a shift its scales stay off for many steps, where current scaling recovers at once. delayed, history 1024 (TE): every seed lagged 16 steps or more for some shift and tensor: yes (after: range shift s=-4, range shift s=+4, data switch); current scaling back within 0.5 binade in 0-1 steps everywhere: yes; history 16: lags too. Rule: reproduced when both hold in every seed (at least 3); not reproduced when the TE default also recovers in 0-1 steps; inconclusive otherwise.
delayedlag: - **inconclusive**: The TE default delayed scaling ends above current scaling after a shift (the lag costs loss) (implied by the lag: scales from a stale history waste range until it rolls over). val_loss d1024 - current over n = 3 paired runs (pairs with a diverged or failed run dropped): mean +0.0009, 95% CI [-0.0017, +0.0024] (bootstrap, 2000 resamples); higher = the 95% CI above 0.
failsafe: - **inconclusive**: A bf16 check every 10 steps with fallback lowers the validation loss of e5m2 runs above LR_max (check-and-fallback as practised in FP8 training). val_loss e5m2check - e5m2 over n = 1 paired runs (pairs with a diverged or failed run dropped): mean +0.0000, 95% CI [+0.0000, +0.0000] (bootstrap, 2000 resamples); lower = the 95% CI below 0; inconclusive: fewer than 3 pairs (one seed).
failsafe: - **inconclusive**: A bf16 check every 10 steps with fallback lowers the validation loss of HYBRID runs above LR_max (check-and-fallback as practised in FP8 training). val_loss hybridcheck - hybrid over n = 1 paired runs (pairs with a diverged or failed run dropped): mean +0.0000, 95% CI [+0.0000, +0.0000] (bootstrap, 2000 resamples); lower = the 95% CI below 0; inconclusive: fewer than 3 pairs (one seed).
failsafe: - **inconclusive**: A bf16 check every 10 steps with fallback lowers the validation loss of delayed scaling after a range shift (check-and-fallback as practised in FP8 training). val_loss delayedshiftcheck - delayedshift over n = 0 paired runs (pairs with a diverged or failed run dropped): mean +nan, 95% CI [+nan, +nan] (bootstrap, 2000 resamples); lower = the 95% CI below 0; inconclusive: fewer than 3 pairs.
outliers: - **inconclusive**: SwiGLU's gate and up weights align more as weight decay grows (Fishman et al. 2024: weight decay drives SwiGLU weight alignment, which grows outliers under FP8). Spearman rho(weight decay, max gate/up |cos|; swiglu fp32) = nan over n = 2 runs; reproduced when rho >= 0.5, not reproduced when rho <= 0, inconclusive between or with n < 8 (here: too few runs).
outliers: - **observation**: Dose-response: the max attention logit against weight decay (fp32, no controls). Spearman rho(weight decay, max attention logit; gelu and swiglu fp32) = -0.45 over n = 4 runs; a trend would be rho >= 0.5, not reproduced when rho <= 0, inconclusive between or with n < 8 (here: too few runs).
outliers: - **not reproduced**: FP8 failure tracks outlier magnitude: unscaled e4m3fn forward operands lose more validation loss where the fp32 run grew larger outliers (He et al. 2024; Fishman et al. 2024). Spearman rho(the fp32 run's max amax/rms, the FP8 run's val gap; unscaled arms) = -0.62 over n = 8 runs; reproduced when rho >= 0.5, not reproduced when rho <= 0, inconclusive between or with n < 8.
outliers: - **inconclusive**: FP8 under/overflow tracks outlier magnitude: forward inputs with a larger amax/rms lose more values to underflow and overflow. Spearman rho(the run's max amax/rms, its input underflow + overflow %; FP8 arms) = 0.12 over n = 12 runs; reproduced when rho >= 0.5, not reproduced when rho <= 0, inconclusive between or with n < 8.
outliers: - **inconclusive**: qk-layernorm (with z-loss) reduces the growth of the max attention logit (Wortsman et al. 2023: qk-layernorm prevents attention-logit growth). growth of the max attention logit (last outliers.csv row minus the first), controls minus base (fp32 runs, paired by architecture, weight decay and seed) over n = 4 pairs: mean -0.019, 95% CI [-0.209, +0.171] (bootstrap); lower = the CI below 0.
outliers: - **inconclusive**: z-loss (with qk-layernorm) lowers the output logits' logsumexp (Wortsman et al. 2023: z-loss prevents output-logit divergence). lse max, controls minus base (fp32 runs, paired by architecture, weight decay and seed) over n = 4 pairs: mean +0.002, 95% CI [-0.002, +0.006] (bootstrap); lower = the CI below 0.
outliers: - **inconclusive**: SwiGLU with unscaled e4m3fn forward operands ends above SwiGLU in fp32 (Fishman et al. 2024: SwiGLU outliers break FP8 training). val_loss swiglu unscaled - swiglu fp32 over n = 2 paired runs: mean +0.0013, 95% CI [+0.0002, +0.0024] (bootstrap, 2000 resamples); higher = the 95% CI above 0; inconclusive: fewer than 3 pairs.
outliers: - **inconclusive**: GELU with unscaled e4m3fn forward operands ends above GELU in fp32. val_loss gelu unscaled - gelu fp32 over n = 2 paired runs: mean +0.0011, 95% CI [-0.0017, +0.0039] (bootstrap, 2000 resamples); higher = the 95% CI above 0; inconclusive: fewer than 3 pairs.
outliers: - **inconclusive**: SwiGLU in HYBRID (current scaling) tracks SwiGLU in fp32 within 0.05 nats (Micikevicius et al. 2022 (arXiv 2209.05433): FP8 training matches 16-bit training). val_loss swiglu hybrid - swiglu fp32 over n = 2 paired runs: mean +0.0012, 95% CI [+0.0012, +0.0012] (bootstrap, 2000 resamples); tracks = the 90% CI inside the margin (TOST), margin 0.05 nats; inconclusive: fewer than 3 pairs.
faithful: - **inconclusive**: MS-AMP O1 as published (one rank) tracks bf16 in validation loss within 0.02 nats (MS-AMP / FP8-LM (Peng et al. 2023): O1 matches BF16 training). val_loss msamp o1 r1 - bf16 over n = 1 paired runs: mean +0.0006, 95% CI [+0.0006, +0.0006] (bootstrap, 2000 resamples); tracks = the 90% CI inside the margin (TOST), margin 0.02 nats; inconclusive: fewer than 3 pairs (one seed).
faithful: - **inconclusive**: MS-AMP O1's FP8 all-reduce over 4 ranks tracks one rank within 0.02 nats (MS-AMP: FP8 gradient all-reduce with a shared scale and 1/sqrt(world size) pre-scaling keeps accuracy). val_loss msamp o1 r4 - msamp o1 r1 over n = 1 paired runs: mean +0.0002, 95% CI [+0.0002, +0.0002] (bootstrap, 2000 resamples); tracks = the 90% CI inside the margin (TOST), margin 0.02 nats; inconclusive: fewer than 3 pairs (one seed).
faithful: - **inconclusive**: The first and last blocks (and lm_head) in bf16 lower HYBRID's validation loss (Transformer Engine's guidance: keep the first and last layers in higher precision). val_loss hybrid edges - hybrid over n = 1 paired runs: mean -0.0012, 95% CI [-0.0012, -0.0012] (bootstrap, 2000 resamples); lower = the 95% CI below 0; inconclusive: fewer than 3 pairs (one seed).
faithful: - **inconclusive**: HYBRID FP8 (current scaling) tracks bf16 in validation loss within 0.02 nats (Megatron-LM FP8 (Transformer Engine), 1B, 21K steps). val_loss hybrid - bf16 over n = 1 paired runs: mean +0.0012, 95% CI [+0.0012, +0.0012] (bootstrap, 2000 resamples); tracks = the 90% CI inside the margin (TOST), margin 0.02 nats; inconclusive: fewer than 3 pairs (one seed).
faithful: - **inconclusive**: MS-AMP O1 over 4 ranks fails (diverges or does not converge) more often than bf16 (MS-AMP: no loss of stability). failed rate: msamp o1 r4 0/1 [0.00, 0.97], bf16 0/1 [0.00, 0.97] (exact 95% intervals); higher = the intervals disjoint in that direction; inconclusive: fewer than 3 runs per arm (one seed).
END_OF_VERDICTS
}

# every study end to end at the make-check size
for s in $studies; do
  d="$T/$s"
  start=$(date +%s)
  run study $s --tiny --out "$d"
  secs=$(($(date +%s) - start))
  if [ "$rc" -ne 0 ]; then fail "study $s --tiny runs" "status $rc" "stderr: $(txt "$T/err")" "$(tail -n 3 "$T/out" | tr '\n' '|')"; continue; fi
  pass "study $s --tiny runs (${secs} s)"
  rows=$(($(awk 'END{print NR}' "$d/runs.csv") - 1))
  runs=$(grep -c '^\[[0-9]*/[0-9]*\] ' "$T/out")
  if head -n 1 "$d/runs.csv" | grep -q '^label,group,lr,seed,final_loss' && [ "$rows" -ge 1 ] && [ "$rows" -eq "$runs" ]; then
    pass "$s: runs.csv has one row per run ($rows)"
  else fail "$s: runs.csv has one row per run" "rows $rows, progress lines $runs"; fi
  nl=0
  for f in "$d"/runs/*/loss.csv; do [ -s "$f" ] && nl=$((nl + 1)); done
  if [ "$nl" -eq "$rows" ]; then pass "$s: runs/LABEL/loss.csv per run"; else fail "$s: runs/LABEL/loss.csv per run" "$nl of $rows"; fi
  if grep -q '^## Setup' "$d/report.md" && grep -q '^## Claims and verdicts' "$d/report.md" &&
     grep -Eq '^- \*\*(reproduced|not reproduced|inconclusive|not testable here)\*\*' "$d/report.md" && grep -q '^| ' "$d/report.md"; then
    pass "$s: report.md has the setup, a table and verdicts"
  else fail "$s: report.md has the setup, a table and verdicts" "$(grep '^#' "$d/report.md" | tr '\n' '|')"; fi
  awk '/^## Claims and verdicts/ {f = 1; next} /^## / {f = 0} f && /^- \*\*/' "$d/report.md" |
    sed "s/^/$s: /" >"$T/$s.got"
  expected_verdicts | grep "^$s: " >"$T/$s.want"
  if [ -s "$T/$s.want" ] && cmp -s "$T/$s.want" "$T/$s.got"; then
    pass "$s: the $(awk 'END{print NR}' "$T/$s.want") verdicts and their numbers are the recorded ones"
  else fail "$s: the verdicts and their numbers are the recorded ones" "$(diff "$T/$s.want" "$T/$s.got" | head -n 6 | cut -c 1-400 | tr '\n' '|')"; fi
  if grep -q "^verdicts (the study file's claims):" "$T/out" && grep -q 'report: ' "$T/out"; then
    pass "$s: console ends with the verdicts and the report's path"
  else fail "$s: console ends with the verdicts and the report's path" "$(tail -n 3 "$T/out" | tr '\n' '|')"; fi
  if [ $have_py -eq 1 ]; then
    if "$PY" -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['study']=='$s' and len(j['runs'])==$rows and len(j['findings'])>=1" "$d/summary.json" 2>"$T/pyerr"; then
      pass "$s: summary.json is valid JSON with every run and the findings"
    else fail "$s: summary.json is valid JSON with every run and the findings" "$(txt "$T/pyerr")"; fi
  else skip "$s: summary.json is valid JSON" "no python3"; fi
  if [ $have_gnuplot -eq 1 ]; then
    nsvg=0; bad=""
    for f in "$d"/*.svg; do
      [ -f "$f" ] || continue
      nsvg=$((nsvg + 1))
      grep -q '<svg' "$f" || bad="$bad $f"
      [ -s "${f%.svg}.png" ] || bad="$bad ${f%.svg}.png"
    done
    if [ $nsvg -ge 1 ] && [ -z "$bad" ] && grep -q '\.svg)' "$d/report.md"; then pass "$s: $nsvg SVG + PNG plots, linked from the report"
    else fail "$s: SVG + PNG plots, linked from the report" "svg $nsvg, bad:$bad"; fi
  else skip "$s: plots" "gnuplot not installed"; fi
done

# the accumulation study's direct GEMM table
if [ -f "$T/accumulation/gemm.csv" ] && grep -q '^positive,1024,"acc=f16",' "$T/accumulation/gemm.csv"; then
  pass "accumulation: gemm.csv has the error per data, k and model"
else fail "accumulation: gemm.csv has the error per data, k and model" "$(head -n 3 "$T/accumulation/gemm.csv" 2>/dev/null | tr '\n' '|')"; fi

# no name: the default study, table at the end; same numbers on 1 and 2 threads
(cd "$T" && "$EXMY" study --tiny --threads 1 --no-plots </dev/null >"$T/out1" 2>"$T/err1"); rc=$?
if [ "$rc" -eq 0 ] && [ -f "$T/results/default/report.md" ] && grep -q '^hybrid ' "$T/out1" && grep -q 'report: results/default/report.md' "$T/out1"; then
  pass "exmy study (no name): the default study into results/default, table and report path"
else fail "exmy study (no name): the default study" "status $rc" "$(tail -n 4 "$T/out1" | tr '\n' '|')"; fi
run study --tiny --threads 2 --no-plots --out "$T/t2"
cut -d, -f1-14 "$T/results/default/runs.csv" >"$T/c1" 2>/dev/null
cut -d, -f1-14 "$T/t2/runs.csv" >"$T/c2" 2>/dev/null
if [ "$rc" -eq 0 ] && [ -s "$T/c1" ] && cmp -s "$T/c1" "$T/c2"; then pass "--threads 1 and 2 give the same runs.csv (timings aside)"
else fail "--threads 1 and 2 give the same runs.csv" "$(diff "$T/c1" "$T/c2" | head -n 4 | tr '\n' '|')"; fi

# the stress tests' own tables (their hooks' numbers beside the claims): recorded rows at --tiny
hook_rows() {
  cat <<'END_OF_ROWS'
failsafe| hybrid delayed shifted + check | 0.0589 | 1/1 | 2 | 1 | -1 | 50.0% | 13.3% | 4.2009 |
failsafe| hybrid delayed shifted + check | 0.133 | 1/1 | 2 | 0 | none | 0.0% | 13.3% | 10.6262 |
failsafe| hybrid delayed shifted + check every 1 | 0.133 | 1/1 | 3 | 1 | +1 | 80.0% | 20.0% | 4.5046 |
failsafe| hybrid + check | 0.0589 | 0/1 | 5 | 0 | none | 0.0% | 33.3% | 4.6062 |
delayedlag| current scaling | range shift s=+4 | input | +0.00 | 0.00 (0.0%) | 0 | 0/1 |
delayedlag| delayed, history 16 | range shift s=-4 | input | -0.03 | 3.38 (0.0%) | >4 | 1/1 |
delayedlag| delayed, history 16 | range shift s=+4 | input | -0.03 | 1.42 (51.1%) | 1 | 0/1 |
delayedlag| delayed, history 1024 (TE) | range shift s=+4 | weight | -0.02 | 2.41 (0.0%) | >4 | 1/1 |
delayedlag| delayed, history 16 | LR warm restart | grad | -0.18 | 1.24 (0.0%) | 0 | 0/1 |
delayedlag| delayed, history 1024 (TE) | data switch | grad | -0.18 | 0.92 (0.0%) | >4 | 1/1 |
END_OF_ROWS
}
for s in failsafe delayedlag; do
  miss=$(hook_rows | sed -n "s/^$s|/|/p" | while IFS= read -r row; do grep -qxF -- "$row" "$T/$s/report.md" || echo "$row"; done)
  if [ -f "$T/$s/report.md" ] && [ -z "$miss" ]; then pass "$s: the analysis table's recorded rows"
  else fail "$s: the analysis table's recorded rows" "missing: $(echo "$miss" | head -n 3 | tr '\n' ' ')"; fi
done

# --set reaches every run; --steps sets the length
run study --tiny --no-plots --steps 5 --set weight_decay=0 --out "$T/s5"
if [ "$rc" -eq 0 ] && grep -q '^weight_decay = 0$' "$T/s5/report.md" && [ "$(awk -F, 'NR>1 && $14!=5' "$T/s5/runs.csv" | wc -l)" -eq 0 ]; then
  pass "--set and --steps apply to every run (and show in the report's setup)"
else fail "--set and --steps apply to every run" "status $rc" "$(txt "$T/err")"; fi

finish
