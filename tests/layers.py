#!/usr/bin/env python3
"""layers.py: the include and call graph of exmy's C sources, and its circles.

A node is a source file (.c or .h).  Edges:
  include   A.c/A.h -> B.h     A #includes "B.h"
  call      A.c -> B.c         A names a function (or global) defined, not
                               static, in B.c (a call or a function pointer)
A circle is a strongly connected component of more than one file, over the
call edges plus, for each header of emulate/, the edges from the files that
include it to the files that define what it declares (a file including the
header of its own functions implements it: no edge).  A header of emulate/
mixes levels when one file it declares calls another it declares.

  python3 tests/layers.py [--srcdir DIR] [--dot] [FILE_OR_DIR ...]
      prints each file's includes, calls and header edges (default: formats
      emulate kernels experiments cli; --dot: as graphviz), then every
      circle, mixed header and upward edge among them
  python3 tests/layers.py --check
      the same findings only; exit 1 if there is one (tests/test_layers.sh).
      Layers, calls going one way: cli -> experiments -> emulate, kernels
      -> formats; an include or a call into a higher layer is a finding
"""
import os
import re
import sys

KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "defined", "__attribute__", "_Pragma",
            "__builtin_expect", "typeof", "__typeof__", "alignof", "_Alignof", "_Static_assert"}
LAYER = {"formats": 0, "kernels": 1, "emulate": 1, "experiments": 2, "cli": 3, "python": 3, "tests": 4, "bench": 4}


