#!/bin/sh
# test_train_cli.sh: the contract of `exmy train`:
#   --help lists the keys; --print-config output loads back to itself;
#   a config file plus flags runs, writes loss.csv (one row per step),
#   summary.json, stats.csv/jsonl, the dumped operands (.npy) and a checkpoint;
#   --stop_after + --resume continues to the same losses as one run;
#   bad keys, values, files and layer names exit 2 (layer names checked on the
#   model before step 0; 1 only for a failure while running) with one line
#   naming them.
NAME=test_train_cli
. "${srcdir:-.}/tests/cli_harness.sh"

TINY="--n_layer 1 --d_model 16 --n_head 2 --seq_len 8 --batch 4 --steps 6 --eval_batches 1 --progress 0"

run train --help
if [ "$rc" -eq 0 ] && grep -q "check_every" "$T/out" && grep -q "layer.NAME" "$T/out"; then pass "--help lists the keys"
else fail "--help lists the keys" "status $rc"; fi

cat >"$T/run.cfg" <<'CFG'
# a tiny run
model = gpt
n_layer = 1
prec = hybrid; recipe=delayed:len=4; accum.fprop=tc:hopper-fastacc
layer.last = bf16
steps = 6
CFG
run train "$T/run.cfg" --d_model 16 --n_head 2 --seq-len 8 --batch 4 --print-config
if [ "$rc" -eq 0 ] && grep -q "^d_model = 16$" "$T/out" && grep -q "^seq_len = 8$" "$T/out" &&
   grep -q "^layer.last = bf16$" "$T/out" && grep -q "^prec = hybrid; recipe=delayed:len=4; accum.fprop=tc:hopper-fastacc$" "$T/out"
then pass "config file + flags (--seq-len = --seq_len)"; else fail "config file + flags" "$(txt "$T/out")" "$(txt "$T/err")"; fi
cp "$T/out" "$T/printed.cfg"
run train "$T/printed.cfg" --print-config
if [ "$rc" -eq 0 ] && cmp -s "$T/out" "$T/printed.cfg"; then pass "--print-config reads back to itself"
else fail "--print-config reads back to itself" "$(diff "$T/out" "$T/printed.cfg" | head -3 | tr '\n' '|')"; fi

run train $TINY --prec hybrid --stats_every 2 --out_dir "$T/r1" --dump_layers first --dump_step 3 --ckpt "$T/r1.ckpt"
check_ok "a tiny hybrid run"
rows=$(awk 'END{print NR}' "$T/r1/loss.csv" 2>/dev/null)
if [ "$rows" = 7 ] && head -n 1 "$T/r1/loss.csv" | grep -q "^step,loss,lr,grad_norm,mode,spike$"; then pass "loss.csv: header + 6 rows"
else fail "loss.csv: header + 6 rows" "rows $rows"; fi
if grep -q '"steps_done": 6' "$T/r1/summary.json" 2>/dev/null && grep -q '"config"' "$T/r1/summary.json"; then pass "summary.json"
else fail "summary.json" "$(txt "$T/r1/summary.json")"; fi
# 3 collected steps (0 2 4) x 4 linears (h0.qkv h0.proj h0.fc h0.fc2 lm_head = 5) x 6 operands
srows=$(awk 'END{print NR}' "$T/r1/stats.csv" 2>/dev/null)
jrows=$(awk 'END{print NR}' "$T/r1/stats.jsonl" 2>/dev/null)
if [ "$srows" = 91 ] && [ "$jrows" = 90 ] && grep -q 'h0.fc2,fprop,input,e4m3fn,"current"' "$T/r1/stats.csv"; then
  pass "stats.csv / stats.jsonl: 3 steps x 5 layers x 6 operands"
else fail "stats.csv / stats.jsonl" "rows $srows $jrows"; fi
if npy_is "$T/r1/dump/step3.h0.qkv.fprop.A.npy" f4 32 16 && npy_is "$T/r1/dump/step3.h0.qkv.fprop.A.codes.npy" u1 32 16 &&
   npy_is "$T/r1/dump/step3.h0.qkv.wgrad.B.npy" f4 32 16; then pass "dump of the first layer's operands"
