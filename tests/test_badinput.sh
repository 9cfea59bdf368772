#!/bin/sh
# test_badinput.sh: the "bad input" table, across commands.  Each bad
# argument exits 2 with one stderr line that starts with `exmy: COMMAND:` and
# names the bad text; numbers that overflow or underflow while parsed raise
# the flags; blank lines and comments in streams are skipped; out_dir and
# study --out are made (mkdir -p); --plot writes the format its extension
# names, and refuses other extensions, folders and unwritable paths before
# gnuplot runs.  Fast: a few seconds.
NAME=test_badinput
. "${srcdir:-.}/tests/cli_harness.sh"

TINY="--n_layer 1 --d_model 16 --n_head 2 --seq_len 8 --batch 2 --steps 1 --eval_batches 0 --progress 0"

# bad STATUS FRAGMENT ARGS...: status, one line on stderr, `exmy: CMD:`
# prefix (CMD = the first argument) and the fragment in it.
bad() {
  want=$1; frag=$2; shift 2
  run "$@"
  d="exmy $* -> $want, '$frag'"
  if [ "$rc" -eq "$want" ] && [ "$(awk 'END{print NR}' "$T/err")" -eq 1 ] &&
     grep -q "^exmy: $1: " "$T/err" && grep -qF -- "$frag" "$T/err"; then pass "$d"
  else fail "$d" "status $rc (want $want)" "stderr: $(txt "$T/err")"; fi
}
# stream DESC EXPECTED_STDOUT INPUT ARGS...: stdin INPUT, status 0, whole stdout
stream() {
  d=$1; want=$2; inp=$3; shift 3
  printf '%b' "$inp" | "$EXMY" "$@" >"$T/out" 2>"$T/err"; rc=$?
  got=$(tr '\n' '|' <"$T/out")
  if [ "$rc" -eq 0 ] && [ "$got" = "$want" ] && [ ! -s "$T/err" ]; then pass "$d"
  else fail "$d" "status $rc, stdout '$got' (want '$want')" "stderr: $(txt "$T/err")"; fi
}

run gen --out "$T/x.npy" --shape 4x64
check_ok "gen a small tensor"

# ---- 1. numbers that overflow or underflow while parsed --------------------
stream "1e999 -> overflow, inexact" "0x7f nan flags=inexact,overflow|" '1e999\n' quantize e4m3fn --flags
stream "0x1p-2000 -> underflow, inexact" "0x00 0 flags=inexact,underflow|" '0x1p-2000\n' quantize e4m3fn --flags
stream "1e-400 -> underflow, inexact (rup: min subnormal)" "0x01 0.001953125 flags=inexact,underflow|" \
  '1e-400\n' quantize e4m3fn --flags --round rup
stream "a decimal above a tie that strtod rounds onto it" "0x39 1.125 flags=inexact|" \
  '1.06250000000000000001\n' quantize e4m3fn --flags

# ---- 2. blank lines and comments ----------------------------------------------
stream "blank lines and comments are skipped" "0x38 1|0x40 2|" '\n# c\n1\n  \n2 # two\n' quantize e4m3fn
printf '1\n\n# c\nx\n' | "$EXMY" quantize e4m3fn >/dev/null 2>"$T/err"; rc=$?
if [ "$rc" -eq 2 ] && grep -q "line 4: malformed number 'x'" "$T/err"; then pass "line numbers count skipped lines"
else fail "line numbers count skipped lines" "status $rc" "stderr: $(txt "$T/err")"; fi

# ---- 3. bad arguments: exit 2, one prefixed line ------------------------------
for c in quantize whatif quantize-tensor gen gemm; do
  bad 2 "--seed: bad value 'abc'" $c --seed abc
