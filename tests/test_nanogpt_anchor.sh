#!/bin/sh
# test_nanogpt_anchor.sh (make check-long): the engine against an outside
# reference.  nanoGPT's published CPU run on Tiny Shakespeare (its README,
# "I only have a macbook": 4 layers, 4 heads, n_embd 128, block 64, batch 12,
# 2000 iterations, lr 1e-3, 100 warmup, cosine to 1e-4, beta2 0.99, weight
# decay 0.1, clip 1.0, no dropout, no biases, tied lm_head) ends at a
# validation loss of 1.88; `exmy train` in fp32 on `data = shakespeare` with
# the same model and schedule must land within seed noise of it (the band
# and how it was measured: docs/training.md, "The nanoGPT anchor").
# EXMY_TEST_SEED picks the seed (default 1); a few minutes on 2 cores.
NAME=test_nanogpt_anchor
. "${srcdir:-.}/tests/cli_harness.sh"

# 1.88 +- 0.04: seeds 1-5 of this run ended at 1.8968 1.9001 1.8793 1.8927 1.8829
# (sd 0.009); one seed here against nanoGPT's one published number differs by
# sd 0.009 sqrt(2) = 0.013 when both engines have that noise, and 0.04 is 3 of
# those.  A run with the tied gradient broken ends at 1.9428.
LO=1.84
HI=1.92
SEED=${EXMY_TEST_SEED:-1}
ANCHOR="--data shakespeare --bias 0 --tie 1 --n_layer 4 --n_head 4 --d_model 128 --seq_len 64 --batch 12
  --steps 2000 --lr 1e-3 --warmup_frac 0.05 --min_lr_frac 0.1 --beta1 0.9 --beta2 0.99 --weight_decay 0.1
  --clip 1 --prec fp32 --eval_batches 200"
# shellcheck disable=SC2086
run train $ANCHOR --seed "$SEED" --progress 2 --log_every 500 --out_dir "$T/anchor"
cat "$T/out"
val=$(awk '/^val loss/ {print $3}' "$T/out")
par=$(awk '/^params/ {print $2}' "$T/out")
if [ "$rc" -eq 0 ] && [ "$par" = 804096 ]; then pass "nanoGPT's CPU model: 804096 parameters (nanoGPT prints 0.80M, wpe left out)"
else fail "nanoGPT's CPU model: parameters" "status $rc, params $par" "$(txt "$T/err")"; fi
if [ -n "$val" ] && awk -v v="$val" -v lo="$LO" -v hi="$HI" 'BEGIN { exit !(v >= lo && v <= hi) }'; then
  pass "seed $SEED: validation loss $val within [$LO, $HI] (nanoGPT: 1.88)"
else fail "validation loss within [$LO, $HI] (nanoGPT: 1.88)" "seed $SEED: val loss '$val'"; fi
finish
