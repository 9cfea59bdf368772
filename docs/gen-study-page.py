#!/usr/bin/env python3
"""gen-study-page.py NAME RESULTS CONSOLE MACHINE [PAGE ARGS [WALL]]: docs/studies/NAME.md from a real run.

RESULTS is the run's results folder (its report.md and SVG plots), CONSOLE the
file holding the command's console output, MACHINE one sentence on the
machine and its load.  The page is the console, then report.md with its
headings one level down and its plots copied to docs/studies/NAME-*.svg.
PAGE and ARGS (optional): a run with options (ARGS, e.g. "--steps 1000") written as
docs/studies/PAGE.md.  WALL (optional): the wall time as a sentence, for a run made of
several invocations (the console's "N runs in T" is the last one's alone).  Run from the source tree's top folder; nothing in the
report is edited."""
import os, re, shutil, sys

name, res, console, machine = sys.argv[1:5]
page, args = (sys.argv[5], " " + sys.argv[6]) if len(sys.argv) > 6 else (name, "")
wall_text = sys.argv[7] if len(sys.argv) > 7 else None
cmd = ("exmy study" if name == "default" else f"exmy study {name}") + args
con = open(console).read().rstrip("\n")
rep = open(os.path.join(res, "report.md")).read().split("\n")
assert rep[0].startswith("# "), "report.md should start with its title"
body = "\n".join(rep[1:])
body = re.sub(r"^(#+) ", lambda m: "#" + m.group(1) + " ", body, flags=re.M)
for svg in sorted(f for f in os.listdir(res) if f.endswith(".svg")):
    stem = svg[:-4]
    shutil.copy(os.path.join(res, svg), f"docs/studies/{page}-{stem}.svg")
    body = body.replace(f"]({svg})", f"]({page}-{svg})")
wall = re.search(r"^(\d+) runs in (.*)$", con, re.M)
runs = f"{wall.group(2)} wall time for {wall.group(1)} runs, 2 at a time" if wall else "wall time in the console"
if wall_text:
    runs = wall_text
# the study's size: options that change it make it "a run"; --out, --report, --threads do not
size = "run" if re.search(r"--(tiny|full|steps|seeds|set|lrs|first-seed)\b", args) else "default-size run"
# the folder the run wrote (--out), as its console names it
out = re.search(r"; results in (\S+)$", con, re.M)
folder = out.group(1) if out else f"results/{name}"
head = (f"# Study `{name}`: a real run\n\nThis page is generated from a real {size} (`{cmd}`, results "
        f"folder `{folder}`) by `docs/gen-study-page.py`: the console output, then the run's `report.md` as the "
        f"study wrote it, with its SVG plots. Machine: {machine}; {runs}. Nothing was edited or re-run selectively: "
        f"the verdicts are the code's (the study file experiments/studies/{name}.study, its analysis hook and "
        f"experiments/study_claims.c).\n\n")
# what a referee checks first, near the top: the report's testbed sentence (model, parameters,
# corpus, tokens, seeds, learning rates), with the corpus's size when it is the shipped one
tb = re.search(r"^\*\*Testbed\.\*\* (.*)$", body, re.M)
if tb:
    corpus = (" Tiny Shakespeare is 1,115,394 characters (1,003,854 for training, 111,540 held out);"
              " the validation loss is the mean over the engine's `eval_batches` batches of the held-out text."
              if "corpus `shakespeare`" in tb.group(1) else "")
    head += f"**Testbed.** {tb.group(1)}{corpus}\n\n"
text = head + f"## Console\n\n```\n$ {cmd}\n{con}\n```\n\n## The report (`{folder}/report.md`)\n" + body
open(f"docs/studies/{page}.md", "w").write(text)