done
bad 2 "seed: 'abc'" train --seed abc
bad 2 "unknown format 'bogus'" whatif --in "$T/x.npy" --formats bogus
bad 2 "layer.h9: no linear layer matches 'h9'" train $TINY --layer.h9 bf16
bad 2 "layer.h9: no linear layer matches 'h9'" train --model mlp --steps 1 --progress 0 --layer.h9 bf16
bad 2 "dump_layers: no linear layer matches 'h9'" train $TINY --dump_layers first,h9
bad 2 "input=current and grad=mx" train $TINY --prec 'hybrid;recipe.grad=mx'
bad 2 "nvfp4" train $TINY --prec 'hybrid;recipe=mx;recipe.weight=nvfp4'
bad 2 "grad=mx" train $TINY --layer.last 'hybrid;recipe.grad=mx'
bad 2 "grad=mx" study --set 'prec=hybrid;recipe.grad=mx' --tiny --out "$T/s0" --no-plots
bad 2 "d_model 16 is not a multiple of n_head 3" train $TINY --n_head 3
bad 2 "data: cannot read '$T/none.txt'" train $TINY --data "$T/none.txt"
bad 2 "resume: cannot read '$T/none.ckpt'" train $TINY --resume "$T/none.ckpt"
bad 2 "ckpt: cannot write '$T/no/x.ckpt'" train $TINY --ckpt "$T/no/x.ckpt"

# ---- 4. out folders: mkdir -p, or a clear error --------------------------------
run train $TINY --out_dir "$T/runs/a/hybrid"
if [ "$rc" -eq 0 ] && [ -s "$T/runs/a/hybrid/loss.csv" ]; then pass "train --out_dir makes the parents"
else fail "train --out_dir makes the parents" "status $rc" "stderr: $(txt "$T/err")"; fi
: >"$T/file"
bad 2 "out_dir: cannot create '$T/file/x': '$T/file' is not a folder" train $TINY --out_dir "$T/file/x"
bad 2 "--out: cannot create '$T/file/s'" study --tiny --no-plots --out "$T/file/s"

# ---- 5. --plot -------------------------------------------------------------------
W="whatif --in $T/x.npy --formats e4m3fn"
bad 2 "unsupported extension '.jpg'" $W --plot "$T/w.jpg"
bad 2 "'$T/w' has no extension" $W --plot "$T/w"
mkdir "$T/d.png"
bad 2 "'$T/d.png' is a folder" $W --plot "$T/d.png"
bad 2 "'$T/' is a folder" $W --plot "$T/"
bad 2 "cannot write '$T/no/w.png'" $W --plot "$T/no/w.png"
if command -v gnuplot >/dev/null 2>&1; then
  for ext in png svg pdf; do
    f="$T/it's a \"plot\"; \$x.$ext" # quotes, a space, a semicolon, a dollar: gnuplot sees it quoted
    run $W --plot "$f"
    case $ext in
      png) ok=$(head -c 4 "$f" 2>/dev/null | od -An -c | tr -d ' \n'); want='211PNG' ;;
      svg) ok=$(head -c 300 "$f" 2>/dev/null | grep -c '<svg'); want=1 ;;
      pdf) ok=$(head -c 4 "$f" 2>/dev/null); want='%PDF' ;;
    esac
    if [ "$rc" -eq 0 ] && [ "$ok" = "$want" ] && [ "$(cat "$T/err")" = "exmy: wrote $f" ]; then
      pass "--plot .$ext: a $ext file, one row, no gnuplot warning, an odd file name"
    else fail "--plot .$ext" "status $rc, magic '$ok' (want '$want')" "stderr: $(txt "$T/err")"; fi
  done
else
  skip "--plot .png/.svg/.pdf" "gnuplot not installed"
fi

# ---- 6. mma ----------------------------------------------------------------------
bad 2 "unknown instruction 'sm_90:wgmma.f32.e4m3.e2m1'" mma sm_90:wgmma.f32.e4m3.e2m1 --a 0x38 --b 0x38
bad 2 "bad option 'zero=v3'" mma sm_90:wgmma.f32.e4m3,zero=v3 --a 0x38 --b 0x38
bad 2 "bad A code '0xzz'" mma sm_90:wgmma.f32.e4m3 --a 0xzz --b 0x38
bad 2 "A has 1 codes, expected 1 x 32" mma sm_90:wgmma.f32.e4m3 --a 0x38 --b 0x38
bad 2 "needs --scale-a and --scale-b" mma sm_100:tcgen05.kind::mxf4nvf4 --a "$(printf '0x2 %.0s' $(seq 64))" --b "$(printf '0x2 %.0s' $(seq 64))"
bad 2 "--replay needs four files" mma sm_90:wgmma.f32.e4m3 --replay a b
bad 2 "cannot open '$T/none'" mma sm_90:wgmma.f32.e4m3 --replay "$T/none" "$T/none" "$T/none" "$T/none"

finish
