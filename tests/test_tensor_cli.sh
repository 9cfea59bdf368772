#!/bin/sh
# test_tensor_cli.sh: the contract of the tensor commands of `exmy`:
# gen, stats, quantize-tensor, whatif.
#
#   gen writes a float32 tensor of the requested shape (deterministic per
#   seed); stats prints one row per named format (--csv too);
#   quantize-tensor with each scaling recipe writes --out (codes),
#   --scales (float32 scale_inv of srows x scols, or uint8 E8M0 / E4M3
#   codes for mx / nvfp4) and --dequant (float32) with the right dtypes and
#   shapes, and --stats prints the statistics; the dequant file equals
#   decode(code) * scale_inv recomputed in numpy from the written files;
#   whatif prints one row per (format, recipe), --csv and --json carry the
#   same rows, --plot writes a PNG (when gnuplot is installed); errors
#   (unknown recipe, bad recipe option, unknown format, missing --in, int32
#   .npy, nonexistent file, bad --shape) exit with status 2 and a one-line
#   message on stderr that names the bad text; never a crash.
#
# Run from the top build directory (make check) or anywhere with
# EXMY=/path/to/exmy.  Checks that need python3 (+ numpy) are skipped, not
# the whole test, when those are missing (`ok N - ... # SKIP why`).
# Prints `ok N - desc` / `not ok N - desc` and ends with
# `test_tensor_cli: N checks, N failures`.  Exit 0 pass, 1 fail.

EXMY=${EXMY:-./exmy}

