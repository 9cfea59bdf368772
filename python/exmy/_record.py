"""_record.py: what `python -m exmy.probe` and `python -m exmy.crosscheck`
send back: the environment (device, driver, CUDA/ROCm, cuBLASLt/hipBLASLt,
torch, exmy) and one JSON + markdown record in the format of
docs/gpu-crosscheck.md, "Recorded hardware runs"."""
from __future__ import annotations

import ctypes
import datetime
import glob
import json
import os
import platform
import subprocess
import sys
from types import ModuleType
from typing import Any, Dict, List, Mapping, NoReturn, Optional, Sequence, Tuple

EXIT_SKIP = 77


def skip(tool: str, why: str) -> NoReturn:
    """No GPU: one line, exit 77 (as `exmy gpu-probe` and the test suite)."""
    sys.stdout.flush()
    sys.stderr.write("exmy.%s: skipped: %s\n" % (tool, why))
    sys.exit(EXIT_SKIP)


def die(tool: str, msg: str) -> NoReturn:
    """Bad usage: one line naming the bad value, exit 2."""
    sys.stdout.flush()
    sys.stderr.write("exmy.%s: %s\n" % (tool, msg))
    sys.exit(2)


def gpu_or_skip(tool: str, torch_mod: Optional[ModuleType] = None, device: int = 0) -> ModuleType:
    """torch and a usable GPU, or exit 77 with one line saying which is missing."""
    try:
        torch = torch_mod or __import__("torch")
    except ImportError as e:
        skip(tool, "no GPU: torch is not importable (%s)" % e)
    if not torch.cuda.is_available():
        skip(tool, "no GPU: torch.cuda.is_available() is False (torch %s)" % torch.__version__)
    if device >= torch.cuda.device_count():
        die(tool, "--device %d: this machine has %d GPU(s)" % (device, torch.cuda.device_count()))
    return torch


def _loaded(name: str) -> List[str]:
    """Paths of the shared libraries this process has loaded whose name has name."""
    try:
        with open("/proc/self/maps") as fh:
            return sorted({l.split()[-1] for l in fh if name in l and l.rstrip().endswith(tuple("0123456789o"))})
    except OSError:
        return []


def _lib_version(patterns: Sequence[str], symbol: str) -> Tuple[Optional[int], Optional[str]]:
    """Version of a BLAS library torch uses: the copy this process loaded
    (after one GEMM on the device), else torch's bundled or the system's."""
    import torch
    dirs = [os.path.dirname(torch.__file__)] + [os.path.dirname(p) for p in sys.path if p]
    cands = _loaded(patterns[0].split(".")[0])
    for d in dirs:
        for pat in patterns:
            cands += glob.glob(os.path.join(d, "**", pat), recursive=False)
            cands += glob.glob(os.path.join(d, "lib", pat)) + glob.glob(os.path.join(d, "nvidia", "*", "lib", pat))
    cands += list(patterns)
    for c in cands:
        try:
            lib = ctypes.CDLL(c)
            f = getattr(lib, symbol)
            f.restype = ctypes.c_size_t
            return int(f()), c
        except (OSError, AttributeError):
            continue
    return None, None


def _driver() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        v = ctypes.c_int(0)
        if ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(v)) == 0:
            return "CUDA driver API %d" % v.value
    except (OSError, AttributeError):
        pass
    try:
        out = subprocess.run(["rocm-smi", "--showdriverversion"], capture_output=True, text=True, timeout=30)
        for line in out.stdout.splitlines():
            if "version" in line.lower():
                return line.split(":")[-1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def environment(torch: Optional[ModuleType] = None, device: int = 0) -> Dict[str, Any]:
    """The facts a record needs; every field present ("unknown" or None when
    the machine does not say)."""
    from . import __version__, lib_path
    env = {"exmy": __version__, "libexmy": lib_path, "python": platform.python_version(),
           "machine": platform.machine(), "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")}
    if torch is None:
        try:
            import torch as _torch
        except ImportError:
            return env
        torch = _torch
    env["torch"] = torch.__version__
    env["cuda"] = torch.version.cuda
    env["rocm"] = getattr(torch.version, "hip", None)
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(device)
        env["device"] = torch.cuda.get_device_name(device)
        env["capability"] = "%d.%d" % torch.cuda.get_device_capability(device)
        env["gcn_arch"] = getattr(p, "gcnArchName", None)
        env["driver"] = _driver()
        try:  # one small GEMM loads the BLAS libraries the probes will use
            x = torch.ones(16, 16, dtype=torch.float16, device="cuda:%d" % device)
            (x @ x).sum().item()
        except Exception:  # the version is then looked for on disk
            pass
        if env["rocm"]:
            v, where = _lib_version(["libhipblaslt.so*"], "hipblasLtGetVersion")
            env["blaslt"] = "hipBLASLt %s" % v if v else "hipBLASLt unknown"
        else:
            v, where = _lib_version(["libcublasLt.so*"], "cublasLtGetVersion")
            env["blaslt"] = "cuBLASLt %s" % v if v else "cuBLASLt unknown"
    return env


