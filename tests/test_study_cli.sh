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
#   errors (unknown study, bad --lrs, --set with an unknown key, --tiny with
#   --full, a bad --steps) exit 2 with one line naming the bad text.
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
studies="default mantissa recipes fallback calibration accumulation rounding"
ok=1
for s in $studies; do grep -Eq "^$s +[a-zA-Z0-9]" "$T/out" || ok=0; done
if [ "$rc" -eq 0 ] && [ $ok -eq 1 ]; then pass "study --list names every study with a description"
else fail "study --list names every study with a description" "$(txt "$T/out")"; fi

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
  if grep -q '^## Setup' "$d/report.md" && grep -q '^## Reproduced / not reproduced' "$d/report.md" &&
     grep -Eq '^- \*\*(reproduced|not reproduced|inconclusive|observation)\*\*' "$d/report.md" && grep -q '^| ' "$d/report.md"; then
    pass "$s: report.md has the setup, a table and verdicts"
  else fail "$s: report.md has the setup, a table and verdicts" "$(grep '^#' "$d/report.md" | tr '\n' '|')"; fi
  if grep -q 'findings:' "$T/out" && grep -q 'report: ' "$T/out"; then pass "$s: console ends with the findings and the report's path"
  else fail "$s: console ends with the findings and the report's path" "$(tail -n 3 "$T/out" | tr '\n' '|')"; fi
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

# --set reaches every run; --steps sets the length
run study --tiny --no-plots --steps 5 --set weight_decay=0 --out "$T/s5"
if [ "$rc" -eq 0 ] && grep -q '^weight_decay = 0$' "$T/s5/report.md" && [ "$(awk -F, 'NR>1 && $14!=5' "$T/s5/runs.csv" | wc -l)" -eq 0 ]; then
  pass "--set and --steps apply to every run (and show in the report's setup)"
else fail "--set and --steps apply to every run" "status $rc" "$(txt "$T/err")"; fi

finish