else fail "dump of the first layer's operands" "$(ls "$T/r1/dump" 2>/dev/null | head -4 | tr '\n' ' ')"; fi
if [ -s "$T/r1.ckpt" ] && ! ls "$T"/r1.ckpt.tmp* >/dev/null 2>&1; then pass "checkpoint written, no .tmp left"; else fail "checkpoint"; fi

# interrupted + resumed = one run
run train $TINY --prec "hybrid;round.grad=sr" --out_dir "$T/full"
run train $TINY --prec "hybrid;round.grad=sr" --out_dir "$T/part" --stop_after 3 --ckpt "$T/part.ckpt"
run train $TINY --prec "hybrid;round.grad=sr" --out_dir "$T/part" --resume "$T/part.ckpt"
if [ "$rc" -eq 0 ] && cmp -s "$T/full/loss.csv" "$T/part/loss.csv"; then pass "stop_after 3 + resume = one run (loss.csv identical)"
else fail "stop_after + resume" "$(diff "$T/full/loss.csv" "$T/part/loss.csv" | head -4 | tr '\n' '|')"; fi
run train $TINY --prec "hybrid;round.grad=sr" --out_dir "$T/cont" --resume "$T/part.ckpt"
if [ "$rc" -eq 0 ] && head -n 1 "$T/cont/loss.csv" | grep -q "^step,loss" && [ "$(awk 'END{print NR}' "$T/cont/loss.csv")" = 4 ]
then pass "resume into a new out_dir: header + the 3 remaining steps"; else fail "resume into a new out_dir" "$(txt "$T/cont/loss.csv")"; fi
run train $TINY --prec "hybrid;round.grad=sr" --out_dir "$T/t1" --threads 1
run train $TINY --prec "hybrid;round.grad=sr" --out_dir "$T/t2" --threads 2
if cmp -s "$T/t1/loss.csv" "$T/t2/loss.csv" && cmp -s "$T/t1/loss.csv" "$T/full/loss.csv"; then pass "threads 1 and 2: identical loss.csv"
else fail "threads 1 and 2: identical loss.csv"; fi
# outlier metrics: SwiGLU + RMSNorm with both controls, every 2 steps, the same bits at 1 and 2 threads
O="--swiglu 1 --rmsnorm 1 --qk_layernorm 1 --z_loss 1e-4 --outliers_every 2"
run train $TINY $O --prec hybrid --out_dir "$T/o1" --threads 1
run train $TINY $O --prec hybrid --out_dir "$T/o2" --threads 2
cols=$(head -n 1 "$T/o1/outliers.csv" 2>/dev/null | tr ',' '\n' | wc -l)
orows=$(awk 'END{print NR}' "$T/o1/outliers.csv" 2>/dev/null)
if [ "$rc" -eq 0 ] && cmp -s "$T/o1/outliers.csv" "$T/o2/outliers.csv" && [ "$cols" = 17 ] && [ "$orows" = 4 ] &&
   head -n 1 "$T/o1/outliers.csv" | grep -q "^step,lse_mean,lse_max,head_in_amax,head_in_rms,h0.logit_max,h0.kurtosis,"
then pass "outliers.csv: steps 0 2 4 x 17 columns, identical at threads 1 and 2"
else fail "outliers.csv at threads 1 and 2" "cols $cols rows $orows" "$(diff "$T/o1/outliers.csv" "$T/o2/outliers.csv" | head -2 | tr '\n' '|')"; fi
run train $TINY --model mlp --outliers_every 2
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "^exmy: train: outliers_every: model mlp has no outlier metrics" "$T/err"
then pass "outliers_every on the mlp: exit 2, one line"
else fail "outliers_every on the mlp: exit 2, one line" "status $rc" "$(txt "$T/err")"; fi

printf 'hello world, this is a tiny text file for the data option. ' >"$T/text.txt"
for i in 1 2 3 4 5 6; do cat "$T/text.txt" "$T/text.txt" >"$T/t2.txt"; mv "$T/t2.txt" "$T/text.txt"; done
run train $TINY --data "$T/text.txt"
if [ "$rc" -eq 0 ] && grep -q "^loss" "$T/out"; then pass "--data FILE"; else fail "--data FILE" "$(txt "$T/err")"; fi

