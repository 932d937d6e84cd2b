"""Accuracy of Warp's ``fast_math`` module option in weft, on the transcendental benchmark.

    python benchmarks/accuracy_fastmath.py [--n 1000000] [--write docs/accuracy.md]

The kernel of ``benchmarks/bench_transcendental.py`` (``y = s(x) * |x|`` with sin, exp, cos,
log, tanh and sqrt of the components of a vec3) runs forward and adjoint on the benchmark's
inputs (``x`` uniform in (-1, 1), output adjoints standard normal, seed 0), compiled with
``fast_math`` off and on, beside the hand-written float32 Numba kernels of the benchmark. Each
result is compared with the same math in float64 (NumPy, from the same float32 inputs; the
gradient by the derivation the hand-written adjoint uses): error in ulp of float32 (``numpy.
spacing`` of the reference rounded to float32), and normwise relative error ``max |got - ref| /
max |ref|``. ``--write`` replaces the fast_math section of a page (between its markers), or
appends one; ``benchmarks/accuracy.py --write`` keeps that section when it rewrites the page.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

BEGIN, END = "<!-- fast_math:begin -->", "<!-- fast_math:end -->"


def reference(xh, gyh):
    """(y, adj_x) in float64 from the float32 inputs: the benchmark's math and its adjoint."""
    a, b, c = (xh[:, k].astype(np.float64) for k in range(3))
    g0, g1, g2 = (gyh[:, k].astype(np.float64) for k in range(3))
    n = np.sqrt(a * a + b * b + c * c)
    sa, ca, eb, cb, sb = np.sin(a), np.cos(a), np.exp(b), np.cos(b), np.sin(b)
    q = 1.0 + c * c
    lq, th, r = np.log(q), np.tanh(c), np.sqrt(1.0 + a * a)
    y = np.stack([sa * eb * n, cb * lq * n, (th + r) * n], axis=1)
    gs0, gs1, gs2 = g0 * n, g1 * n, g2 * n
    gn = (g0 * (sa * eb) + g1 * (cb * lq) + g2 * (th + r)) / n
    gx = np.stack([gs0 * ca * eb + gs2 * a / r + gn * a,
                   gs0 * sa * eb - gs1 * sb * lq + gn * b,
                   gs1 * cb * 2.0 * c / q + gs2 * (1.0 - th * th) + gn * c], axis=1)
    return y, gx


def errors(got, ref):
    """(max ulp, 99.9th percentile ulp, mean ulp, normwise relative error) of float32 ``got``."""
    ulp = np.abs(got.astype(np.float64) - ref) / np.spacing(np.abs(ref).astype(np.float32))
    rel = float(np.abs(got.astype(np.float64) - ref).max() / np.abs(ref).max())
    return float(ulp.max()), float(np.percentile(ulp, 99.9)), float(ulp.mean()), rel


def weft_results(wp, build, xh, gyh, fast):
    """(y, adj_x) of the benchmark kernel through ``wp.launch``, fast_math on or off (a
    ``module="unique"`` kernel with its own options, so both variants live in one process)."""
    k = build(wp, {"fast_math": fast})
    n = xh.shape[0]
    x = wp.array(xh, dtype=wp.vec3, requires_grad=True)
    y = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
    wp.launch(k, dim=n, inputs=[x], outputs=[y])
    y.grad.assign(gyh)
    wp.launch(k, dim=n, inputs=[x], outputs=[y], adjoint=True)
    assert k.fast_math == fast
    return y.numpy().copy(), x.grad.numpy().copy()


