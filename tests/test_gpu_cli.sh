#!/bin/sh
# test_gpu_cli.sh: the command-line contract of gpu-check and gpu-probe on
# any machine: --help, exit 77 with one line when there is no CUDA build or
# no GPU (a real run with a GPU is docs/gpu-crosscheck.md's job), the probe
# on the CPU model printing each preset back, and errors that exit 2 naming
# the bad text.  Prints `ok N - desc` / `not ok N - desc`.  Exit 0 or 1.

EXMY=${EXMY:-./exmy}
n=0
nfail=0
T=$(mktemp -d "${TMPDIR:-/tmp}/exmy_gpucli.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

check() { # desc, then the test command
  desc=$1; shift
  n=$((n + 1))
  if "$@"; then echo "ok $n - $desc"; else echo "not ok $n - $desc"; nfail=$((nfail + 1)); fi
}
status() { # want, cmd...: exit status equals want
  want=$1; shift
  "$@" >"$T/out" 2>"$T/err"; st=$?
  [ "$st" = "$want" ] || { echo "  status $st, want $want: $*"; cat "$T/err"; return 1; }
}
err_names() { # text, cmd...: exit 2, one stderr line naming text
  text=$1; shift
  status 2 "$@" || return 1
  [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q -- "$text" "$T/err" || { echo "  stderr: $(cat "$T/err")"; return 1; }
}

check "gpu-check --help" status 0 "$EXMY" gpu-check --help
check "gpu-check --help names --quick" grep -q -- "--quick" "$T/out"
check "gpu-probe --help" status 0 "$EXMY" gpu-probe --help
check "exmy --help lists gpu-check" sh -c "'$EXMY' --help | grep -q gpu-check"

# Without a GPU gpu-check skips (77, one line); with one it runs (0 or 1).
"$EXMY" gpu-check --quick --only probe >"$T/out" 2>"$T/err"; st=$?
if [ "$st" = 77 ]; then
  check "gpu-check without GPU: one line on stderr" test "$(wc -l <"$T/err")" -eq 1
  check "gpu-check without GPU: says skipped" grep -q "skipped" "$T/err"
  check "gpu-probe on the device without GPU: 77" status 77 "$EXMY" gpu-probe --engine lt
else
  check "gpu-check --quick --only probe on the device runs (status $st)" test "$st" = 0 -o "$st" = 1
fi

for p in hopper hopper-fastacc ada ada-fastacc blackwell; do
  "$EXMY" gpu-probe --engine "model:tc:$p" --quiet >"$T/p" 2>"$T/err"
  want=$(case $p in
    hopper) echo "tc:g=32,f=13,align=trunc,out=13,norm=trunc,promote=128";;
    hopper-fastacc) echo "tc:g=32,f=13,align=trunc,out=13,norm=trunc,promote=0";;
    ada) echo "tc:g=16,f=13,align=trunc,out=13,norm=trunc,promote=128";;
    ada-fastacc) echo "tc:g=16,f=13,align=trunc,out=13,norm=trunc,promote=0";;
    blackwell) echo "tc:g=32,f=25,align=trunc,out=23,norm=trunc,promote=0";;
  esac)
  check "gpu-probe recovers tc:$p" test "$(cat "$T/p")" = "$want"
done
check "gpu-probe on fp32 is incomplete (status 1)" status 1 "$EXMY" gpu-probe --engine model:fp32 --quiet
# the preset the result is (exmy_probe_match), or the nearest and where it differs
"$EXMY" gpu-probe --engine model:tc:ada >"$T/p" 2>"$T/err"
check "gpu-probe names the preset" grep -qx "preset: *tc:ada (bit for bit)" "$T/p"
"$EXMY" gpu-probe --engine model:tc:ada,f=12 >"$T/p" 2>"$T/err"
check "gpu-probe names the nearest preset" grep -qx "preset: *no preset matches; nearest tc:ada, differs in: f 12, preset 13" "$T/p"

check "bad engine named" err_names "warp" "$EXMY" gpu-probe --engine warp
check "bad model named" err_names "nosuch" "$EXMY" gpu-probe --engine model:tc:nosuch
check "bad format named" err_names "e9m9x" "$EXMY" gpu-probe --a e9m9x --engine model:tc
check "e5m2 x e5m2 on cuBLASLt rejected" err_names "e5m2 x e5m2" "$EXMY" gpu-probe --a e5m2 --b e5m2 --engine lt
check "bad --only part named" err_names "gemmm" "$EXMY" gpu-check --only gemmm
check "bad --model named" err_names "zz" "$EXMY" gpu-check --model tc:zz
check "unknown option named" err_names "--bogus" "$EXMY" gpu-check --bogus

echo "test_gpu_cli: $n checks, $nfail failures"
[ "$nfail" = 0 ]