# simulated ranks (allreduce_ranks) and MS-AMP O1 as published (msamp = 3):
# one rank without MS-AMP is today's run bit for bit (loss.csv and the
# checkpoint); 4 ranks with the FP8 all-reduce give the same bits on 1 and 2
# threads, and differ from one rank
run train $TINY --out_dir "$T/ar0" --ckpt "$T/ar0.ckpt"
run train $TINY --allreduce_ranks 1 --out_dir "$T/ar1" --ckpt "$T/ar1.ckpt"
if [ "$rc" -eq 0 ] && cmp -s "$T/ar0/loss.csv" "$T/ar1/loss.csv" && cmp -s "$T/ar0.ckpt" "$T/ar1.ckpt"; then
  pass "allreduce_ranks = 1: loss.csv and the checkpoint byte-identical to a run without the key"
else fail "allreduce_ranks = 1: byte-identical to a run without the key" "status $rc" "$(diff "$T/ar0/loss.csv" "$T/ar1/loss.csv" | head -n 3 | tr '\n' '|')"; fi
# the same run's files from the engine before allreduce_ranks and msamp = 3
# existed (commit adf5a45; POSIX cksum): fp32, and HYBRID with msamp = 1
ck() { cksum <"$1" | awk '{print $1 "/" $2}'; }
run train $TINY --msamp 1 --prec hybrid --allreduce_ranks 1 --out_dir "$T/arm" --ckpt "$T/arm.ckpt"
if [ "$(ck "$T/ar1/loss.csv") $(ck "$T/ar1.ckpt") $(ck "$T/arm/loss.csv") $(ck "$T/arm.ckpt")" = \
     "1134883060/274 2883015120/59983 310957669/271 2715749350/59985" ]; then
  pass "allreduce_ranks = 1 (fp32; hybrid msamp = 1): loss.csv and checkpoint as the engine before the key (cksum)"
else fail "allreduce_ranks = 1: loss.csv and checkpoint as the engine before the key" "$(ck "$T/ar1/loss.csv") $(ck "$T/ar1.ckpt") $(ck "$T/arm/loss.csv") $(ck "$T/arm.ckpt")"; fi
run train $TINY --prec hybrid --msamp 3 --allreduce_ranks 4 --out_dir "$T/ms1" --threads 1
run train $TINY --prec hybrid --msamp 3 --allreduce_ranks 4 --out_dir "$T/ms2" --threads 2
run train $TINY --prec hybrid --msamp 3 --out_dir "$T/ms3"
if [ "$rc" -eq 0 ] && [ -s "$T/ms1/loss.csv" ] && cmp -s "$T/ms1/loss.csv" "$T/ms2/loss.csv" && ! cmp -s "$T/ms1/loss.csv" "$T/ms3/loss.csv"; then
  pass "msamp = 3, allreduce_ranks = 4: the same loss.csv on 1 and 2 threads (and not one rank's)"
else fail "msamp = 3, allreduce_ranks = 4: the same loss.csv on 1 and 2 threads" "status $rc"; fi
run train $TINY --amp msamp-o1 --allreduce_ranks 2 --out_dir "$T/msf" --ckpt "$T/msf.ckpt"
run train $TINY --amp msamp-o1 --allreduce_ranks 2 --out_dir "$T/msp" --ckpt "$T/msp.ckpt" --stop_after 3
run train $TINY --amp msamp-o1 --allreduce_ranks 2 --out_dir "$T/msp" --ckpt "$T/msp.ckpt" --resume "$T/msp.ckpt"
if [ "$rc" -eq 0 ] && [ -s "$T/msf.ckpt" ] && cmp -s "$T/msf/loss.csv" "$T/msp/loss.csv" && cmp -s "$T/msf.ckpt" "$T/msp.ckpt"; then
  pass "amp = msamp-o1, 2 ranks: stop after 3 steps and resume gives the uninterrupted loss.csv and checkpoint"