def env_line(env: Mapping[str, Any]) -> str:
    if "device" not in env:
        return "no GPU (CPU engines only), torch %s%s, exmy %s" % (
            env.get("torch", "not installed"), " (CUDA %s build)" % env["cuda"] if env.get("cuda") else "",
            env.get("exmy"))
    return "%s, sm/arch %s, driver %s, %s, %s, torch %s, exmy %s" % (
        env.get("device", "no device"), env.get("gcn_arch") or env.get("capability", "?"), env.get("driver", "?"),
        "ROCm %s" % env["rocm"] if env.get("rocm") else "CUDA %s" % env.get("cuda"), env.get("blaslt", "?"),
        env.get("torch", "?"), env.get("exmy"))


def markdown(record: Mapping[str, Any]) -> str:
    """The record as docs/gpu-crosscheck.md's "Recorded hardware runs" entry."""
    env = record["environment"]
    lines = ["### %s: %s (%s)" % (env.get("date"), env.get("device", "no device"), record["tool"]), "",
             "- environment: " + env_line(env), "- command: `%s`" % record["command"], ""]
    if record.get("probe"):
        lines += ["| engine | operands | inferred model | preset (bit for bit) | confirm |",
                  "| --- | --- | --- | --- | --- |"]
        for r in record["probe"]:
            if r.get("error"):
                lines.append("| %s | %s x %s | error: %s | | |" % (r["engine"], r["a"], r["b"], r["error"]))
                continue
            m = " ".join(r["match"]) if r["match"] else "no preset matches (nearest %s: %s)" % (
                r["nearest"], r["differences"])
            lines.append("| %s | %s x %s | `%s` | %s | %d of %d equal |" % (
                r["engine"], r["a"], r["b"], r["accum"] or "incomplete", m,
                r["confirm_dots"] - r["confirm_mismatches"], r["confirm_dots"]))
        lines.append("")
    if record.get("crosscheck"):
        lines += ["| configuration | model | outputs equal | first difference |", "| --- | --- | --- | --- |"]
        for c in record["crosscheck"]:
            lines.append("| %s | `%s` | %s | %s |" % (c["config"], c["model"],
                                                       c.get("error") or "%d of %d" % (c["equal"], c["outputs"]),
                                                       c.get("first_difference") or ""))
        lines.append("")
    return "\n".join(lines)


def write(record: Mapping[str, Any], out_dir: str, stem: str) -> Tuple[str, str]:
    """record as out_dir/stem.json and out_dir/stem.md; returns the two paths."""
    os.makedirs(out_dir, exist_ok=True)
    j, m = os.path.join(out_dir, stem + ".json"), os.path.join(out_dir, stem + ".md")
    with open(j, "w") as fh:
        json.dump(record, fh, indent=1, sort_keys=True)
        fh.write("\n")
    with open(m, "w") as fh:
        fh.write(markdown(record) + "\n")
    return j, m


def save(tool: str, argv: Sequence[str], env: Dict[str, Any], key: str, rows: List[Dict[str, Any]], out_dir: str,
         lead: str = "") -> None:
    """The record of a `python -m exmy.TOOL` run (its command, environment and
    rows under key) written by write(), and the line that says where."""
    rec = {"tool": "exmy." + tool, "command": "python -m exmy.%s %s" % (tool, " ".join(argv)), "environment": env,
           key: rows}
    j, m = write(rec, out_dir, stem(tool, env))
    print("%srecord: %s and %s (docs/gpu-crosscheck.md, \"Recorded hardware runs\", says where to send them)"
          % (lead, j, m))


def stem(tool: str, env: Mapping[str, Any]) -> str:
    dev = "".join(c if c.isalnum() else "-" for c in env.get("device", "cpu")).strip("-").lower()
    t = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return "exmy-%s-%s-%s" % (tool, dev, t)
