#!/bin/sh
# test_mma_replay.sh: exmy mma --replay over every set of tensor-core outputs
# recorded on H100, H200, Ada and B200 GPUs (Khattak & Mikaitis, BSD-2; vendored in
# tests/data/tensorcore): every set agrees 5000 of 5000.
EXMY=${EXMY:-./exmy}
DATA=${srcdir:-.}/tests/data/tensorcore
command -v xz >/dev/null 2>&1 || { echo "test_mma_replay: skipped: xz not found"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
# GPU FORMAT D-FILE INSTR EXPECTED-AGREE [OPTIONS]
check() {
  gpu=$1 fmt=$2 dfile=$3 instr=$4 want=$5
  shift 5
  abg=${ab:-$gpu} # B200 was recorded with the H100 inputs (tests/data/tensorcore/README.md)
  for x in $abg/$fmt/a_${abg}_${fmt} $abg/$fmt/b_${abg}_${fmt} $gpu/$fmt/c_${gpu}_fp32 $gpu/$fmt/$dfile; do
    xz -dc "$DATA/$x.txt.xz" > "$tmp/${x##*/}.txt" || { echo "FAIL: cannot read $DATA/$x.txt.xz"; fail=1; return; }
  done
  out=$("$EXMY" mma "$instr" "$@" --show 3 --replay "$tmp/a_${abg}_${fmt}.txt" "$tmp/b_${abg}_${fmt}.txt" \
        "$tmp/c_${gpu}_fp32.txt" "$tmp/$dfile.txt" 2>&1)
  status=$?
  last=$(printf '%s\n' "$out" | tail -n 1)
  want_status=0
  [ "$want" = 5000 ] || want_status=1
  if [ "$last" = "$want of 5000 agree" ] && [ $status = $want_status ]; then
    echo "ok: $gpu $fmt $dfile $instr $*: $last"
  else
    echo "FAIL: $gpu $fmt $dfile $instr $*: expected '$want of 5000 agree' (exit $want_status), got exit $status:"
    printf '%s\n' "$out"
    fail=1
  fi
  rm -f "$tmp"/*.txt
}
for g in H100 H200; do
  # FP8 with fp32 output was recorded with C = 0 (the block sum alone)
  check $g E4M3 d_${g}_fp32 sm_90:wgmma.f32.e4m3.e4m3 5000 --c-zero
  check $g E5M2 d_${g}_fp32 sm_90:wgmma.f32.e5m2.e5m2 5000 --c-zero
  check $g bf16 d_${g}_fp32 sm_90:wgmma.f32.bf16.bf16 5000
  check $g fp16 d_${g}_fp32 sm_90:wgmma.f32.f16.f16 5000
  check $g fp16 d_${g}_fp16 sm_90:wgmma.f16.f16.f16 5000 --c-round
  check $g tf32 d_${g}_fp32 sm_90:mma.m16n8k4.f32.tf32.tf32 5000
done
check Ada E4M3 d_Ada_fp32 sm_89:mma.m16n8k32.f32.e4m3.e4m3 5000
check Ada E5M2 d_Ada_fp32 sm_89:mma.m16n8k32.f32.e5m2.e5m2 5000
check Ada E4M3 d_Ada_fp16 sm_89:mma.m16n8k32.f16.e4m3.e4m3 5000 --c-round
check Ada E5M2 d_Ada_fp16 sm_89:mma.m16n8k32.f16.e5m2.e5m2 5000 --c-round
check Ada bf16 d_Ada_fp32 sm_89:mma.m16n8k8.f32.bf16.bf16 5000
check Ada fp16 d_Ada_fp32 sm_89:mma.m16n8k8.f32.f16.f16 5000
check Ada fp16 d_Ada_fp16 sm_89:mma.m16n8k8.f16.f16.f16 5000 --c-round
check Ada tf32 d_Ada_fp32 sm_89:mma.m16n8k4.f32.tf32.tf32 5000
# Hopper FP8 with fp16 output: recorded with mma.sync.m16n8k32 (the published
# mma_fp8_output_fp16.cu), which sm_90 computes as two f16 mma sums and a
# final add of C (hopper-fp8-f16-mma, docs/mma.md)
for g in H100 H200; do
  check $g E4M3 d_${g}_fp16 sm_90:mma.m16n8k32.f16.e4m3.e4m3 5000 --c-round
  check $g E5M2 d_${g}_fp16 sm_90:mma.m16n8k32.f16.e5m2.e5m2 5000 --c-round
done
# B200 (sm_100) FP8 mma.sync, the published mma_fp8_output_fp32.cu and
# mma_fp8_output_fp16.cu: f16 pieces, then C added last (docs/mma.md)
ab=H100
check B200 E4M3 d_B200_fp32 sm_100:mma.m16n8k32.f32.e4m3.e4m3 5000
check B200 E4M3 d_B200_fp16 sm_100:mma.m16n8k32.f16.e4m3.e4m3 5000 --c-round
ab=
# The 4 E5M2 lines whose exact A*B is not an fp32 value (1702, 3936, 4612,
# 4791): the only recorded lines that tell C added last from one fused sum
# rounded to nearest.  C and D are those lines of the B200 files.
for x in a b; do
  xz -dc "$DATA/H100/E5M2/${x}_H100_E5M2.txt.xz" | sed -n '1702p;3936p;4612p;4791p' > "$tmp/$x.txt"
done
out=$("$EXMY" mma sm_100:mma.m16n8k32.f32.e5m2.e5m2 --show 4 --replay "$tmp/a.txt" "$tmp/b.txt" \
      "$DATA/B200/E5M2/c_B200_fp32.lines.txt" "$DATA/B200/E5M2/d_B200_fp32.lines.txt" 2>&1)
status=$?
if [ "$(printf '%s\n' "$out" | tail -n 1)" = "4 of 4 agree" ] && [ $status = 0 ]; then
  echo "ok: B200 E5M2 lines 1702 3936 4612 4791 sm_100:mma.m16n8k32.f32.e5m2.e5m2: 4 of 4 agree"
else
  echo "FAIL: B200 E5M2 lines 1702 3936 4612 4791 sm_100:mma.m16n8k32.f32.e5m2.e5m2: expected '4 of 4 agree', got exit $status:"
  printf '%s\n' "$out"
  fail=1
fi
exit $fail
