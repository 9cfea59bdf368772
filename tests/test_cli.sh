#!/bin/sh
# test_cli.sh: the contract of the `exmy` command line tool.
#
#   --help of the command and of each subcommand; formats, info, table;
#   quantize on text (decimal, hex-float, inf, -inf, nan; code width; blank
#   lines and comments; exact rounding from the text, overflow/underflow flags;
#   rounding modes, saturation, ftz, daz, sr) and on .npy tensors;
#   errors: bad format names, bad options, malformed numbers (with the line
#   number), bad .npy inputs and outputs each exit with status 2 and a
#   one-line message on stderr that names the bad text; never a crash.
#
# Run from the top build directory (make check) or anywhere with
# EXMY=/path/to/exmy.  Prints `ok N - desc` / `not ok N - desc` and ends with
# `test_cli: N checks, N failures`.  Exit 0 pass, 1 fail.

EXMY=${EXMY:-./cli/exmy}

n=0
nfail=0
T=$(mktemp -d "${TMPDIR:-/tmp}/exmy_cli.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
trap 'rm -rf "$T"; exit 1' HUP INT TERM

echo "test_cli: exmy $EXMY"
if [ ! -x "$EXMY" ]; then
  echo "not ok 1 - exmy binary not found or not executable: $EXMY"
  echo "test_cli: 1 checks, 1 failures"
  exit 1
fi

TO=
if command -v timeout >/dev/null 2>&1; then TO="timeout 60"; fi

pass() { n=$((n + 1)); echo "ok $n - $1"; }
fail() {
  n=$((n + 1)); nfail=$((nfail + 1))
  echo "not ok $n - $1"; shift
  for l in "$@"; do printf '#   %s\n' "$l"; done
}

# run INPUT ARGS...: run exmy with stdin = printf %b INPUT; sets rc and
# leaves stdout in $T/out, stderr in $T/err.
run() {
  printf '%b' "$1" >"$T/in"; shift
  $TO "$EXMY" "$@" <"$T/in" >"$T/out" 2>"$T/err"
  rc=$?
}

nlines() { awk 'END { print NR }' "$1"; }
# first tokens of every line of stdout, space separated
toks() { awk '{ printf "%s%s", (NR > 1 ? " " : ""), $1 }' "$T/out"; }
errtext() { head -n 3 "$T/err" | tr '\n' '|'; }

status_note() {
  if [ "$rc" -ge 128 ] || [ "$rc" -eq 124 ]; then
    echo "CRASH or timeout: status $rc"
  else
    echo "status $rc"
  fi
}

# ok_out DESC EXPECTED_FIRST_TOKENS INPUT ARGS...
ok_out() {
  d=$1; want=$2; inp=$3; shift 3
  run "$inp" "$@"
  got=$(toks)
  if [ "$rc" -eq 0 ] && [ "$got" = "$want" ]; then
    pass "$d"
  else
    fail "$d" "printf '$inp' | exmy $*: $(status_note), expected codes '$want', got '$got'" "stderr: $(errtext)"
  fi
}

# ok_out_re DESC ERE INPUT ARGS...: status 0 and first tokens match ^ERE$
ok_out_re() {
  d=$1; re=$2; inp=$3; shift 3
  run "$inp" "$@"
  got=$(toks)
  if [ "$rc" -eq 0 ] && printf '%s\n' "$got" | grep -Eq "^($re)\$"; then
    pass "$d"
  else
    fail "$d" "printf '$inp' | exmy $*: $(status_note), expected codes matching '$re', got '$got'" "stderr: $(errtext)"
  fi
}

# err_case DESC NEEDLE LINENO INPUT ARGS...: status 2, exactly one line on
# stderr, containing NEEDLE (if not empty) and the number LINENO as a word
# (if not empty).
err_case() {
  d=$1; needle=$2; ln=$3; inp=$4; shift 4
  run "$inp" "$@"
  why=
  [ "$rc" -eq 2 ] || why="$why $(status_note) (want 2);"
  nl=$(nlines "$T/err")
  [ "$nl" -eq 1 ] || why="$why $nl stderr lines (want 1);"
  if [ -n "$needle" ] && ! grep -qF -e "$needle" "$T/err"; then
    why="$why message does not name '$needle';"
  fi
  if [ -n "$ln" ] && ! grep -Eq "(^|[^0-9])$ln([^0-9]|\$)" "$T/err"; then
    why="$why message does not give line number $ln;"
  fi
  if [ -z "$why" ]; then
    pass "$d"
  else
    fail "$d" "printf '$inp' | exmy $*:$why" "stderr: $(errtext)"
  fi
}

# ---- help ----------------------------------------------------------------

help_case() {
  d=$1; shift
  run "" "$@"
  if [ "$rc" -eq 0 ] && grep -qi 'usage' "$T/out"; then
    pass "$d"
  else
    fail "$d" "$(status_note); want 0 and 'usage' on stdout" "stdout: $(head -n 2 "$T/out" | tr '\n' '|')" "stderr: $(errtext)"
  fi
}
help_case "exmy --help" --help
for sub in formats info table quantize; do
  help_case "exmy $sub --help" "$sub" --help
done
run "" quantize --help
if grep -q -e '--round' "$T/out" && grep -q -e '--saturate' "$T/out" &&
   grep -q -e '--in' "$T/out"; then
  pass "quantize --help lists --round, --saturate, --in"
else
  fail "quantize --help lists --round, --saturate, --in"
fi

# ---- formats, info, table --------------------------------------------------

run "" formats
missing=
for f in e4m3fn e5m2 e4m3fnuz e5m2fnuz e4m3b11fnuz e4m3 e3m4 e8m0fnu \
         e2m3fn e3m2fn e2m1fn bf16 f16 binary8p4se binary8p3se binary4p2sf; do
  grep -Eq "(^|[^[:alnum:]_])$f([^[:alnum:]_]|\$)" "$T/out" || missing="$missing $f"
done
if [ "$rc" -eq 0 ] && [ -z "$missing" ]; then
  pass "exmy formats lists the named formats"
else
  fail "exmy formats lists the named formats" "$(status_note), missing:$missing"
fi

# info_has DESC ERE ARGS...
info_has() {
  d=$1; re=$2; shift 2
  run "" "$@"
  if [ "$rc" -eq 0 ] && grep -Eq "$re" "$T/out"; then
    pass "$d"
  else
    fail "$d" "$(status_note), no match for /$re/ on stdout" "stderr: $(errtext)"
  fi
}
info_has "info e4m3fn shows max 448" '(^|[^0-9.])448([^0-9]|$)|0x1\.cp\+8' info e4m3fn
info_has "info e4m3fn prints the long form" 'inf=none' info e4m3fn
info_has "info e5m2 shows max 57344" '(^|[^0-9.])57344([^0-9]|$)|0x1\.cp\+15' info e5m2
info_has "info binary8p4se shows max 224" '(^|[^0-9.])224([^0-9]|$)|0x1\.cp\+7' info binary8p4se
info_has "info f64 (64 bits) shows +inf 0x7ff0000000000000" '0x7ff0000000000000' info f64
info_has "info f32 shows the NaN codes" '0x7f800001' info f32
info_has "info of a long form (e4m3,inf=none,nan=ones) shows 448" \
  '(^|[^0-9.])448([^0-9]|$)|0x1\.cp\+8' info 'e4m3,inf=none,nan=ones'

# table_count DESC N FORMAT
table_count() {
  run "" table "$3"
  c=$(grep -cE '^[[:space:]]*0x[0-9a-fA-F]+([[:space:],]|$)' "$T/out")
  if [ "$rc" -eq 0 ] && [ "$c" -eq "$2" ]; then
    pass "$1"
  else
    fail "$1" "$(status_note), $c code lines (want $2)" "stderr: $(errtext)"
  fi
}
table_count "table e2m1fn has 16 code lines" 16 e2m1fn
if grep -Eq '^[[:space:]]*0x0*7[[:space:],].*0x1\.8p\+2' "$T/out"; then
  pass "table e2m1fn: code 0x7 is 0x1.8p+2 (6)"
else
  fail "table e2m1fn: code 0x7 is 0x1.8p+2 (6)" "line: $(grep -E '^[[:space:]]*0x0*7[[:space:],]' "$T/out")"
fi
table_count "table e4m3fn has 256 code lines" 256 e4m3fn
table_count "table e8m3 has 4096 code lines" 4096 e8m3
table_count "table bf16 has 65536 code lines" 65536 bf16
err_case "table f32 (32 bits) is refused" "f32" "" "" table f32

# ---- quantize on text --------------------------------------------------------

ok_out "quantize e4m3fn 1 -> 0x38" "0x38" '1\n' quantize e4m3fn
run '1\n' quantize e4m3fn
if [ "$(awk 'NR == 1 { print NF }' "$T/out")" -ge 2 ] 2>/dev/null; then
  pass "quantize prints the code and the decoded value"
else
  fail "quantize prints the code and the decoded value" "stdout: $(head -n 1 "$T/out")"
fi
ok_out "quantize e8m3 1 -> 0x3f8 (3 hex digits)" "0x3f8" '1\n' quantize e8m3
ok_out "quantize bf16 -2 -> 0xc000 (4 hex digits)" "0xc000" '-2\n' quantize bf16
ok_out "quantize e2m1fn 6 -> 0x7 (1 hex digit)" "0x7" '6\n' quantize e2m1fn
ok_out "several lines" "0x38 0x40 0xb0 0x7e 0x00 0x80" \
  '1\n2\n-0.5\n448\n0\n-0\n' quantize e4m3fn
ok_out "last line without newline" "0x38 0x40" '1\n2' quantize e4m3fn
ok_out "empty input gives no output" "" '' quantize e4m3fn
ok_out "hex-float 0x1.8p+0 -> 0x3c" "0x3c" '0x1.8p+0\n' quantize e4m3fn
ok_out "hex-float 0x1p-9 -> 0x01 (min subnormal)" "0x01" '0x1p-9\n' quantize e4m3fn
ok_out "hex-float -0x1.cp+8 -> 0xfe" "0xfe" '-0x1.cp+8\n' quantize e4m3fn
ok_out "e4m3fn inf -> NaN 0x7f, -inf -> 0xff" "0x7f 0xff" 'inf\n-inf\n' quantize e4m3fn
ok_out_re "e4m3fn nan -> NaN" '0x7f|0xff' 'nan\n' quantize e4m3fn
ok_out "e5m2 inf -> 0x7c, -inf -> 0xfc" "0x7c 0xfc" 'inf\n-inf\n' quantize e5m2
ok_out_re "e5m2 nan -> NaN" '0x7[d-f]|0xf[d-f]' 'nan\n' quantize e5m2
ok_out_re "e4m3fnuz inf, nan -> 0x80" '0x80 0x80' 'inf\nnan\n' quantize e4m3fnuz
ok_out "e2m1fn nan -> +0, inf -> max" "0x0 0x7" 'nan\ninf\n' quantize e2m1fn
ok_out "e8m0fnu 1, 0.75, 2^-130 -> 0x7f 0x7f 0x00" "0x7f 0x7f 0x00" \
  '1\n0.75\n0x1p-130\n' quantize e8m0fnu
ok_out "e8m0fnu 0, -1 -> NaN 0xff" "0xff 0xff" '0\n-1\n' quantize e8m0fnu

# rounding modes on the tie 1.0625 (between 1 and 1.125) and -1.0625
for m in rne:0x38:0xb8 rna:0x39:0xb9 rtz:0x38:0xb8 rup:0x39:0xb8 \
         rdn:0x38:0xb9 rto:0x39:0xb9; do
  mode=${m%%:*}; rest=${m#*:}; p=${rest%%:*}; q=${rest#*:}
  ok_out "--round $mode on +-1.0625" "$p $q" '1.0625\n-1.0625\n' \
    quantize e4m3fn --round "$mode"
done
ok_out "--round rne on 1.0625000001 -> 0x39" "0x39" '1.0625000001\n' quantize e4m3fn
ok_out "overflow 500 -> NaN 0x7f (e4m3fn default)" "0x7f" '500\n' quantize e4m3fn
ok_out "464 -> 448 (rne tie at the top), 465 -> NaN" "0x7e 0x7f" '464\n465\n' quantize e4m3fn
ok_out "--round rtz 500 -> 448" "0x7e" '500\n' quantize e4m3fn --round rtz
ok_out "--saturate 500, inf, -inf -> +-448" "0x7e 0x7e 0xfe" '500\ninf\n-inf\n' \
  quantize e4m3fn --saturate
ok_out "--saturate=finite inf -> 0x7b (e5m2)" "0x7b" 'inf\n' quantize e5m2 --saturate=finite
ok_out "--saturate=propagate 1e6, inf -> 0x7b 0x7c (e5m2)" "0x7b 0x7c" '1e6\ninf\n' \
  quantize e5m2 --saturate=propagate
ok_out "e5m2 default 1e6 -> inf 0x7c" "0x7c" '1e6\n' quantize e5m2
ok_out "--ftz 2^-9, 2^-6 -> 0x00 0x08" "0x00 0x08" '0x1p-9\n0x1p-6\n' quantize e4m3fn --ftz
ok_out "--round rup 2^-1070 -> 0x01" "0x01" '0x1p-1070\n' quantize e4m3fn --round rup
ok_out "--daz --round rup 2^-1070 (double subnormal) -> 0x00" "0x00" '0x1p-1070\n' \
  quantize e4m3fn --daz --round rup

sr_in='1.0625\n1.0625\n1.0625\n1.0625\n1.0625\n1.0625\n1.0625\n1.0625\n1.0625\n1.0625\n1.0625\n1.0625\n1.0625\n1.0625\n1.0625\n1.0625\n'
run "$sr_in" quantize e4m3fn --round sr --seed 7
a=$(toks); rca=$rc
run "$sr_in" quantize e4m3fn --round sr --seed 7
b=$(toks)
if [ "$rca" -eq 0 ] && [ "$rc" -eq 0 ] && [ "$a" = "$b" ] &&
   printf '%s\n' "$a" | grep -Eq '^(0x3[89] ){15}0x3[89]$'; then
  pass "--round sr --seed 7: reproducible, codes 0x38/0x39"
else
  fail "--round sr --seed 7: reproducible, codes 0x38/0x39" "status $rca/$rc, '$a' vs '$b'" "stderr: $(errtext)"
fi
ok_out_re "--round sr --sr-bits 1 accepted" '0x3[89]' '1.0625\n' quantize e4m3fn --round sr --sr-bits 1
ok_out_re "--round sr --sr-bits 64 accepted" '0x3[89]' '1.0625\n' quantize e4m3fn --round sr --sr-bits 64
ok_out "--round sr on an exact value is exact" "0x38 0x40" '1\n2\n' quantize e4m3fn --round sr --seed 3

# ---- blank lines and comments; rounding from the text ---------------------------

ok_out "blank lines, blank-only lines and # comments are skipped" "0x38 0x40 0x44" \
  '1\n\n  \t\n# a comment\n2 # two\n   # indented comment\n3\n' quantize e4m3fn
sr_c='# SR counters count numbers, not lines\n1.0625\n\n1.0625 # x\n# y\n1.0625\n1.0625\n1.0625\n1.0625\n1.0625\n1.0625\n'
run "$sr_c" quantize e4m3fn --round sr --seed 11
a=$(toks)
run '1.0625\n1.0625\n1.0625\n1.0625\n1.0625\n1.0625\n1.0625\n1.0625\n' quantize e4m3fn --round sr --seed 11
b=$(toks)
if [ -n "$a" ] && [ "$a" = "$b" ] && [ "$(printf '%s\n' "$a" | wc -w)" -eq 8 ]; then
  pass "--round sr: skipped lines do not advance the element counter"
else
  fail "--round sr: skipped lines do not advance the element counter" "with comments '$a', without '$b'"
fi
# out_is DESC EXPECTED_STDOUT INPUT ARGS...: the whole of stdout, lines joined by |
out_is() {
  d=$1; want=$2; inp=$3; shift 3
  run "$inp" "$@"
  got=$(tr '\n' '|' <"$T/out")
  if [ "$rc" -eq 0 ] && [ "$got" = "$want" ]; then pass "$d"
  else fail "$d" "printf '$inp' | exmy $*: $(status_note), expected '$want', got '$got'" "stderr: $(errtext)"; fi
}
out_is "1e999 (beyond double) overflows with flags" "0x7f nan flags=inexact,overflow|" '1e999\n' quantize e4m3fn --flags
out_is "-1e99999999999999999999 (beyond MPFR's range) overflows" "0xfe -448 flags=inexact,overflow|" \
  '-1e99999999999999999999\n' quantize e4m3fn --flags --saturate
out_is "0x1p-2000 underflows with flags" "0x00 0 flags=inexact,underflow|" '0x1p-2000\n' quantize e4m3fn --flags
out_is "-1e-99999999999999999999 underflows to -0 with flags" "0x80 -0 flags=inexact,underflow|" \
  '-1e-99999999999999999999\n' quantize e4m3fn --flags
out_is "--round rup 0x1p-2000 -> min subnormal" "0x01 0.001953125 flags=inexact,underflow|" '0x1p-2000\n' \
  quantize e4m3fn --flags --round rup
out_is "1.06250000000000000001 (strtod: the tie 1.0625) -> 0x39" "0x39 1.125 flags=inexact|" \
  '1.06250000000000000001\n' quantize e4m3fn --flags
out_is "1.0625 (an exact tie) -> 0x38, 1.0625 - 1e-30 -> 0x38" "0x38 1|0x38 1|" \
  '1.0625\n1.062499999999999999999999999999\n' quantize e4m3fn
ok_out "1.0078125 + 1e-40 (bf16 tie, strtod lands on it) -> 0x3f81" "0x3f81" \
  '1.0078125000000000000000000000000000000001\n' quantize bf16
if command -v python3 >/dev/null 2>&1; then
  if python3 - "$EXMY" >"$T/py" 2>&1 <<'PYEOF'
# Independent oracle: exact rationals (fractions) against every finite code's
# exact value from `exmy table`; texts at, near (1e-18..1e-40 relative) and
# between midpoints, five modes, four formats.
import random, subprocess, sys
from fractions import Fraction
from decimal import Decimal, getcontext
getcontext().prec = 400
exmy = sys.argv[1]
random.seed(12345)
bad = total = 0
def dec(q):
    d = Decimal(q.numerator) / Decimal(q.denominator)
    assert Fraction(d) == q
    return format(d, 'f')
for fmt, sign_bit in (('e4m3fn', 0x80), ('e5m2', 0x80), ('e2m1fn', 0x8), ('e3m2fn', 0x20)):
    tab = subprocess.run([exmy, 'table', fmt], capture_output=True, text=True, check=True).stdout.split('\n')
    code_of = {}
    for line in tab:
        f = line.split()
        if len(f) == 4 and f[1] in ('zero', 'subnormal', 'normal'):
            v = Fraction(f[3]); c = int(f[0], 16)
            if v == 0 and c & sign_bit: continue
            code_of[v] = c
    vals = sorted(code_of)
    pos = [v for v in vals if v > 0]
    xs = []
    for _ in range(150):
        i = random.randrange(len(pos))
        a = pos[i - 1] if i else Fraction(0)
        b = pos[i]
        m = (a + b) / 2
        eps = Fraction(random.choice([1, 3, 7]), 10 ** random.choice([18, 25, 40])) * b
        x = random.choice([m, m + eps, m - eps, b, b - eps, a + eps])
        if x == 0: x = eps
        xs.append(x if random.random() < 0.5 else -x)
    for mode in ('rne', 'rna', 'rtz', 'rup', 'rdn'):
        want = []
        for x in xs:
            lo = max(v for v in vals if v <= x); hi = min(v for v in vals if v >= x)
            if lo == hi: r = lo
            elif mode == 'rtz': r = lo if x > 0 else hi
            elif mode == 'rup': r = hi
            elif mode == 'rdn': r = lo
            elif x - lo != hi - x: r = lo if x - lo < hi - x else hi
            elif mode == 'rna': r = hi if x > 0 else lo
            else: r = lo if code_of[abs(lo)] % 2 == 0 else hi
            c = code_of[abs(r)]
            if r < 0 or (r == 0 and x < 0): c |= sign_bit
            want.append(c)
        out = subprocess.run([exmy, 'quantize', fmt, '--round', mode], input=''.join(dec(x) + '\n' for x in xs),
                             capture_output=True, text=True)
        got = [int(l.split()[0], 16) for l in out.stdout.split('\n') if l]
        total += len(xs)
        if out.returncode or len(got) != len(xs):
            print('%s %s: status %d, %d lines' % (fmt, mode, out.returncode, len(got))); bad += 1; continue
        for x, w, g in zip(xs, want, got):
            if w != g:
                bad += 1
                if bad < 4: print('%s --round %s %s: want 0x%x, got 0x%x' % (fmt, mode, dec(x), w, g))
print('%d texts, %d wrong' % (total, bad))
sys.exit(1 if bad else 0)
PYEOF
  then pass "decimal texts round exactly (exact-rational oracle: $(tail -n 1 "$T/py"))"
  else fail "decimal texts round exactly (exact-rational oracle)" "$(head -n 4 "$T/py" | tr '\n' '|')"; fi
else
  echo "ok $((n + 1)) - exact-rational oracle # SKIP no python3"; n=$((n + 1))
fi

# ---- errors: formats ---------------------------------------------------------

for spec in 'e4m9x:e4m9x' 'e4m3fnx:e4m3fnx' 'e4m3,bias=abc:abc' \
            'e4m3,inf=bogus:bogus' 'e12m3:12' 'e4m60:60' 'e4m3,nan=ones,frob=1:frob'; do
  f=${spec%:*}; needle=${spec##*:}
  err_case "info '$f' is an error naming '$needle'" "$needle" "" "" info "$f"
  err_case "table '$f' is an error naming '$needle'" "$needle" "" "" table "$f"
  err_case "quantize '$f' is an error naming '$needle'" "$needle" "" '1\n' quantize "$f"
done
err_case "info '' (empty format name) is an error" "" "" "" info ''

# ---- errors: options and usage ---------------------------------------------

err_case "--round xyz" "xyz" "" '1\n' quantize e4m3fn --round xyz
err_case "--bogus" "bogus" "" '1\n' quantize e4m3fn --bogus
err_case "--seed abc" "abc" "" '1\n' quantize e4m3fn --round sr --seed abc
err_case "--seed -1" "-1" "" '1\n' quantize e4m3fn --round sr --seed -1
err_case "--seed 2^64" "18446744073709551616" "" '1\n' quantize e4m3fn --round sr --seed 18446744073709551616
err_case "--sr-bits 0" "0" "" '1\n' quantize e4m3fn --round sr --sr-bits 0
err_case "--sr-bits 65" "65" "" '1\n' quantize e4m3fn --round sr --sr-bits 65
err_case "--sr-bits 12x" "12x" "" '1\n' quantize e4m3fn --round sr --sr-bits 12x
err_case "--saturate=bogus" "bogus" "" '1\n' quantize e4m3fn --saturate=bogus
err_case "--round without a value" "round" "" '1\n' quantize e4m3fn --round
err_case "unknown subcommand frobnicate" "frobnicate" "" "" frobnicate
err_case "info with an extra argument" "extra" "" "" info e4m3fn extra
run "" info
if [ "$rc" -eq 2 ] && [ -s "$T/err" ]; then
  pass "info without a format: status 2, message on stderr"
else
  fail "info without a format: status 2, message on stderr" "$(status_note)"
fi
run "" quantize
if [ "$rc" -eq 2 ] && [ -s "$T/err" ]; then
  pass "quantize without a format: status 2, message on stderr"
else
  fail "quantize without a format: status 2, message on stderr" "$(status_note)"
fi
run ""
if [ "$rc" -eq 2 ] && [ -s "$T/err" ]; then
  pass "no arguments: status 2, message on stderr"
else
  fail "no arguments: status 2, message on stderr" "$(status_note)"
fi

# ---- errors: malformed numbers -------------------------------------------------

err_case "malformed '1.5x' on line 2" "1.5x" 2 '1\n1.5x\n3\n' quantize e4m3fn
err_case "malformed 'x' on line 5 (skipped lines still counted)" "'x'" 5 '1\n\n# c\n2 # two\nx\n' quantize e4m3fn
err_case "malformed 'abc' on line 3" "abc" 3 '1\n2\nabc\n' quantize e4m3fn
err_case "malformed '1.5x' on line 1" "1.5x" 1 '1.5x\n' quantize e4m3fn
err_case "malformed '0x' on line 1" "0x" 1 '0x\n' quantize e4m3fn
err_case "malformed '1e' on line 1" "1e" 1 '1e\n' quantize e4m3fn
err_case "malformed '0x1p' on line 1" "0x1p" 1 '0x1p\n' quantize e4m3fn
err_case "malformed '1 2' on line 1" "1 2" 1 '1 2\n' quantize e4m3fn
err_case "malformed binary garbage on line 1" "" 1 '\0377\0001\n' quantize e4m3fn

# no crash on very long or huge numbers (value or error, either is fine)
awk 'BEGIN { s = "1"; for (i = 0; i < 17; i++) s = s s; print s }' >"$T/long"
$TO "$EXMY" quantize e4m3fn <"$T/long" >"$T/out" 2>"$T/err"; rc=$?
if [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ]; then
  pass "a 131072-digit number: no crash (status $rc)"
else
  fail "a 131072-digit number: no crash" "$(status_note)"
fi
run '1e400\n-1e400\n1e-400\n' quantize e4m3fn
if [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ]; then
  pass "1e400, 1e-400: no crash (status $rc)"
else
  fail "1e400, 1e-400: no crash" "$(status_note)"
fi

# ---- quantize on .npy ----------------------------------------------------------

# npyhdr DESCR SHAPE: a version 1.0 header of 128 bytes
npyhdr() {
  printf '\223NUMPY\001\000\166\000'
  printf '%-117s\n' "{'descr': '$1', 'fortran_order': False, 'shape': $2, }"
}
hex() { od -An -tx1 -v | tr -d ' \n'; }

# valid float32 [1, 2, -0.5, 448]
{ npyhdr '<f4' '(4,)'
  printf '\000\000\200\077\000\000\000\100\000\000\000\277\000\000\340\103'; } >"$T/x.npy"
rm -f "$T/q.npy" "$T/d.npy"
run "" quantize e4m3fn --in "$T/x.npy" --out "$T/q.npy" --dequant "$T/d.npy"
got=$(tail -c 4 "$T/q.npy" 2>/dev/null | hex)
if [ "$rc" -eq 0 ] && [ "$got" = "3840b07e" ] &&
   head -c 128 "$T/q.npy" | grep -aq "u1'" &&
   head -c 128 "$T/q.npy" | grep -aq "(4,)"; then
  pass "--in f32 .npy -> uint8 codes 38 40 b0 7e, shape (4,)"
else
  fail "--in f32 .npy -> uint8 codes 38 40 b0 7e, shape (4,)" "$(status_note), codes '$got'" "header: $(head -c 128 "$T/q.npy" 2>/dev/null | tr -cd '[:print:]')" "stderr: $(errtext)"
fi
if [ "$(tail -c 16 "$T/d.npy" 2>/dev/null | hex)" = "$(tail -c 16 "$T/x.npy" | hex)" ] &&
   head -c 128 "$T/d.npy" | grep -aq "f4'"; then
  pass "--dequant of f32 input: float32, decoded values"
else
  fail "--dequant of f32 input: float32, decoded values" "got $(tail -c 16 "$T/d.npy" 2>/dev/null | hex)"
fi

# valid float64 [1, -2], shape (1, 2), to e8m3 (uint16 codes 0x3f8 0xc00)
{ npyhdr '<f8' '(1, 2)'
  printf '\000\000\000\000\000\000\360\077\000\000\000\000\000\000\000\300'; } >"$T/x64.npy"
rm -f "$T/q.npy" "$T/d.npy"
run "" quantize e8m3 --in "$T/x64.npy" --out "$T/q.npy" --dequant "$T/d.npy"
got=$(tail -c 4 "$T/q.npy" 2>/dev/null | hex)
if [ "$rc" -eq 0 ] && [ "$got" = "f803000c" ] &&
   head -c 128 "$T/q.npy" | grep -aq "u2'" &&
   head -c 128 "$T/q.npy" | grep -aq "(1, *2)"; then
  pass "--in f64 .npy -> uint16 codes 0x3f8 0xc00, shape (1, 2)"
else
  fail "--in f64 .npy -> uint16 codes 0x3f8 0xc00, shape (1, 2)" "$(status_note), bytes '$got'" "stderr: $(errtext)"
fi
if [ "$(tail -c 16 "$T/d.npy" 2>/dev/null | hex)" = "$(tail -c 16 "$T/x64.npy" | hex)" ] &&
   head -c 128 "$T/d.npy" | grep -aq "f8'"; then
  pass "--dequant of f64 input: float64, decoded values"
else
  fail "--dequant of f64 input: float64, decoded values" "got $(tail -c 16 "$T/d.npy" 2>/dev/null | hex)"
fi

# file errors: status 2, one line naming the file
file_err() {
  d=$1; f=$2; shift 2
  err_case "$d" "$f" "" "" quantize e4m3fn "$@"
}
{ npyhdr '<f4' '(4,)'; printf '\000\000\200\077\000\000\000\100'; } >"$T/trunc.npy"
file_err "--in truncated data" "$T/trunc.npy" --in "$T/trunc.npy" --out "$T/o1.npy"
{ printf '\223NUMPY\001\000\166\000'; printf "{'descr': '<f4', "; } >"$T/trunchdr.npy"
file_err "--in truncated header" "$T/trunchdr.npy" --in "$T/trunchdr.npy" --out "$T/o2.npy"
printf '\223NUM' >"$T/magic.npy"
file_err "--in truncated magic" "$T/magic.npy" --in "$T/magic.npy" --out "$T/o3.npy"
: >"$T/empty.npy"
file_err "--in empty file" "$T/empty.npy" --in "$T/empty.npy" --out "$T/o4.npy"
{ npyhdr '<i4' '(2,)'; printf '\001\000\000\000\002\000\000\000'; } >"$T/int32.npy"
file_err "--in int32 .npy" "$T/int32.npy" --in "$T/int32.npy" --out "$T/o5.npy"
{ npyhdr '|u1' '(2,)'; printf '\001\002'; } >"$T/codes.npy"
file_err "--in uint8 .npy (codes, not a float tensor)" "$T/codes.npy" --in "$T/codes.npy" --out "$T/o9.npy"
if grep -Eq 'uint8|u1' "$T/err"; then
  pass "--in uint8 .npy: the message names the dtype uint8"
else
  fail "--in uint8 .npy: the message names the dtype uint8" "stderr: $(errtext)"
fi
{ npyhdr '<f4' '(4611686018427387904,)'; printf '\000\000\200\077'; } >"$T/huge.npy"
file_err "--in absurd shape (2^62 elements)" "$T/huge.npy" --in "$T/huge.npy" --out "$T/o6.npy"
file_err "--in nonexistent file" "$T/nonexistent.npy" --in "$T/nonexistent.npy" --out "$T/o7.npy"
file_err "--in a directory" "$T" --in "$T" --out "$T/o8.npy"
file_err "--out in a nonexistent directory" "$T/nodir/q.npy" --in "$T/x.npy" --out "$T/nodir/q.npy"
if [ -e "$T/o1.npy" ] || [ -e "$T/o5.npy" ]; then
  fail "no output file written after an input error"
else
  pass "no output file written after an input error"
fi

echo "test_cli: $n checks, $nfail failures"
[ "$nfail" -eq 0 ]
