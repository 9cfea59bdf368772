"""mddoctest.py: run the Python sessions of Markdown files as doctests.

Usage: python3 mddoctest.py FILE.md...  A session is a fenced block whose
first line starts with `>>> `; a file's sessions share one namespace, in
order, so a later block may use an earlier one's names.  Blocks that use
torch are skipped (and counted) when torch is not importable.  Options:
ELLIPSIS (`0x...` for addresses) and NORMALIZE_WHITESPACE.  Exit status 0,
1 when an example fails (each shown with its file and line), 77 when no
block could run.
"""
import doctest
import os
import re
import sys

FENCE = re.compile(r"^```")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def sessions(path):
    """(first line number, text) of each fenced block that is a session."""
    out, block, start = [], None, 0
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if FENCE.match(line):
                if block is None:
                    block, start = [], n + 1
                else:
                    if block and block[0].startswith(">>> "):
                        out.append((start, "".join(block)))
                    block = None
            elif block is not None:
                block.append(line)
    return out


def main(paths):
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    ran = skipped = 0
    for path in paths:
        globs = {"__name__": "__mddoctest__"}
        for line, text in sessions(path):
            if not have_torch and re.search(r"\btorch\b|\bet\.", text):
                skipped += 1
                continue
            name = "%s:%d" % (os.path.basename(path), line)
            test = parser.get_doctest(text, globs, name, path, line - 1)
            runner.run(test, clear_globs=False)
            globs.update(test.globs)  # DocTest runs on a copy: the next block sees this one's names
            ran += 1
    failed, tried = runner.summarize(verbose=False)
    print("mddoctest: %d sessions (%d examples) run, %d failed examples; %d torch sessions skipped%s"
          % (ran, tried, failed, skipped, "" if have_torch else " (no torch)"))
    if failed:
        return 1
    return 0 if ran else 77


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
