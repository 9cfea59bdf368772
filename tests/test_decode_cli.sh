#!/bin/sh
# test_decode_cli.sh: `exmy decode`.  quantize then decode equals quantize's
# --dequant byte for byte; quantize-tensor --scales then decode --scales
# (--scaling, --tensor-scale for nvfp4) equals its --dequant for every recipe
# kind; --f64 against quantize's float64 --dequant; bad arguments exit 2 with
# one line naming the bad value.
NAME=test_decode_cli
. "${srcdir:-.}/tests/cli_harness.sh"

run gen --out "$T/x.npy" --shape 5x300 --seed 3; check_ok "gen a 5x300 tensor"
run quantize e4m3fn --in "$T/x.npy" --out "$T/q.npy" --dequant "$T/d.npy"; check_ok "quantize e4m3fn"
run decode e4m3fn --in "$T/q.npy" --out "$T/d2.npy"; check_ok "decode e4m3fn"
if cmp -s "$T/d.npy" "$T/d2.npy"; then pass "decode equals quantize --dequant byte for byte"
else fail "decode differs from quantize --dequant"; fi
if npy_is "$T/d2.npy" f4 5 300; then pass "decode writes float32 5x300"; else fail "decode output header" "$(head -c 80 "$T/d2.npy" | tr -cd '[:print:]')"; fi

for s in none current current:pow2 delayed block:1x128 block:128x128 mx mx:ocp nvfp4; do
  F=e4m3fn; [ "$s" = nvfp4 ] && F=e2m1fn
  run quantize-tensor --in "$T/x.npy" --format $F --scaling $s --out "$T/qt.npy" --scales "$T/s.npy" --dequant "$T/dt.npy"
  check_ok "quantize-tensor $F $s"
  ts=$(sed -n 's/.*tensor scale \([^ ]*\) .*/\1/p' "$T/out")
  run decode $F --in "$T/qt.npy" --scales "$T/s.npy" --scaling $s ${ts:+--tensor-scale $ts} --out "$T/dt2.npy"
  check_ok "decode $F --scaling $s"
  if cmp -s "$T/dt.npy" "$T/dt2.npy"; then pass "decode --scales ($s) equals quantize-tensor --dequant"
  else fail "decode --scales ($s) differs from quantize-tensor --dequant"; fi
done
# a per-tensor scale needs no --scaling
run quantize-tensor --in "$T/x.npy" --format e5m2 --scaling current --out "$T/qt.npy" --scales "$T/s.npy" --dequant "$T/dt.npy"
run decode e5m2 --in "$T/qt.npy" --scales "$T/s.npy" --out "$T/dt2.npy"; check_ok "decode with a 1x1 scale, no --scaling"
if cmp -s "$T/dt.npy" "$T/dt2.npy"; then pass "per-tensor scale without --scaling equals --dequant"; else fail "per-tensor decode differs"; fi

# float64: quantize's --dequant of a float64 tensor
printf '\223NUMPY\001\000v\000{'"'"'descr'"'"': '"'"'<f8'"'"', '"'"'fortran_order'"'"': False, '"'"'shape'"'"': (2,), }' > "$T/x8.npy"
printf '%60s\n' '' >> "$T/x8.npy"
printf '\000\000\000\000\000\000\360\077\232\231\231\231\231\231\271\077' >> "$T/x8.npy"
run quantize e8m30 --in "$T/x8.npy" --out "$T/q8.npy" --dequant "$T/d8.npy"; check_ok "quantize a float64 tensor to e8m30"
run decode e8m30 --in "$T/q8.npy" --f64 --out "$T/d82.npy"; check_ok "decode --f64"
if cmp -s "$T/d8.npy" "$T/d82.npy"; then pass "decode --f64 equals quantize's float64 --dequant"; else fail "decode --f64 differs"; fi

# bad arguments: status 2, one line naming the bad value
run decode; check_err "no FORMAT" "no FORMAT given"
run decode e9m9x --in "$T/q.npy" --out "$T/o.npy"; check_err "bad format" "e9m9x"
run decode e4m3fn --out "$T/o.npy"; check_err "no --in" "in Q.npy is required"
run decode e4m3fn --in "$T/q.npy"; check_err "no --out" "out X.npy is required"
run decode e4m3fn --in "$T/q.npy" --out "$T/o.npy" --bogus; check_err "unknown option" "'--bogus'"
run decode e4m3fn e5m2 --in "$T/q.npy" --out "$T/o.npy"; check_err "two formats" "'e5m2'"
run decode e4m3fn --in "$T/nonexistent.npy" --out "$T/o.npy"; check_err "missing input" "nonexistent.npy"
run decode bf16 --in "$T/q.npy" --out "$T/o.npy"; check_err "codes of the wrong width" "holds uint8 ('|u1'), not uint16"
run decode e2m1fn --in "$T/q.npy" --out "$T/o.npy"; check_err "code outside a 4-bit format" "is not a 4-bit e2m1fn code"
run decode e4m3fn --in "$T/q.npy" --out "$T/o.npy" --scaling mx; check_err "--scaling without --scales" "needs --scales"
run quantize-tensor --in "$T/x.npy" --format e4m3fn --scaling block:1x128 --out "$T/qt.npy" --scales "$T/s.npy"
run decode e4m3fn --in "$T/qt.npy" --scales "$T/s.npy" --out "$T/o.npy"; check_err "group scales without --scaling" "5 x 3 scale groups"
run decode e4m3fn --in "$T/qt.npy" --scales "$T/s.npy" --scaling block:1x32 --out "$T/o.npy"; check_err "scales of another recipe" "5 x 3 scales, but block:1x32"
run decode e4m3fn --in "$T/qt.npy" --scales "$T/s.npy" --scaling bogus --out "$T/o.npy"; check_err "bad recipe" "bogus"
run decode e4m3fn --in "$T/qt.npy" --scales "$T/s.npy" --scaling block:1x128 --tensor-scale 2 --out "$T/o.npy"; check_err "--tensor-scale without nvfp4" "'2' is for --scaling nvfp4"
run decode e4m3fn --in "$T/qt.npy" --scales "$T/qt.npy" --scaling mx --out "$T/o.npy"; check_err "scales of the wrong shape" "5 x 300 scales, but mx"
run decode e2m1fn --in "$T/qt.npy" --scales "$T/s.npy" --scaling nvfp4 --tensor-scale abc --out "$T/o.npy"; check_err "bad --tensor-scale" "bad --tensor-scale 'abc'"
if [ ! -e "$T/o.npy" ]; then pass "no output written on errors"; else fail "an error left $T/o.npy"; fi
run decode --help; check_ok "decode --help"
if grep -q "usage: exmy decode FORMAT" "$T/out"; then pass "--help prints the usage"; else fail "--help text"; fi
finish
