#!/bin/sh
# test_exit_quiet.sh: no exit-time noise.  A Python process imports exmy and
# exmy.torch, builds an engine, patches a small model (nn.Sequential of
# nn.Linear; one patch with delayed scaling and stochastic rounding, one with
# patched attention), runs forward and backward and an optimizer step, and
# keeps all of it (and a RecipeState, a QTensor, a LowPrecisionOptimizer, a
# Quantizer) alive in module globals, some in a reference cycle.  It then
# ends three ways: falling off the end of the script, sys.exit(0), and after
# `del` of the model and its patch.  Each must exit 0 with nothing on stderr
# ("Exception ignored in ...", a warning, a leak report): objects freed
# while the interpreter tears its modules down must not need them.
# Skips (77) without numpy, torch or a shared build, like tests/test_python.sh.
srcdir=${srcdir:-.}
EXMY=${EXMY:-./exmy}
build=$(cd "$(dirname "$EXMY")" && pwd)
top=$(cd "$srcdir" && pwd)
PYTHON=${PYTHON3:-python3}
[ -n "$PYTHON" ] || PYTHON=python3
command -v "$PYTHON" >/dev/null 2>&1 || { echo "test_exit_quiet: skipped: $PYTHON not found"; exit 77; }
"$PYTHON" -c 'import numpy' >/dev/null 2>&1 || { echo "test_exit_quiet: skipped: numpy not importable"; exit 77; }
if [ ! -f "$build/.libs/libexmy.so" ] || grep -q '^SAN_FLAGS = -fsanitize' "$build/Makefile" 2>/dev/null; then
  echo "test_exit_quiet: skipped: no shared, uninstrumented libexmy in this build"; exit 77
fi
"$PYTHON" -c 'import torch' >/dev/null 2>&1 || { echo "test_exit_quiet: skipped: torch not importable"; exit 77; }
EXMY_LIB=$build/.libs/libexmy.so
EXMY_XP_LIB=$build/python/.libs/exmy_xp.so
PYTHONPATH=$top/python${PYTHONPATH:+:$PYTHONPATH}
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
PYTHONDONTWRITEBYTECODE=1
export EXMY_LIB EXMY_XP_LIB PYTHONPATH OMP_WAIT_POLICY PYTHONDONTWRITEBYTECODE
scratch=$(mktemp -d "${TMPDIR:-/tmp}/exmy-exit.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT

# keep.py: a module imported before exmy, so torn down after it: what it
# holds is freed when exmy's own modules may already be cleared.
echo 'held = []' >"$scratch/keep.py"
cat >"$scratch/run.py" <<'EOF'
import sys
import keep
import numpy as np
import torch
import exmy
import exmy.torch as et
from exmy import _xp

torch.manual_seed(0)
engine = _xp.Engine(["a", "b"], [("prec", "hybrid")])
engine.begin_step(0, True)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
patched = et.patch(model, prec="hybrid;recipe=delayed:len=4;round.grad=sr", stats_every=1)
opt = et.LowPrecisionOptimizer(torch.optim.AdamW(model.parameters(), lr=1e-3), weight="bf16", moments="bf16")
quant = et.Quantizer("e4m3fn", bwd="e5m2")
x = torch.randn(5, 8, requires_grad=True)
loss = model(quant(x)).square().mean()
loss.backward()
opt.step()
patched.step()
attn_model = torch.nn.Sequential(torch.nn.Linear(8, 8))
attn_patched = et.patch(attn_model, prec="fp32", attn="bf16")
y = et.matmul(torch.randn(2, 3, 4), torch.randn(2, 4, 5), prec="hybrid")
state = exmy.RecipeState("delayed:len=4")
qt = exmy.scale(np.ones((4, 4), np.float32), "delayed:len=4", state=state)
state.step()


class Holder:  # a reference cycle: freed by the collector, possibly only at shutdown
    pass


holder = Holder()
holder.self, holder.patched, holder.engine, holder.model = holder, patched, engine, model
del holder
keep.held += [engine, patched, model, opt, quant, attn_patched, state, qt, exmy.RecipeState("delayed:len=2"),
              _xp.Engine([], [("prec", "fp32")])]

if sys.argv[1] == "exit":
    sys.exit(0)
if sys.argv[1] == "del":
    del model, patched, opt, attn_model, attn_patched, engine
print("ok")
EOF

rc=0
for how in end exit del; do
  "$PYTHON" "$scratch/run.py" "$how" >"$scratch/out" 2>"$scratch/err"
  st=$?
  if [ $st != 0 ] || [ -s "$scratch/err" ]; then
    echo "test_exit_quiet: FAIL: ending by '$how': status $st, stderr:"
    sed 's/^/  /' "$scratch/err"
    rc=1
  else
    echo "test_exit_quiet: ending by '$how': status 0, nothing on stderr"
  fi
done
exit $rc