else fail "amp = msamp-o1, 2 ranks: stop and resume" "status $rc"; fi
run train --amp msamp-o1 --print-config
if [ "$rc" -eq 0 ] && grep -q '^prec = hybrid$' "$T/out" && grep -q '^msamp = 3$' "$T/out"; then pass "amp = msamp-o1 sets prec = hybrid, msamp = 3"
else fail "amp = msamp-o1 sets prec = hybrid, msamp = 3" "status $rc"; fi
run train --amp msamp-o9
check_err "unknown amp setup (exit 2)" "msamp-o9"
run train $TINY --allreduce_ranks 3
check_err "allreduce_ranks that does not divide batch (exit 2)" "allreduce_ranks 3 does not divide batch 4"

# Transformer Engine's first/last blocks in bf16: layer.block.first and
# layer.block.last select every GEMM of h0 and of the last block (SwiGLU
# here), and nothing else; stats.csv's format column shows each operand's
run train $TINY --n_layer 3 --swiglu 1 --steps 1 --prec hybrid --layer.block.first bf16 --layer.block.last bf16 \
  --layer.lm_head bf16 --stats_every 1 --out_dir "$T/blk"
awk -F, 'NR > 1 {print $2, $4, $5}' "$T/blk/stats.csv" 2>/dev/null | sort -u >"$T/blk.got"
: >"$T/blk.want"
for l in h0 h1 h2; do for g in fc fc2 proj qkv; do for k in grad input weight; do
  f=bf16; [ $l = h1 ] && { f=e4m3fn; [ $k = grad ] && f=e5m2; }
  echo "$l.$g $k $f" >>"$T/blk.want"
done; done; done
for k in grad input weight; do echo "lm_head $k bf16" >>"$T/blk.want"; done
sort -o "$T/blk.want" "$T/blk.want"
if [ "$rc" -eq 0 ] && cmp -s "$T/blk.want" "$T/blk.got"; then
  pass "layer.block.first/last = bf16: every GEMM operand of h0 and h2 (and lm_head) bf16, h1 FP8 (39 layer/tensor formats)"
else fail "layer.block.first/last = bf16: h0 and h2 bf16, h1 FP8" "status $rc" "$(diff "$T/blk.want" "$T/blk.got" | head -n 4 | tr '\n' '|')"; fi
run train $TINY --model mlp --depth 2 --layer.block.last bf16 --prec e4m3fn --steps 1 --stats_every 1 --out_dir "$T/blkm"
if [ "$rc" -eq 0 ] && [ "$(awk -F, 'NR > 1 && $5 == "bf16" {print $2}' "$T/blkm/stats.csv" | sort -u | tr '\n' ' ')" = "b1.fc " ]; then
  pass "layer.block.last on the MLP: its last block b1 (not head)"
else fail "layer.block.last on the MLP: its last block b1" "status $rc"; fi

run train $TINY --vocab word:300 --out_dir "$T/words"
if [ "$rc" -eq 0 ] && grep -q '^vocab = word:300$' "$T/words/config.txt" && grep -q '^params        13241$' "$T/out"; then
  pass "vocab = word:300: the built-in text's 296 words + <unk> (13241 parameters)"
else fail "vocab = word:300" "status $rc" "$(grep params "$T/out")"; fi
run train --vocab word:0
check_err "bad vocab (exit 2)" "word:0"

run train $TINY --model mlp --in_dim 4 --hidden 8 --depth 1 --out_dim 2 --prec e4m3fn
check_ok "mlp regression run"

# range_shift: norms x 2^s, the next weights x 2^-s on a resume into another precision
run train $TINY --prec bf16 --ckpt "$T/rs.ckpt"
check_ok "range_shift: the bf16 checkpoint"
RS="--n_layer 1 --d_model 16 --n_head 2 --seq_len 8 --batch 4 --steps 7 --eval_batches 1 --progress 0 --resume $T/rs.ckpt"
for s in 0 8; do
  run train $RS --prec fp32 --range_shift $s --out_dir "$T/rsf$s"
  run train $RS --prec "hybrid;recipe=delayed" --range_shift $s --out_dir "$T/rsd$s"
