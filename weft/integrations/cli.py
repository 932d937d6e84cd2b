"""Command line: ``weft show FILE.py:KERNEL [--adjoint|--tangent|--second]`` and
``weft transpile FILE.py -o DIR`` (also ``python -m weft``)."""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time

from ..core.errors import KernelError


def _load_user_module(path):
    path = os.path.abspath(path)
    if not os.path.exists(path):
        raise SystemExit(f"weft: no such file: {path}")
    name = "weft_user_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    sys.path.insert(0, os.path.dirname(path))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.pop(0)
    return mod


def _kernels(mod):
    from ..runtime.kernel import Kernel
    return {k.key: k for k in vars(mod).values() if isinstance(k, Kernel)}


def _transpile(kernels, origin):
    from ..transpiler import pipeline
    from ..transpiler.state import CompileState
    state = pipeline.run(CompileState(roots=list(kernels)))
    return state.source


def cmd_show(args):
    path, _, name = args.target.rpartition(":")
    if not path:
        raise SystemExit("weft show: give FILE.py:KERNEL")
    kernels = _kernels(_load_user_module(path))
    if name not in kernels:
        raise SystemExit(f"weft show: no kernel '{name}' in {path} (kernels: "
                         f"{', '.join(sorted(kernels)) or 'none'})")
    kind = "adjoint" if args.adjoint else "tangent" if args.tangent else \
        "second" if args.second else "forward"
    if args.all:
        kind = "all"
    sys.stdout.write(kernels[name].source(kind))
    return 0


def cmd_transpile(args):
    if args.name and len(args.file) > 1:
        raise SystemExit("weft transpile: --name names one output module; give one file")
    total = len(args.file)
    os.makedirs(args.output, exist_ok=True)
    for k, path in enumerate(args.file, 1):
        t0 = time.perf_counter()
        kernels = _kernels(_load_user_module(path))
        if not kernels:
            raise SystemExit(f"weft transpile: no kernels in {path}")
        src = _transpile(sorted(kernels.values(), key=lambda k: k.key), path)
        base = args.name or (os.path.splitext(os.path.basename(path))[0] + "_weft")
        out = os.path.join(args.output, base + ".py")
        with open(out, "w") as f:
            f.write(src)
        step = f"[{k}/{total}] " if total > 1 else ""
        print(f"{step}wrote {out} ({len(kernels)} kernel(s): {', '.join(sorted(kernels))}; "
              f"{time.perf_counter() - t0:.1f} s)", flush=True)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="weft", description="Warp kernels to Numba source.")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("show", help="print the generated source of a kernel")
    s.add_argument("target", help="FILE.py:KERNEL")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--adjoint", action="store_true", help="the adjoint (reverse-mode) kernel")
    g.add_argument("--tangent", action="store_true", help="the tangent (forward-mode) kernel")
    g.add_argument("--second", action="store_true",
                   help="the adjoint's tangent (second order, what tape.hvp runs)")
    g.add_argument("--all", action="store_true", help="the whole generated module")
    s.set_defaults(fn=cmd_show)
    t = sub.add_parser("transpile", help="write a module with every kernel of each FILE.py "
                       "(one line per file as it is done)")
    t.add_argument("file", nargs="+")
    t.add_argument("-o", "--output", required=True, help="output folder")
    t.add_argument("--name", help="module name (default: <file>_weft)")
    t.set_defaults(fn=cmd_transpile)
    args = p.parse_args(argv)
    try:
        return args.fn(args)
    except KernelError as exc:
        print(f"weft: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
