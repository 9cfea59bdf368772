#!/bin/sh
# test_gemm_cli.sh: the contract of `exmy gemm`:
#   --out writes D (float32 for f32, codes otherwise) of op(A) op(B)'s shape;
#   --compare prints one row per model and exact is 0 ulp from itself;
#   --threads 1 and 2 give identical files; the Hopper tensor-core signature
#   (A = B = 1/16, k = 32768: tc:hopper-fastacc stalls at 64, exact gives 128,
#   tc:hopper with promotion every 128 gives 128) when python3 + numpy are
#   there to write the inputs; errors (unknown model, bad tc key, inner
#   dimensions that differ, mx groups along n on B, missing --a, bad --alpha)
#   exit 2 with a one-line message naming the bad text.
# Prints `ok N - desc` / `not ok N - desc`; ends `test_gemm_cli: N checks, N failures`.

NAME=test_gemm_cli
. "${srcdir:-.}/tests/cli_harness.sh"

run gemm --help
if [ "$rc" -eq 0 ] && grep -q usage "$T/out"; then pass "gemm --help"; else fail "gemm --help" "status $rc"; fi

"$EXMY" gen --out "$T/a.npy" --shape 24x200 --seed 1 >/dev/null 2>&1
"$EXMY" gen --out "$T/b.npy" --shape 200x40 --seed 2 --dist normal >/dev/null 2>&1
"$EXMY" gen --out "$T/bt.npy" --shape 40x200 --seed 3 --dist normal >/dev/null 2>&1

run gemm --a "$T/a.npy" --b "$T/b.npy" --accum tc --out "$T/d.npy"
check_ok "gemm --accum tc --out"
if npy_is "$T/d.npy" f4 24 40; then pass "D is float32 24 x 40"; else fail "D is float32 24 x 40" "$(head -c 120 "$T/d.npy" | tr -cd '[:print:]')"; fi
if grep -q "accumulation tc:hopper" "$T/out"; then pass "summary names the model"; else fail "summary names the model" "$(txt "$T/out")"; fi

run gemm --a "$T/a.npy" --b "$T/b.npy" --out-format e4m3fn --out-saturate --scale-d 0.5 --accum exact --out "$T/d8.npy"
check_ok "gemm --out-format e4m3fn --accum exact"
if npy_is "$T/d8.npy" u1 24 40; then pass "D codes are uint8 24 x 40"; else fail "D codes are uint8 24 x 40"; fi

run gemm --a "$T/a.npy" --b "$T/bt.npy" --trans-b --scaling mx --format-a e4m3fn --format-b e5m2 \
  --compare "exact,fp32,fp32:pairwise,acc=bf16,round=sr,seed=1,chunk=32,inner=acc=f16,tc:blackwell"
check_ok "gemm --compare with mx and trans-b"
if [ "$(grep -c '^exact ' "$T/out")" -eq 1 ] && grep -Eq '^exact +0 +0\.000e\+00 +0\.000e\+00 +0\.0000' "$T/out"; then pass "exact row: 0 ulp, 0 differ"
else fail "exact row: 0 ulp, 0 differ" "$(grep '^exact' "$T/out")"; fi
if [ "$(grep -Ec '^(exact|fp32|acc=|chunk=|tc:)' "$T/out")" -eq 6 ]; then pass "one row per model"; else fail "one row per model" "$(cat "$T/out" | tr '\n' '|')"; fi

for t in 1 2; do
  run gemm --a "$T/a.npy" --b "$T/b.npy" --accum "chunk=16,inner=acc=bf16,round=sr,seed=5" --threads $t --out "$T/t$t.npy"
done
if cmp -s "$T/t1.npy" "$T/t2.npy"; then pass "threads 1 and 2 give the same D"; else fail "threads 1 and 2 give the same D"; fi

if command -v python3 >/dev/null 2>&1 && python3 -c 'import numpy' >/dev/null 2>&1; then
  python3 - "$T" <<'PY'
import sys, numpy as np
t = sys.argv[1]
np.save(t + "/a16.npy", np.full((2, 32768), 1 / 16, np.float32))
np.save(t + "/b16.npy", np.full((32768, 3), 1 / 16, np.float32))
PY
  for m in exact tc:hopper-fastacc tc:hopper fp32; do
    run gemm --a "$T/a16.npy" --b "$T/b16.npy" --scaling none --accum "$m" --out "$T/s.npy"
    v=$(python3 -c "import numpy as np; d = np.load('$T/s.npy'); print(float(d.min()), float(d.max()))")
    case $m in tc:hopper-fastacc) want="64.0 64.0";; *) want="128.0 128.0";; esac
    if [ "$v" = "$want" ]; then pass "1/16 x 1/16, k 32768, $m: $want"; else fail "1/16 x 1/16, k 32768, $m" "got $v want $want"; fi
  done
else
  skip "tensor-core stall signature" "python3 with numpy not found"
fi

run gemm --a "$T/a.npy" --b "$T/b.npy" --accum tc:volta --out "$T/x.npy"
check_err "unknown tc preset" "volta"
run gemm --a "$T/a.npy" --b "$T/b.npy" --accum "tc:hopper,q=3" --out "$T/x.npy"
check_err "unknown tc key" "'q'"
run gemm --a "$T/a.npy" --b "$T/b.npy" --accum fp64 --out "$T/x.npy"
check_err "unknown model" "fp64"
run gemm --a "$T/a.npy" --b "$T/a.npy" --out "$T/x.npy"
check_err "inner dimensions differ" "inner dimensions"
run gemm --a "$T/a.npy" --b "$T/b.npy" --scaling mx --out "$T/x.npy"
check_err "mx groups along n on B" "mx:col"
run gemm --b "$T/b.npy" --out "$T/x.npy"
check_err "missing --a" "\-\-a"
run gemm --a "$T/a.npy" --b "$T/b.npy" --alpha 1.5x --out "$T/x.npy"
check_err "bad --alpha" "1.5x"

finish