done
# the loss column (grad_norm is the shifted parameters' own)
l2() { sed -n 2p "$1" | cut -d, -f1,2; }
if [ -s "$T/rsf0/loss.csv" ] && [ "$(l2 "$T/rsf0/loss.csv")" = "$(l2 "$T/rsf8/loss.csv")" ]; then
  pass "range_shift 8 into fp32: the first step's loss bit for bit as without (function-preserving)"
else fail "range_shift into fp32 preserves the first loss" "$(l2 "$T/rsf0/loss.csv") vs $(l2 "$T/rsf8/loss.csv")"; fi
if [ -s "$T/rsd8/loss.csv" ] && [ "$(l2 "$T/rsd0/loss.csv")" != "$(l2 "$T/rsd8/loss.csv")" ]; then
  pass "range_shift 8 into delayed FP8 (scale 1): the first step's loss moves"
else fail "range_shift into delayed FP8 moves the first loss" "$(l2 "$T/rsd8/loss.csv")"; fi
# a restart from the run's own (same-precision) checkpoint is not shifted again
run train $TINY --prec fp32 --out_dir "$T/rsa"
run train $TINY --prec fp32 --stop_after 3 --ckpt "$T/rsb.ckpt" --out_dir "$T/rsb"
run train $TINY --prec fp32 --resume "$T/rsb.ckpt" --range_shift 8 --out_dir "$T/rsb"
if [ "$rc" -eq 0 ] && cmp -s "$T/rsa/loss.csv" "$T/rsb/loss.csv"; then pass "range_shift: a same-precision resume is not shifted"
else fail "range_shift: a same-precision resume is not shifted" "$(diff "$T/rsa/loss.csv" "$T/rsb/loss.csv" | head -3 | tr '\n' '|')"; fi
# range_shift_step: the shift when a step begins; the same function in fp32; a resume on
# either side of that step gives the uninterrupted run's losses
row() { sed -n "$(($2 + 2))p" "$1" | cut -d, -f1,2; }
run train $TINY --prec fp32 --range_shift -5 --range_shift_step 3 --out_dir "$T/rss"
if [ "$rc" -eq 0 ] && [ "$(row "$T/rss/loss.csv" 3)" = "$(row "$T/rsa/loss.csv" 3)" ] &&
   [ "$(row "$T/rss/loss.csv" 4)" != "$(row "$T/rsa/loss.csv" 4)" ]; then
  pass "range_shift_step 3 in fp32: step 3's loss as without the shift, step 4's not (AdamW's step is absolute)"
else fail "range_shift_step in fp32" "$(row "$T/rss/loss.csv" 3) vs $(row "$T/rsa/loss.csv" 3)"; fi
for at in 3 4; do
  rm -rf "$T/rsr$at"
  run train $TINY --prec "hybrid;recipe=delayed" --range_shift -5 --range_shift_step 3 --stop_after $at --ckpt "$T/rsr$at.ckpt" --out_dir "$T/rsr$at"
  run train $TINY --prec "hybrid;recipe=delayed" --range_shift -5 --range_shift_step 3 --resume "$T/rsr$at.ckpt" --out_dir "$T/rsr$at"
done
run train $TINY --prec "hybrid;recipe=delayed" --range_shift -5 --range_shift_step 3 --out_dir "$T/rsr"
if [ "$rc" -eq 0 ] && cmp -s "$T/rsr/loss.csv" "$T/rsr3/loss.csv" && cmp -s "$T/rsr/loss.csv" "$T/rsr4/loss.csv"; then
  pass "range_shift_step 3: stopped at step 3 or 4 and resumed = one run (shifted once)"