def measure(n):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_transcendental as bt

    import weft as wp
    rng = np.random.default_rng(0)                     # the benchmark's inputs
    xh = rng.uniform(-1.0, 1.0, (n, 3)).astype(np.float32)
    gyh = rng.standard_normal((n, 3)).astype(np.float32)
    y_ref, gx_ref = reference(xh, gyh)
    rows = {}
    for label, fast in (("weft, fast_math off (default)", False), ("weft, fast_math on", True)):
        rows[label] = weft_results(wp, bt.build, xh, gyh, fast)
    y_nb, gx_nb = np.zeros_like(xh), np.zeros_like(xh)
    bt.nb_forward(xh, y_nb)
    bt.nb_adjoint(xh, gyh, gx_nb)
    rows["hand-written Numba (float32, no fastmath)"] = (y_nb, gx_nb)
    table = []
    for label, (y, gx) in rows.items():
        table.append((label, "values y", *errors(y, y_ref)))
        table.append((label, "gradient adj_x", *errors(gx, gx_ref)))
    off_y, off_g = rows["weft, fast_math off (default)"]
    on_y, on_g = rows["weft, fast_math on"]
    # fast_math against the default build, in float32 ulps of the default's result
    table.append(("weft, fast_math on vs off", "values y",
                  *errors(on_y, off_y.astype(np.float64))))
    table.append(("weft, fast_math on vs off", "gradient adj_x",
                  *errors(on_g, off_g.astype(np.float64))))
    diff = (float(np.abs(on_y - off_y).max()), float(np.abs(on_g - off_g).max()),
            float((on_y != off_y).mean() * 100), float((on_g != off_g).mean() * 100))
    return table, diff


#: each fast_math function on its ranges (log-uniform ranges are given as ("log", lo, hi))
RANGES = {"sin": [(-10, 10), (-1e4, 1e4), (-1e8, 1e8)],
          "cos": [(-10, 10), (-1e4, 1e4), (-1e8, 1e8)],
          "tan": [(-10, 10), (-1e4, 1e4)], "exp": [(-1, 1), (-103, 88.7)],
          "log": [(0, 10), ("log", 1e-45, 3e38)], "log2": [("log", 1e-45, 3e38)],
          "log10": [("log", 1e-45, 3e38)], "tanh": [(-1, 1), (-10, 10)],
          "sinh": [(-1, 1), (-89, 89)], "cosh": [(-89, 89)]}


def ulp_max(got, ref):
    """Largest error of float32 ``got`` in float32 ulps of the float64 ``ref`` (finite,
    normal-range results only)."""
    with np.errstate(over="ignore"):
        ref32 = ref.astype(np.float32)
    ok = np.isfinite(ref32) & (np.abs(ref) >= np.finfo(np.float32).tiny)
    return float((np.abs(got[ok].astype(np.float64) - ref[ok]) /
                  np.spacing(np.abs(ref32[ok])).astype(np.float64)).max())


def compiled_loop(fn):
    """A compiled ``out[i] = fn(x[i])`` over 1-D arrays."""
    import numba

    @numba.njit
    def run(x, out):
        for i in range(x.shape[0]):
            out[i] = fn(x[i])
    return run


def function_table(n):
    """Rows (function, range, fast_math ulp max, libm ulp max): ``weft.native.fastmath``'s
    functions and the float32 libm calls a default build makes, each in a compiled loop,
    against NumPy in float64."""
    from weft.native import fastmath

    rng = np.random.default_rng(1)
    rows = []
    for name, ranges in RANGES.items():
        fast, libm = compiled_loop(fastmath.FAST[name]), compiled_loop(getattr(np, name))
        ref_fn = getattr(np, name)
        for r in ranges:
            if r[0] == "log":
                x = np.exp(rng.uniform(np.log(r[1]), np.log(r[2]), n)).astype(np.float32)
                label = f"[{r[1]:g}, {r[2]:g}] log-uniform"
            else:
                x = rng.uniform(r[0], r[1], n).astype(np.float32)
                label = f"[{r[0]:g}, {r[1]:g}]"
            with np.errstate(all="ignore"):
                ref = ref_fn(x.astype(np.float64))
                got_f, got_l = np.empty_like(x), np.empty_like(x)
                fast(x, got_f)
                libm(x, got_l)
            rows.append((name, label, ulp_max(got_f, ref), ulp_max(got_l, ref)))
    return rows