def strip(text):
    """Comments, string and char literals blanked (lengths kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def scan(path):
    """(includes, defined non-static names, static names, identifiers used)."""
    raw = open(path, encoding="utf-8", errors="replace").read()
    includes = re.findall(r'^\s*#\s*include\s+"([^"]+)"', raw, re.M)
    text = strip(raw)
    # preprocessor lines out (continuations too)
    text = re.sub(r"^\s*#(?:[^\n]*\\\n)*[^\n]*", "", text, flags=re.M)
    glob, stat = set(), set()
    depth, i, n, start, body = 0, 0, len(text), 0, False
    while i < n:
        c = text[i]
        if c == "{":
            if depth == 0:
                head = text[start:i]
                body = False
                m = re.search(r"\b([A-Za-z_]\w*)\s*\((?:[^()]|\([^()]*\))*\)\s*(?:__attribute__\s*\(\(.*\)\)\s*)?$",
                              head, re.S)
                if m and m.group(1) not in KEYWORDS and not re.search(r"=\s*$", head[:m.start()]):
                    (stat if re.search(r"\bstatic\b", head) else glob).add(m.group(1))
                    body = True
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0 and body:  # a struct's or an initializer's brace ends no statement
                start = i + 1
        elif c == ";" and depth == 0:
            # a global variable's definition (not extern, not a prototype)
            decl = text[start:i]
            m = re.search(r"\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*(?:=|$)", decl.split("=")[0].strip() + "=")
            lhs = decl.split("=")[0]  # an enum's or a struct's body is no variable
            if m and not re.search(r"\b(extern|typedef)\b", decl) and "(" not in lhs and "{" not in lhs:
                (stat if re.search(r"\bstatic\b", decl) else glob).add(m.group(1))
            start = i + 1
        i += 1
    # names used, not members (x.name, p->name)
    used = set(re.findall(r"(?<![\w.])(?<!->)\b([A-Za-z_]\w*)", text))
    return includes, glob, stat, used


def collect(srcdir, targets):
    files = []
    for t in targets:
        p = os.path.join(srcdir, t)
        if os.path.isdir(p):
            for f in sorted(os.listdir(p)):
                if f.endswith((".c", ".h")):
                    files.append(os.path.join(t, f))
        elif os.path.exists(p):
            files.append(t)
    return files


def graph(srcdir, files):
    info = {f: scan(os.path.join(srcdir, f)) for f in files}
    owner = {}
    for f, (_, glob, _, _) in info.items():
        if f.endswith(".c"):
            for g in glob:
                owner.setdefault(g, set()).add(f)
    calls = {f: set() for f in files}
    for f, (_, glob, stat, used) in info.items():
        if not f.endswith(".c"):
            continue
        for u in used - stat - glob:
            for o in owner.get(u, ()):
                if o != f:
                    calls[f].add(o)
    incl = {f: set() for f in files}
    for f, (includes, _, _, _) in info.items():
        for h in includes:
            if h in info:
                incl[f].add(h)
    # what a header stands for: the files defining the functions it declares
    declares = {}
    for h in files:
        if h.endswith(".h"):
            text = strip(open(os.path.join(srcdir, h), encoding="utf-8", errors="replace").read())
            names = set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", text)) | set(re.findall(r"\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*;", text))
            declares[h] = {o for nm in names for o in owner.get(nm, ())}
    return info, calls, incl, declares


def sccs(nodes, edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def circles(files, calls, incl, declares, hdr_scope):
    """Circles over .c files: their calls, and for the headers in hdr_scope
    an include standing for a use of the files that define what the header
    declares (a file including the header that declares its own functions
    implements it: no edge from that include)."""
    edges = {f: set(calls[f]) for f in files if f.endswith(".c")}

    def reach(h, seen):
        # a header's definers, through the scoped headers it includes
        if h in seen or h not in hdr_scope:
            return set()
        seen.add(h)
        got = set(declares.get(h, ()))
        for h2 in incl.get(h, ()):
            got |= reach(h2, seen)
        return got

    for f in edges:
        for h in incl[f]:
            # its own header: only what that header includes in turn
            tops = [h] if f not in declares.get(h, ()) else sorted(incl.get(h, ()))
            for t in tops:
                edges[f] |= {d for d in reach(t, set()) if d != f}
    via = {f: sorted(edges[f] - calls[f]) for f in edges}
    return sccs(edges, edges), edges, via


def mixed(calls, declares, hdr_scope):
    """Headers declaring files of different levels: one of its files calls
    another (the callee belongs in a header of its own, below)."""
    out = []
    for h in sorted(hdr_scope):
        own = declares.get(h, set())
        for f in sorted(own):
            for g in sorted(calls.get(f, set()) & own):
                out.append(f"{h} mixes levels: {f} calls {g}, both declared there")
    return out


def header_cycles(files, incl):
    return sccs([f for f in files], {f: incl[f] for f in files})


def path_in(comp, edges):
    """One cycle through the component, for the message."""
    comp = set(comp)
    start = min(comp)
    prev, todo = {start: None}, [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(edges[v]):
            if w == start:
                p = [v]
                while prev[p[-1]] is not None:
                    p.append(prev[p[-1]])
                return list(reversed(p)) + [start]
            if w in comp and w not in prev:
                prev[w] = v
                todo.append(w)
    return sorted(comp)


def layer_of(f):
    return LAYER.get(f.split("/")[0], -1)


def main(argv):
    srcdir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    check = dot = False
    targets = []
    it = iter(argv)
    for a in it:
        if a == "--srcdir":
            srcdir = next(it)
        elif a == "--check":
            check = True
        elif a == "--dot":
            dot = True
        else:
            targets.append(a)
    if not targets:
        targets = ["formats", "emulate", "kernels", "experiments", "cli"]
    files = collect(srcdir, targets)
    info, calls, incl, declares = graph(srcdir, files)
    # the header view for emulate/'s own headers; the engine's and the
    # command's shared headers (xp.h, study_int.h, cli.h) are hubs by design
    hdr_scope = {f for f in files if f.startswith("emulate/") and f.endswith(".h")}
    comps, edges, via = circles(files, calls, incl, declares, hdr_scope)
    hcyc = header_cycles(files, incl)
    mix = mixed(calls, declares, hdr_scope)
    bad = []
    for f in files:
        for h in incl[f]:
            if layer_of(h) > layer_of(f) and not (layer_of(f) == 1 and layer_of(h) == 1):
                bad.append(f"{f} includes {h} (a higher layer)")
        for c in calls.get(f, ()):
            if layer_of(c) > layer_of(f):
                bad.append(f"{f} calls into {c} (a higher layer)")
    if check:
        ok = True
        for c in hcyc:
            print(f"include cycle: {' -> '.join(c)}")
            ok = False
        for c in comps:
            print(f"circle: {' -> '.join(path_in(c, edges))}")
            ok = False
        for b in mix + bad:
            print(b)
            ok = False
        return 0 if ok else 1
    if dot:
        print("digraph layers {")
        for f in sorted(edges):
            for t in sorted(calls[f]):
                print(f'  "{f}" -> "{t}";')
            for t in sorted(via[f]):
                print(f'  "{f}" -> "{t}" [style=dashed];')
        print("}")
        return 0
    for f in sorted(files):
        line = [f"{f}:"]
        if incl[f]:
            line.append("includes " + " ".join(sorted(incl[f])))
        if calls.get(f):
            line.append("calls " + " ".join(sorted(calls[f])))
        if via.get(f):
            line.append("through headers " + " ".join(via[f]))
        print("  ".join(line))
    print()
    for c in hcyc:
        print(f"include cycle: {' -> '.join(c)}")
    for c in comps:
        print(f"circle ({len(c)} files): {' -> '.join(path_in(c, edges))}")
    for b in mix + bad:
        print(b)
    if not hcyc and not comps and not mix and not bad:
        print("no circles")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