else fail "range_shift_step + resume" "$(diff "$T/rsr/loss.csv" "$T/rsr3/loss.csv" | head -2 | tr '\n' '|') $(diff "$T/rsr/loss.csv" "$T/rsr4/loss.csv" | head -2 | tr '\n' '|')"; fi
# lr_restart: the same steps before R, lr again at R (loss.csv's lr column)
col() { sed -n "$(($2 + 2))p" "$1" | cut -d, -f"$3"; }
run train $TINY --prec fp32 --lr_restart 3 --out_dir "$T/lrr"
if [ "$rc" -eq 0 ] && [ "$(sed -n 2,4p "$T/lrr/loss.csv")" = "$(sed -n 2,4p "$T/rsa/loss.csv")" ] &&
   [ "$(col "$T/lrr/loss.csv" 3 3)" = 0.003 ] && [ "$(col "$T/rsa/loss.csv" 3 3)" != 0.003 ]; then
  pass "lr_restart 3: steps 0-2 as without it, step 3's lr the peak 0.003"
else fail "lr_restart" "$(col "$T/lrr/loss.csv" 3 3) vs $(col "$T/rsa/loss.csv" 3 3)"; fi
# data_switch: the same steps before it, another loss from it on; a resume on either side of
# it gives the uninterrupted run's outputs
run train $TINY --prec "hybrid;recipe=delayed" --data_switch 3 --out_dir "$T/dsw"
run train $TINY --prec "hybrid;recipe=delayed" --out_dir "$T/dsn"
if [ "$rc" -eq 0 ] && [ "$(sed -n 2,4p "$T/dsw/loss.csv")" = "$(sed -n 2,4p "$T/dsn/loss.csv")" ] &&
   [ "$(row "$T/dsw/loss.csv" 3)" != "$(row "$T/dsn/loss.csv" 3)" ]; then
  pass "data_switch 3: steps 0-2 as without it, step 3's loss on the renamed tokens differs"
else fail "data_switch" "$(row "$T/dsw/loss.csv" 3) vs $(row "$T/dsn/loss.csv" 3)"; fi
for at in 2 4; do
  run train $TINY --prec "hybrid;recipe=delayed" --data_switch 3 --stop_after $at --ckpt "$T/dsr$at.ckpt" --out_dir "$T/dsr$at"
  run train $TINY --prec "hybrid;recipe=delayed" --data_switch 3 --resume "$T/dsr$at.ckpt" --out_dir "$T/dsr$at"
done
if cmp -s "$T/dsw/loss.csv" "$T/dsr2/loss.csv" && cmp -s "$T/dsw/loss.csv" "$T/dsr4/loss.csv" &&
   [ "$(grep -Ev 'seconds|tokens_per_s|out_dir' "$T/dsw/summary.json")" = "$(grep -Ev 'seconds|tokens_per_s|out_dir' "$T/dsr4/summary.json")" ]; then
  pass "data_switch 3: stopped at step 2 or 4 and resumed = one run (loss.csv; summary.json but time and folder)"
else fail "data_switch + resume" "$(diff "$T/dsw/loss.csv" "$T/dsr4/loss.csv" | head -2 | tr '\n' '|')"; fi
run train $TINY --model mlp --in_dim 4 --hidden 8 --depth 1 --out_dim 2 --data_switch 2
check_err "data_switch on a model without tokens (exit 2, before the run)" "data_switch 2: model mlp has no tokens"
run train $TINY --model mlp --in_dim 4 --hidden 8 --depth 1 --out_dim 2 --range_shift 2
check_err "range_shift on a model without norms (exit 2, before the run)" "range_shift 2: model mlp has no norm layers"
run train --range_shift 31
check_err "range_shift out of range" "31"

# the parity options (bias, tie, pos, wd_mode): --help lists them; at their defaults, given
# explicitly, the run is byte-identical to the engine before them (the cksums above) and
# config.txt leaves them out (study run ids unchanged); set, they print, read back and train
run train --help
if grep -q "^  bias " "$T/out" && grep -q "^  tie " "$T/out" && grep -q "^  pos .*rope" "$T/out" &&
   grep -q "^  wd_mode .*independent" "$T/out" && grep -q "^  data .*shakespeare" "$T/out"; then
  pass "--help lists bias, tie, pos, wd_mode and data = shakespeare"