def markdown(table, diff, n, functions=()):
    import numba

    import weft
    out = [BEGIN, "## fast_math (the transcendental benchmark)", "",
           f"Generated by `benchmarks/accuracy_fastmath.py` (weft {weft.__version__}, numba "
           f"{numba.__version__}, x86_64, no SVML): the kernel of "
           "`benchmarks/bench_transcendental.py` on its inputs "
           f"({n:,} vec3, components uniform in (-1, 1); output adjoints standard normal), "
           "forward and adjoint, against the same math in float64 (the last rows: fast_math "
           "on against the default build). ulp: float32 ulps of the reference; rel: max "
           "|error| / max |reference| over all components.", "",
           "| build | result | ulp max | ulp 99.9% | ulp mean | rel (normwise) |",
           "|---|---|---|---|---|---|"]
    for label, what, umax, u999, umean, rel in table:
        out.append(f"| {label} | {what} | {umax:.3g} | {u999:.3g} | {umean:.3g} | {rel:.2g} |")
    out += ["", f"fast_math on against off: max |difference| {diff[0]:.2g} (values), "
            f"{diff[1]:.2g} (gradients); {diff[2]:.1f}% of the values and {diff[3]:.1f}% of "
            "the gradient components differ at all.", "",
            "What fast_math changes here: Numba's `fastmath=True` sets LLVM's fast-math flags "
            "(reassociation, contraction into FMA, no NaN/inf/signed-zero guarantees, "
            "reciprocal approximations allowed) on the kernel's arithmetic, and the float32 "
            "`sin`, `cos`, `tan`, `exp`, `log`, `log2`, `log10`, `tanh`, `sinh` and `cosh` "
            "become weft's own arithmetic-only functions (the table below), which LLVM "
            "inlines and vectorises; float64 math keeps libm. Those functions are more "
            "accurate than the libm calls, so what moves the results is the reordered "
            "arithmetic. The "
            "ulp maxima against float64 are the same for every build, hand-written code "
            "included: they come from the float32 formula itself, not from the functions "
            "(`log(1 + c*c)` for small `c` after `1 + c*c` rounds, and gradient components "
            "that cancel to near zero, where an ulp is tiny next to the terms summed); the "
            "normwise column and the on-vs-off rows are the ones to read. Kernels that rely "
            "on NaN or infinity tests, on "
            "signed zeros or on a particular order of summation should keep fast_math off "
            "(Warp's default).", ""]
    if functions:
        out += ["The float32 functions fast_math modules call (`weft/stdlib/fastmath.py`: "
                "arithmetic only, so LLVM vectorises loops calling them), each on "
                f"{n:,} points per range against NumPy in float64, beside the libm calls of "
                "the default build:", "",
                "| function | range | fast_math ulp max | libm ulp max |", "|---|---|---|---|"]
        out += [f"| {f} | {r} | {a:.3f} | {b:.3f} |" for f, r, a, b in functions]
    out.append(END)
    return "\n".join(out) + "\n"


def write_section(path, text):
    """Replace the marked section of page ``path`` with ``text`` (or append it)."""
    old = open(path).read() if os.path.exists(path) else ""
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        new = head + text.rstrip("\n") + rest.split(END, 1)[1]
    else:
        new = old.rstrip("\n") + ("\n\n" if old else "") + text
    with open(path, "w") as f:
        f.write(new)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="number of vec3 elements")
    ap.add_argument("--write", default="", help="put the section into this Markdown page")
    args = ap.parse_args(argv)
    table, diff = measure(args.n)
    text = markdown(table, diff, args.n, function_table(args.n))
    print(text)
    if args.write:
        write_section(args.write, text)
        print(f"wrote {args.write}")
    return table


if __name__ == "__main__":
    main()