n=0
nfail=0
nskip=0
T=$(mktemp -d "${TMPDIR:-/tmp}/exmy_tcli.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
trap 'rm -rf "$T"; exit 1' HUP INT TERM

echo "test_tensor_cli: exmy $EXMY"
if [ ! -x "$EXMY" ]; then
  echo "not ok 1 - exmy binary not found or not executable: $EXMY"
  echo "test_tensor_cli: 1 checks, 1 failures"
  exit 1
fi

TO=
if command -v timeout >/dev/null 2>&1; then TO="timeout 120"; fi

HAVE_PY=0
HAVE_NP=0
if command -v python3 >/dev/null 2>&1; then
  HAVE_PY=1
  if python3 -c 'import numpy' >/dev/null 2>&1; then HAVE_NP=1; fi
fi
HAVE_GNUPLOT=0
if command -v gnuplot >/dev/null 2>&1; then HAVE_GNUPLOT=1; fi

pass() { n=$((n + 1)); echo "ok $n - $1"; }
fail() {
  n=$((n + 1)); nfail=$((nfail + 1))
  echo "not ok $n - $1"; shift
  for l in "$@"; do printf '#   %s\n' "$l"; done
}
skip() { n=$((n + 1)); nskip=$((nskip + 1)); echo "ok $n - $1 # SKIP $2"; }

# run ARGS...: run exmy; rc, stdout in $T/out, stderr in $T/err.
run() {
  $TO "$EXMY" "$@" </dev/null >"$T/out" 2>"$T/err"
  rc=$?
}
nlines() { awk 'END { print NR }' "$1"; }
errtext() { head -n 3 "$T/err" | tr '\n' '|'; }
outtext() { head -n 3 "$T/out" | tr '\n' '|'; }
status_note() {
  if [ "$rc" -ge 128 ] || [ "$rc" -eq 124 ]; then
    echo "CRASH or timeout: status $rc"
  else
    echo "status $rc"
  fi
}

# npy header text (printable characters of the first 256 bytes)
npyhdr_text() { head -c 256 "$1" 2>/dev/null | tr -cd '[:print:]'; }
# npy_is FILE DTYPECHARS R C: the .npy header has descr '<DT' or '|DT' and
# shape (R, C).  DTYPECHARS: f4, u1, u2, ...
npy_is() {
  h=$(npyhdr_text "$1")
  printf '%s' "$h" | grep -q "^NUMPY" || return 1
  printf '%s' "$h" | grep -Eq "'descr': *'[<|]$2'" || return 1
  printf '%s' "$h" | grep -Eq "'shape': *\\($3, *$4,? *\\)" || return 1
  return 0
}

# a version 1.0 .npy header of 128 bytes: npyhdr DESCR SHAPE
npyhdr() {
  h="{'descr': '$1', 'fortran_order': False, 'shape': $2, }"
  printf '\223NUMPY\001\000\166\000%s' "$h"
  pad=$((127 - 10 - ${#h}))
  printf "%${pad}s\n" ""
}

# ---- help ------------------------------------------------------------------

for sub in gen stats quantize-tensor whatif; do
  run "$sub" --help
  if [ "$rc" -eq 0 ] && grep -qi 'usage' "$T/out"; then
    pass "exmy $sub --help"
  else
    fail "exmy $sub --help" "$(status_note); want 0 and 'usage' on stdout" "stderr: $(errtext)"
  fi
done

# ---- gen -------------------------------------------------------------------

# gen_case DIST R C
gen_case() {
  f="$T/g_$1_$2x$3.npy"
  run gen --out "$f" --dist "$1" --shape "$2x$3" --seed 5
  if [ "$rc" -eq 0 ] && npy_is "$f" f4 "$2" "$3"; then
    pass "gen --dist $1 --shape $2x$3 writes float32 ($2, $3)"
  else
    fail "gen --dist $1 --shape $2x$3 writes float32 ($2, $3)" "$(status_note)" \
      "header: $(npyhdr_text "$f")" "stderr: $(errtext)"
  fi
}
gen_case normal 130 300
gen_case laplace 7 5
gen_case student 1 1
gen_case activation 3 1000
gen_case activation 130 300
run gen --out "$T/gdef.npy"
if [ "$rc" -eq 0 ] && npy_is "$T/gdef.npy" f4 256 1024; then
  pass "gen default shape is 256x1024 float32"
else
  fail "gen default shape is 256x1024 float32" "$(status_note)" "header: $(npyhdr_text "$T/gdef.npy")"
fi
run gen --out "$T/gs1.npy" --shape 40x50 --seed 11
run gen --out "$T/gs2.npy" --shape 40x50 --seed 11
run gen --out "$T/gs3.npy" --shape 40x50 --seed 12
if cmp -s "$T/gs1.npy" "$T/gs2.npy"; then
  pass "gen is deterministic for a seed"
else
  fail "gen is deterministic for a seed" "two runs with --seed 11 differ"
fi
if [ -f "$T/gs3.npy" ] && ! cmp -s "$T/gs1.npy" "$T/gs3.npy"; then
  pass "gen with another seed gives another tensor"
else
  fail "gen with another seed gives another tensor" "--seed 11 and --seed 12 agree"
fi
if [ "$HAVE_NP" -eq 1 ]; then
  if out=$(python3 - "$T" 2>&1 <<'EOF'
import sys, numpy as np
T = sys.argv[1]
bad = []
for name, shape in [("g_normal_130x300", (130, 300)), ("g_laplace_7x5", (7, 5)),
                    ("g_student_1x1", (1, 1)), ("g_activation_3x1000", (3, 1000)),
                    ("gdef", (256, 1024))]:
    a = np.load(f"{T}/{name}.npy")
    if a.dtype != np.float32 or a.shape != shape:
        bad.append(f"{name}: {a.dtype} {a.shape}, want float32 {shape}")
    elif not np.all(np.isfinite(a)):
        bad.append(f"{name}: non-finite values")
    elif a.size > 1 and np.all(a == a.flat[0]):
        bad.append(f"{name}: constant tensor")
print("; ".join(bad) if bad else "OK")
EOF
  ) && [ "$out" = OK ]; then
    pass "gen tensors load in numpy with the right dtype/shape, finite, not constant"
  else
    fail "gen tensors load in numpy with the right dtype/shape, finite, not constant" "$out"
  fi
else
  skip "gen tensors load in numpy" "numpy not available"
fi

# ---- stats -------------------------------------------------------------------

run formats
awk 'NR > 1 && NF > 0 { print $1 }' "$T/out" >"$T/names"
nnames=$(nlines "$T/names")
X="$T/g_activation_130x300.npy"
run stats --in "$X"
cp "$T/out" "$T/stats.txt"
missing=
for f in $(cat "$T/names"); do
  c=$(awk -v f="$f" '$1 == f' "$T/stats.txt" | awk 'END { print NR }')
  [ "$c" -eq 1 ] || missing="$missing $f($c)"
done
if [ "$rc" -eq 0 ] && [ "$nnames" -ge 10 ] && [ -z "$missing" ]; then
  pass "stats prints one row per named format ($nnames formats)"
else
  fail "stats prints one row per named format" "$(status_note), $nnames names; rows missing or repeated:$missing" "stderr: $(errtext)"
fi
if grep -q "130 x 300" "$T/stats.txt"; then
  pass "stats names the tensor's shape"
else
  fail "stats names the tensor's shape" "stdout: $(head -n 2 "$T/stats.txt" | tr '\n' '|')"
fi
run stats --in "$X" --csv
cp "$T/out" "$T/stats.csv"
ncsv=$(nlines "$T/stats.csv")
badrows=$(awk -F, 'NR > 1 && NF != 8' "$T/stats.csv" | awk 'END { print NR }')
missing=
for f in $(cat "$T/names"); do
  awk -F, -v f="$f" 'NR > 1 && $1 == f { found = 1 } END { exit !found }' "$T/stats.csv" || missing="$missing $f"
done
if [ "$rc" -eq 0 ] && head -n 1 "$T/stats.csv" | grep -q '^format,' &&
   [ "$ncsv" -eq $((nnames + 1)) ] && [ "$badrows" -eq 0 ] && [ -z "$missing" ]; then
  pass "stats --csv: a header and one 8-field line per named format"
else
  fail "stats --csv: a header and one 8-field line per named format" \
    "$(status_note), $ncsv lines (want $((nnames + 1))), $badrows lines without 8 fields, missing:$missing"
fi
if [ "$HAVE_NP" -eq 1 ]; then
  # counts of zero / inf / nan on a crafted tensor, and the csv percentages
  # for e4m3fn recomputed in numpy
  python3 -c "
import numpy as np
a = np.array([[0, 1, -2, np.inf], [np.nan, -np.inf, 0.001, 1000], [-0.0, 3e-5, 500, 0.5]], np.float32)
np.save('$T/special.npy', a)"
  run stats --in "$T/special.npy" --csv
  cp "$T/out" "$T/special.csv"
  run stats --in "$T/special.npy"
  if out=$(python3 - "$T" 2>&1 <<'EOF'
import sys, numpy as np
T = sys.argv[1]
txt = open(f"{T}/out").read()
first = txt.splitlines()[0] if txt else ""
bad = []
for want in ["7 nonzero finite", "2 zero", "2 inf", "1 nan"]:
    if want not in first:
        bad.append(f"first line lacks '{want}': {first!r}")
rows = {l.split(",")[0]: l.split(",") for l in open(f"{T}/special.csv").read().splitlines()[1:]}
r = rows.get("e4m3fn")
if r is None:
    bad.append("no e4m3fn row")
else:
    a = np.abs(np.load(f"{T}/special.npy").astype(np.float64).ravel())
    a = a[np.isfinite(a) & (a != 0)]
    minsub, maxf = 2.0**-9, 448.0
    want = [100 * np.mean(a < minsub), 100 * np.mean((a >= minsub) & (a < 2.0**-6)),
            100 * np.mean((a >= 2.0**-6) & (a <= maxf)), 100 * np.mean(a > maxf)]
    got = [float(v) for v in r[3:7]]
    if float(r[1]) != minsub or float(r[2]) != maxf:
        bad.append(f"e4m3fn min_subnormal/max_finite {r[1]}, {r[2]}")
    for name, g, w in zip(["below", "subnormal", "normal", "above"], got, want):
        if abs(g - w) > 1e-4 * max(1.0, abs(w)):
            bad.append(f"e4m3fn {name}% {g}, numpy {w}")
print("; ".join(bad) if bad else "OK")
EOF
  ) && [ "$out" = OK ]; then
    pass "stats counts zero/inf/nan and e4m3fn's range shares as numpy does"
  else
    fail "stats counts zero/inf/nan and e4m3fn's range shares as numpy does" "$out"
  fi
else
  skip "stats counts zero/inf/nan and e4m3fn's range shares" "numpy not available"
fi

# ---- quantize-tensor ---------------------------------------------------------

# X is 130 x 300: 130 = 128 + 2 rows and 300 columns, a multiple of none of
# 128, 32, 16, so every recipe has partial groups.
# qt_case RECIPE FORMAT CODE_DT SCALE_DT SROWS SCOLS
qt_case() {
  r=$1; f=$2; tag=$(printf '%s_%s' "$r" "$f" | tr ':,' '__')
  rm -f "$T/q_$tag.npy" "$T/s_$tag.npy" "$T/d_$tag.npy"
  run quantize-tensor --in "$X" --format "$f" --scaling "$r" \
    --out "$T/q_$tag.npy" --scales "$T/s_$tag.npy" --dequant "$T/d_$tag.npy" --stats
  cp "$T/out" "$T/stdout_$tag.txt"
  d="quantize-tensor $r $f: codes $3 (130, 300), scales $4 ($5, $6), dequant f4 (130, 300)"
  why=
  [ "$rc" -eq 0 ] || why="$why $(status_note);"
  npy_is "$T/q_$tag.npy" "$3" 130 300 || why="$why codes header: $(npyhdr_text "$T/q_$tag.npy");"
  npy_is "$T/s_$tag.npy" "$4" "$5" "$6" || why="$why scales header: $(npyhdr_text "$T/s_$tag.npy");"
  npy_is "$T/d_$tag.npy" f4 130 300 || why="$why dequant header: $(npyhdr_text "$T/d_$tag.npy");"
  if [ -z "$why" ]; then pass "$d"; else fail "$d" "$why" "stderr: $(errtext)"; fi
  d="quantize-tensor $r $f --stats prints the statistics"
  missing=
  for k in elements underflow overflow mse cosine snr 'max rel' 'scale ratio' histogram; do
    grep -qi "$k" "$T/out" || missing="$missing '$k'"
  done
  grep -Eq "^quantized 130 x 300 to $f with .*: $5 x $6 scale groups" "$T/out" ||
    missing="$missing 'quantized 130 x 300 to $f with ...: $5 x $6 scale groups'"
  if [ "$rc" -eq 0 ] && [ -z "$missing" ]; then pass "$d"; else fail "$d" "missing:$missing" "stdout: $(outtext)"; fi
}
qt_case current e4m3fn u1 f4 1 1
qt_case current:row e4m3fn u1 f4 130 1
qt_case current:pow2 e5m2 u1 f4 1 1
qt_case delayed e4m3fn u1 f4 1 1
qt_case block:1x128 e4m3fn u1 f4 130 3
qt_case block:128x128 e4m3fn u1 f4 2 3
qt_case mx e4m3fn u1 u1 130 10
qt_case mx:col e4m3fn u1 u1 5 300
qt_case mx:ocp e4m3fn u1 u1 130 10
qt_case mx e2m1fn u1 u1 130 10
qt_case nvfp4 e2m1fn u1 u1 130 19
qt_case nvfp4:16x16 e2m1fn u1 u1 9 19
qt_case current bf16 u2 f4 1 1

# each output alone; nothing else written
rm -f "$T/only_q.npy" "$T/only_s.npy" "$T/only_d.npy"
run quantize-tensor --in "$X" --format e4m3fn --scaling current --dequant "$T/only_d.npy"
if [ "$rc" -eq 0 ] && npy_is "$T/only_d.npy" f4 130 300 && [ ! -e "$T/only_q.npy" ]; then
  pass "quantize-tensor --dequant alone"
else
  fail "quantize-tensor --dequant alone" "$(status_note)" "stderr: $(errtext)"
fi

if [ "$HAVE_NP" -eq 1 ]; then
  # dequant_check RECIPE FORMAT BLOCK_ROWS BLOCK_COLS: the dequant file
  # equals decode(code) * scale_inv (group-broadcast; E8M0 2^(c-127) for
  # mx, E4M3 code times fp32(1/S_enc) for nvfp4), rounded once to float32.
  dequant_check() {
    r=$1; f=$2; tag=$(printf '%s_%s' "$r" "$f" | tr ':,' '__')
    if out=$(python3 - "$T" "$tag" "$r" "$f" "$X" "$3" "$4" 2>&1 <<'EOF'
import sys, re, numpy as np
T, tag, recipe, fmt, X = sys.argv[1:6]
br, bc = int(sys.argv[6]), int(sys.argv[7])
q = np.load(f"{T}/q_{tag}.npy"); s = np.load(f"{T}/s_{tag}.npy"); d = np.load(f"{T}/d_{tag}.npy")
x = np.load(X)

def dec(c, E, M, bias, ones_nan):
    c = c.astype(np.int64)
    sign = np.where((c >> (E + M)) & 1, -1.0, 1.0)
    e = (c >> M) & ((1 << E) - 1); m = (c & ((1 << M) - 1)).astype(np.float64)
    v = np.where(e == 0, m / 2**M * 2.0**(1 - bias), (1 + m / 2**M) * 2.0**(e.astype(np.float64) - bias))
    v = sign * v
    if ones_nan:
        v = np.where((c & ((1 << (E + M)) - 1)) == (1 << (E + M)) - 1, np.nan, v)
    return v

fmts = {"e4m3fn": (4, 3, 7, True), "e2m1fn": (2, 1, 1, False)}
if fmt not in fmts:
    print(f"no numpy decoder for {fmt}"); sys.exit(0)
val = dec(q, *fmts[fmt])
R, C = q.shape
sr, sc = s.shape
if (sr, sc) != (-(-R // br), -(-C // bc)):
    print(f"scales shape {s.shape} for blocks {br}x{bc} of {q.shape}"); sys.exit(0)
if recipe.startswith("mx"):
    sinv = 2.0 ** (s.astype(np.float64) - 127)
    tinv = 1.0
elif recipe.startswith("nvfp4"):
    sinv = dec(s, 4, 3, 7, True)
    out = open(f"{T}/stdout_{tag}.txt").read()
    m = re.search(r"tensor scale (\S+) \(S_enc\)", out)
    if not m:
        print("no 'tensor scale ... (S_enc)' on stdout"); sys.exit(0)
    senc = np.float32(float.fromhex(m.group(1)))
    tinv = float(np.float32(1) / senc)
else:
    sinv = s.astype(np.float64)
    tinv = 1.0
full = np.repeat(np.repeat(sinv, br, axis=0), bc, axis=1)[:R, :C]
want = (val * full * tinv).astype(np.float32)
bad = []
if d.dtype != np.float32 or d.shape != q.shape:
    bad.append(f"dequant {d.dtype} {d.shape}")
else:
    same = (want.view(np.uint32) == d.view(np.uint32)) | (np.isnan(want) & np.isnan(d))
    if not same.all():
        i = np.argwhere(~same)[0]
        bad.append(f"{(~same).sum()} elements differ, first at {tuple(i)}: code {q[tuple(i)]:#x} "
                   f"dequant {d[tuple(i)]!r}, numpy {want[tuple(i)]!r}")
# current scaling: scale_inv = fp32(1 / fp32(fmax / amax)); the dequant is close to x
if recipe == "current":
    amax = np.float32(np.max(np.abs(x)))
    sc_ = np.float32(448) / amax
    si = np.float32(1) / sc_
    if s[0, 0] != si:
        bad.append(f"scale_inv {s[0,0]!r}, want fp32(1/fp32(448/amax)) = {si!r}")
err = np.abs(d.astype(np.float64) - x) / np.maximum(np.abs(x), 1e-30)
if fmt == "e4m3fn" and recipe in ("current", "block:1x128", "block:128x128", "mx") and np.median(err) > 0.07:
    bad.append(f"median relative error {np.median(err)} too large")
print("; ".join(bad) if bad else "OK")
EOF
    ) && [ "$out" = OK ]; then
      pass "quantize-tensor $r $f: dequant file == decode(code) * scale_inv from the files"
    else
      fail "quantize-tensor $r $f: dequant file == decode(code) * scale_inv from the files" "$out"
    fi
  }
  dequant_check current e4m3fn 130 300
  dequant_check current:row e4m3fn 1 300
  dequant_check delayed e4m3fn 130 300
  dequant_check block:1x128 e4m3fn 1 128
  dequant_check block:128x128 e4m3fn 128 128
  dequant_check mx e4m3fn 1 32
  dequant_check mx:col e4m3fn 32 1
  dequant_check mx:ocp e4m3fn 1 32
  dequant_check mx e2m1fn 1 32
  dequant_check nvfp4 e2m1fn 1 16
  dequant_check nvfp4:16x16 e2m1fn 16 16

  # the codes of a 1-D input (1 x n) and of an input with an inf and a NaN
  python3 -c "
import numpy as np
np.save('$T/vec.npy', np.array([1, -2, 0.5, 448, 3], np.float32))
np.save('$T/specials.npy', np.array([[1, np.inf], [np.nan, -3]], np.float32))"
  run quantize-tensor --in "$T/vec.npy" --format e4m3fn --scaling none --out "$T/vq.npy" --scales "$T/vs.npy"
  if [ "$rc" -eq 0 ] && out=$(python3 -c "
import numpy as np
q = np.load('$T/vq.npy'); s = np.load('$T/vs.npy')
ok = q.dtype == np.uint8 and q.size == 5 and list(q.ravel()) == [0x38, 0xc0, 0x30, 0x7e, 0x44] and s.size == 1 and s.ravel()[0] == 1
print('OK' if ok else f'codes {[hex(c) for c in q.ravel()]} shape {q.shape}, scales {s.ravel()} {s.shape}')") && [ "$out" = OK ]; then
    pass "quantize-tensor 1-D input, recipe none: codes 38 c0 30 7e 44, scale 1"
  else
    fail "quantize-tensor 1-D input, recipe none: codes 38 c0 30 7e 44, scale 1" "$(status_note)" "${out:-}" "stderr: $(errtext)"
  fi
  # delayed scaling's first step uses scale 1: |x| > 464 overflows e4m3fn.
  # Saturating (default): max codes 0x7e/0xfe; --saturate=none: NaN codes.
  # Either way the overflow share printed by --stats counts them.
  python3 -c "
import numpy as np
x = (np.random.default_rng(2).normal(size=(8, 64)) * 300).astype(np.float32)
np.save('$T/big.npy', x)
print(int(np.sum(np.abs(x) > 464)))" >"$T/nbig"
for sat in default none; do
  satopt=; [ "$sat" = none ] && satopt=--saturate=none
  run quantize-tensor --in "$T/big.npy" --format e4m3fn --scaling delayed $satopt \
    --out "$T/bq.npy" --dequant "$T/bd.npy" --stats
  pct=$(awk '$1 == "overflow" { print $2 }' "$T/out")
  if [ "$rc" -eq 0 ] && out=$(python3 - "$T" "$sat" "$pct" 2>&1 <<'EOF2'
import sys, numpy as np
T, sat, pct = sys.argv[1:4]
want = int(open(f"{T}/nbig").read())
q = np.load(f"{T}/bq.npy"); d = np.load(f"{T}/bd.npy")
x = np.load(f"{T}/big.npy")
bad = []
over = np.abs(x) > 464
code = 0x7f if sat == "none" else 0x7e
if not np.all((q[over] & 0x7f) == code):
    bad.append(f"codes of the {want} overflowing elements are not all {code:#x}")
if sat == "none" and np.isnan(d).sum() != want:
    bad.append(f"{np.isnan(d).sum()} NaN in dequant, want {want}")
if sat == "default" and (np.isnan(d).any() or np.abs(d).max() != 448):
    bad.append(f"saturating dequant: max |d| {np.abs(d).max()}, NaNs {np.isnan(d).sum()}")
try:
    p = float(pct)
except ValueError:
    p = -1
if abs(p - 100.0 * want / x.size) > 1e-4:
    bad.append(f"--stats overflow {pct} %, want {100.0 * want / x.size:.4f} %")
print("; ".join(bad) if bad else "OK")
EOF2
  ) && [ "$out" = OK ]; then
    pass "quantize-tensor delayed (scale 1) saturation $sat: overflow codes and --stats overflow %"
  else
    fail "quantize-tensor delayed (scale 1) saturation $sat: overflow codes and --stats overflow %" "$(status_note)" "${out:-}" "stderr: $(errtext)"
  fi
done
  run quantize-tensor --in "$T/specials.npy" --format e4m3fn --scaling current --stats
  if [ "$rc" -eq 0 ] && grep -q "overflow" "$T/out"; then
    pass "quantize-tensor --stats on a tensor with inf and NaN"
  else
    fail "quantize-tensor --stats on a tensor with inf and NaN" "$(status_note)" "stderr: $(errtext)"
  fi
else
  skip "dequant file == decode(code) * scale_inv" "numpy not available"
fi

# ---- whatif --------------------------------------------------------------------

W="$T/g_activation_130x300.npy"
run whatif --in "$W" --formats e4m3fn,e5m2,e3m4 --scaling current,mx
cp "$T/out" "$T/whatif.txt"
rows=$(awk '($1 == "e4m3fn" || $1 == "e5m2" || $1 == "e3m4") && ($2 == "current" || $2 == "mx") { print $1 "/" $2 }' "$T/whatif.txt" | sort -u | awk 'END { print NR }')
allrows=$(awk '($1 == "e4m3fn" || $1 == "e5m2" || $1 == "e3m4")' "$T/whatif.txt" | awk 'END { print NR }')
if [ "$rc" -eq 0 ] && [ "$rows" -eq 6 ] && [ "$allrows" -eq 6 ]; then
  pass "whatif 3 formats x 2 recipes prints 6 rows, one per pair"
else
  fail "whatif 3 formats x 2 recipes prints 6 rows, one per pair" "$(status_note), $rows distinct pairs, $allrows format rows" "stdout: $(outtext)" "stderr: $(errtext)"
fi
run whatif --in "$W" --formats e4m3fn,e5m2,e3m4 --scaling current,mx --csv
cp "$T/out" "$T/whatif.csv"
nl=$(nlines "$T/whatif.csv")
pairs=$(awk -F, 'NR > 1 { print $1 "/" $2 }' "$T/whatif.csv" | sort -u | awk 'END { print NR }')
nf=$(awk -F, 'NR == 1 { h = NF } NR > 1 && NF != h { bad++ } END { print bad + 0 }' "$T/whatif.csv")
if [ "$rc" -eq 0 ] && [ "$nl" -eq 7 ] && [ "$pairs" -eq 6 ] && [ "$nf" -eq 0 ] &&
   head -n 1 "$T/whatif.csv" | grep -q '^format,scaling,'; then
  pass "whatif --csv: header + 6 lines, one per pair, same field count"
else
  fail "whatif --csv: header + 6 lines, one per pair, same field count" "$(status_note), $nl lines, $pairs pairs, $nf ragged lines" "stdout: $(outtext)"
fi
run whatif --in "$W" --formats e4m3fn,e5m2,e3m4 --scaling current,mx --json
cp "$T/out" "$T/whatif.json"
if [ "$HAVE_PY" -eq 1 ]; then
  if [ "$rc" -eq 0 ] && out=$(python3 - "$T/whatif.json" 2>&1 <<'EOF'
import sys, json
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"does not parse: {e}"); sys.exit(0)
if not isinstance(j, list) or len(j) != 6 or not all(isinstance(o, dict) for o in j):
    print(f"want a list of 6 objects, got {type(j).__name__} of {len(j) if hasattr(j, '__len__') else '?'}"); sys.exit(0)
pairs = {(o.get("format"), o.get("scaling")) for o in j}
want = {(f, r) for f in ("e4m3fn", "e5m2", "e3m4") for r in ("current", "mx")}
keys = {"underflow_pct", "overflow_pct", "mse", "cosine", "snr_db", "max_rel_err"}
bad = []
if pairs != want: bad.append(f"pairs {sorted(pairs)}")
for o in j:
    if not keys <= set(o): bad.append(f"missing keys {keys - set(o)}")
print("; ".join(bad) if bad else "OK")
EOF
  ) && [ "$out" = OK ]; then
    pass "whatif --json parses: 6 objects, one per pair, with the statistics"
  else
    fail "whatif --json parses: 6 objects, one per pair, with the statistics" "$(status_note)" "${out:-}"
  fi
else
  skip "whatif --json parses" "python3 not available"
fi
if [ "$HAVE_NP" -eq 1 ] && [ -f "$T/whatif.json" ]; then
  # the whatif numbers for (e4m3fn, current) and (e4m3fn, mx) against numpy on
  # quantize-tensor's files
  if out=$(python3 - "$T" "$W" 2>&1 <<'EOF'
import sys, json, numpy as np
T, W = sys.argv[1:3]
j = {(o["format"], o["scaling"]): o for o in json.load(open(f"{T}/whatif.json"))}
x = np.load(W).astype(np.float64)
bad = []
for r in ("current", "mx"):
    tag = f"{r}_e4m3fn"
    q = np.load(f"{T}/q_{tag}.npy"); d = np.load(f"{T}/d_{tag}.npy").astype(np.float64)
    o = j[("e4m3fn", r)]
    under = 100 * np.mean((x != 0) & ((q & 0x7f) == 0))
    mse = np.mean((x - d) ** 2)
    cos = np.sum(x * d) / np.sqrt(np.sum(x * x) * np.sum(d * d))
    snr = 10 * np.log10(np.sum(x * x) / np.sum((x - d) ** 2))
    for name, g, w, tol in [("underflow_pct", o["underflow_pct"], under, 1e-6),
                            ("mse", o["mse"], mse, 1e-5), ("cosine", o["cosine"], cos, 1e-9),
                            ("snr_db", o["snr_db"], snr, 1e-5)]:
        if abs(g - w) > tol * max(1.0, abs(w)):
            bad.append(f"{r} {name} {g}, numpy {w}")
print("; ".join(bad) if bad else "OK")
EOF
  ) && [ "$out" = OK ]; then
    pass "whatif --json statistics agree with numpy on quantize-tensor's files"
  else
    fail "whatif --json statistics agree with numpy on quantize-tensor's files" "$out"
  fi
else
  skip "whatif --json statistics agree with numpy" "numpy not available"
fi
run whatif --in "$W" --formats 'e4m3,inf=none,nan=ones;e5m2'
r2=$(awk '$2 == "current"' "$T/out" | awk 'END { print NR }')
if [ "$rc" -eq 0 ] && [ "$r2" -eq 2 ]; then
  pass "whatif --formats with ';' and a long form: 2 rows, default recipe current"
else
  fail "whatif --formats with ';' and a long form: 2 rows, default recipe current" "$(status_note), $r2 rows" "stdout: $(outtext)" "stderr: $(errtext)"
fi
# recipe options and long-form formats contain commas: whatif still splits
# --scaling at recipe names, and --csv quotes such fields (RFC 4180) so
# that every row has the header's field count.
LF='e4m3,bias=11,inf=none,nan=ones'
run whatif --in "$W" --formats "e4m3fn;$LF" --scaling 'block:128x128,deepgemm,current'
r4=$(awk '$1 == "e4m3fn" || $1 == "'"$LF"'"' "$T/out" | awk 'END { print NR }')
if [ "$rc" -eq 0 ] && [ "$r4" -eq 4 ] && grep -q 'block:128x128,deepgemm' "$T/out"; then
  pass "whatif --scaling 'block:128x128,deepgemm,current' is 2 recipes (4 rows with 2 formats)"
else
  fail "whatif --scaling 'block:128x128,deepgemm,current' is 2 recipes (4 rows with 2 formats)" "$(status_note), $r4 rows" "stdout: $(outtext)" "stderr: $(errtext)"
fi
if [ "$HAVE_PY" -eq 1 ]; then
  run whatif --in "$W" --formats "e4m3fn;$LF" --scaling 'block:128x128,deepgemm,current' --csv
  if [ "$rc" -eq 0 ] && out=$(python3 - "$T/out" "$LF" 2>&1 <<'EOF2'
import sys, csv
rows = list(csv.reader(open(sys.argv[1], newline="")))
bad = []
if len(rows) != 5:
    bad.append(f"{len(rows)} csv records, want 5")
else:
    h = rows[0]
    for r in rows[1:]:
        if len(r) != len(h):
            bad.append(f"record of {len(r)} fields (header {len(h)}): {','.join(r)}")
    got = {(r[0], r[1]) for r in rows[1:] if len(r) >= 2}
    want = {(f, s) for f in ("e4m3fn", sys.argv[2]) for s in ("block:128x128,deepgemm", "current")}
    if got != want:
        bad.append(f"(format, scaling) pairs {sorted(got)}")
print("; ".join(bad[:3]) if bad else "OK")
EOF2
  ) && [ "$out" = OK ]; then
    pass "whatif --csv quotes fields with commas (recipe options, long-form formats)"
  else
    fail "whatif --csv quotes fields with commas (recipe options, long-form formats)" "$(status_note)" "${out:-}"
  fi
else
  skip "whatif --csv quotes fields with commas" "python3 not available"
fi
if [ "$HAVE_GNUPLOT" -eq 1 ]; then
  rm -f "$T/plot.png"
  run whatif --in "$W" --formats e4m3fn,e5m2,e3m4 --scaling current,mx --plot "$T/plot.png"
  magic=$(head -c 4 "$T/plot.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')
  if [ "$rc" -eq 0 ] && [ "$magic" = "89504e47" ]; then
    pass "whatif --plot writes a PNG"
  else
    fail "whatif --plot writes a PNG" "$(status_note), magic '$magic'" "stderr: $(errtext)"
  fi
else
  skip "whatif --plot writes a PNG" "gnuplot not installed"
fi

# ---- errors ----------------------------------------------------------------------

# err_case DESC NEEDLE ARGS...: status 2, exactly one line on stderr,
# containing NEEDLE.
err_case() {
  d=$1; needle=$2; shift 2
  run "$@"
  why=
  [ "$rc" -eq 2 ] || why="$why $(status_note) (want 2);"
  nl=$(nlines "$T/err")
  [ "$nl" -eq 1 ] || why="$why $nl stderr lines (want 1);"
  if [ -n "$needle" ] && ! grep -qF -e "$needle" "$T/err"; then
    why="$why message does not name '$needle';"
  fi
  if [ -z "$why" ]; then
    pass "$d"
  else
    fail "$d" "exmy $*:$why" "stderr: $(errtext)"
  fi
}

{ npyhdr '<i4' '(2, 2)'; printf '\001\000\000\000\002\000\000\000\003\000\000\000\004\000\000\000'; } >"$T/int32.npy"
E="$T/e.npy"
rm -f "$E"
err_case "quantize-tensor: unknown recipe" "bogus" \
  quantize-tensor --in "$X" --format e4m3fn --scaling bogus --out "$E"
err_case "quantize-tensor: bad recipe option" "frob" \
  quantize-tensor --in "$X" --format e4m3fn --scaling current:frob --out "$E"
err_case "quantize-tensor: bad block shape" "7x" \
  quantize-tensor --in "$X" --format e4m3fn --scaling block:7x --out "$E"
err_case "quantize-tensor: bad delayed option value" "abc" \
  quantize-tensor --in "$X" --format e4m3fn --scaling delayed:len=abc --out "$E"
err_case "quantize-tensor: bad mx option" "zz" \
  quantize-tensor --in "$X" --format e4m3fn --scaling mx:zz --stats
err_case "quantize-tensor: unknown format" "e9m9x" \
  quantize-tensor --in "$X" --format e9m9x --scaling current --out "$E"
err_case "quantize-tensor: missing --in" "--in" \
  quantize-tensor --format e4m3fn --scaling current --out "$E"
err_case "quantize-tensor: int32 .npy" "int32.npy" \
  quantize-tensor --in "$T/int32.npy" --format e4m3fn --scaling current --out "$E"
err_case "quantize-tensor: nonexistent file" "$T/nonexistent.npy" \
  quantize-tensor --in "$T/nonexistent.npy" --format e4m3fn --scaling current --out "$E"
err_case "quantize-tensor: --out in a nonexistent directory" "$T/nodir/q.npy" \
  quantize-tensor --in "$X" --format e4m3fn --scaling current --out "$T/nodir/q.npy"
err_case "quantize-tensor: bad --saturate" "bogus" \
  quantize-tensor --in "$X" --format e4m3fn --scaling current --saturate=bogus --out "$E"
err_case "quantize-tensor: bad --round" "bogus" \
  quantize-tensor --in "$X" --format e4m3fn --scaling current --round bogus --out "$E"
err_case "quantize-tensor: unknown option" "--bogus" \
  quantize-tensor --in "$X" --format e4m3fn --scaling current --bogus --out "$E"
if [ -e "$E" ]; then
  fail "no output file written after an error" "$E exists"
else
  pass "no output file written after an error"
fi
err_case "whatif: unknown format in --formats" "e9m9x" \
  whatif --in "$X" --formats e4m3fn,e9m9x
err_case "whatif: unknown recipe in --scaling" "bogus" \
  whatif --in "$X" --formats e4m3fn --scaling current,bogus
err_case "whatif: bad recipe option" "frob" \
  whatif --in "$X" --formats e4m3fn --scaling current:frob
err_case "whatif: bad --round" "bogus" whatif --in "$X" --formats e4m3fn --round bogus
err_case "whatif: --csv with --json" "--csv" whatif --in "$X" --formats e4m3fn --csv --json
err_case "whatif: missing --in" "--in" whatif --formats e4m3fn
err_case "whatif: int32 .npy" "int32.npy" whatif --in "$T/int32.npy" --formats e4m3fn
err_case "whatif: nonexistent file" "$T/nonexistent.npy" whatif --in "$T/nonexistent.npy" --formats e4m3fn
err_case "stats: missing --in" "--in" stats
err_case "stats: int32 .npy" "int32.npy" stats --in "$T/int32.npy"
if grep -Eq "i4|int32" "$T/err"; then
  pass "int32 .npy: the message names the dtype"
else
  fail "int32 .npy: the message names the dtype" "stderr: $(errtext)"
fi
err_case "stats: nonexistent file" "$T/nonexistent.npy" stats --in "$T/nonexistent.npy"
for sh in 12xq abc 0x5 3x4x 5 -3x4 ''; do
  err_case "gen: bad --shape '$sh'" "'$sh'" gen --out "$T/bad.npy" --shape "$sh"
done
err_case "gen: unknown --dist" "foo" gen --out "$T/bad.npy" --dist foo
err_case "gen: missing --out" "--out" gen --shape 3x4
if [ -e "$T/bad.npy" ]; then
  fail "gen writes nothing after an error" "$T/bad.npy exists"
else
  pass "gen writes nothing after an error"
fi

[ "$nskip" -gt 0 ] && echo "# $nskip checks skipped"
echo "test_tensor_cli: $n checks, $nfail failures"
[ "$nfail" -eq 0 ]