else fail "--help lists bias, tie, pos, wd_mode and data = shakespeare"; fi
DEF="--bias 1 --tie 0 --pos learned --wd_mode coupled"
run train $TINY $DEF --out_dir "$T/def" --ckpt "$T/def.ckpt"
if [ "$rc" -eq 0 ] && [ "$(ck "$T/def/loss.csv") $(ck "$T/def.ckpt")" = "1134883060/274 2883015120/59983" ] &&
   ! grep -Eq "^(bias|tie|pos|wd_mode) " "$T/def/config.txt"; then
  pass "bias 1, tie 0, pos learned, wd_mode coupled: loss.csv and checkpoint as before the keys; config.txt without them"
else fail "the parity options at their defaults" "status $rc" "$(ck "$T/def/loss.csv") $(ck "$T/def.ckpt")"; fi
run train $TINY --bias 0 --tie 1 --pos rope --wd_mode independent --print-config
cp "$T/out" "$T/par.cfg"
run train "$T/par.cfg" --print-config
if [ "$rc" -eq 0 ] && cmp -s "$T/out" "$T/par.cfg" && grep -q "^bias = 0$" "$T/out" && grep -q "^tie = 1$" "$T/out" &&
   grep -q "^pos = rope$" "$T/out" && grep -q "^wd_mode = independent$" "$T/out"; then
  pass "bias 0, tie 1, pos rope, wd_mode independent: printed and read back"
else fail "the parity options: printed and read back" "status $rc" "$(txt "$T/out")"; fi
# parameters on Tiny Shakespeare (65 characters): 5585 as GPT-2; no biases and tied: 4288; rope: no wpe, 4160
run train $TINY --data shakespeare --steps 2
p1=$(awk '/^params/ {print $2}' "$T/out")
run train $TINY --data shakespeare --steps 2 --bias 0 --tie 1 --wd_mode independent
p2=$(awk '/^params/ {print $2}' "$T/out")
run train $TINY --data shakespeare --steps 2 --bias 0 --tie 1 --pos rope --out_dir "$T/shk"
p3=$(awk '/^params/ {print $2}' "$T/out")
if [ "$rc" -eq 0 ] && [ "$p1 $p2 $p3" = "5585 4288 4160" ] && grep -q "^data = shakespeare$" "$T/shk/config.txt"; then
  pass "data = shakespeare (vocab 65): 5585 parameters, 4288 with bias 0 tie 1, 4160 with pos rope too"
else fail "data = shakespeare: parameters" "got $p1 $p2 $p3 (status $rc)" "$(txt "$T/err")"; fi
run train $TINY --wd_mode independent --out_dir "$T/wdi"
if [ "$rc" -eq 0 ] && ! cmp -s "$T/wdi/loss.csv" "$T/def/loss.csv"; then pass "wd_mode independent changes the run"
else fail "wd_mode independent changes the run" "status $rc"; fi
run train --bias 2
check_err "bias 2 (exit 2)" "bias: '2' is not one of 1, 0"
run train --pos alibi
check_err "pos alibi (exit 2)" "pos: 'alibi' is not one of learned, rope"
run train $TINY --pos rope --d_model 18 --n_head 2
check_err "pos rope with an odd head width (exit 2, before the run)" "even head width"
run train $TINY --tie 1 --range_shift 2
check_err "tie 1 with range_shift (exit 2, before the run)" "range_shift 2: with tie 1"
run train $TINY --model mlp --in_dim 4 --hidden 8 --depth 1 --out_dim 2 --pos rope
check_err "pos rope on the mlp (exit 2, before the run)" "pos rope: model mlp has no embedding"

run train --lr fast
check_err "bad number" "'fast'"
run train --bogus 1
check_err "unknown key" "bogus"
run train --prec "hybrid;recipe=sometimes"
check_err "bad recipe" "sometimes"
run train --prec e9m9x
check_err "bad format" "e9m9x"
run train "$T/missing.cfg"
check_err "missing config file" "missing.cfg"
printf 'steps = 5\nwhat\n' >"$T/bad.cfg"
run train "$T/bad.cfg"
check_err "bad config line names file:line" "bad.cfg:2"
run train $TINY --layer.h7.fc bf16
check_err "unmatched layer override names it (exit 2, before the run)" "layer.h7.fc: no linear layer matches 'h7.fc'"
run train --lr
check_err "missing value" "--lr"

finish
