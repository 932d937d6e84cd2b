"""Accuracy of weft's transcendental builtins in float32 and float64, measured against mpmath.

    python benchmarks/accuracy.py [--points 100000] [--only sin,exp] [--jobs 2]
                                  [--write docs/accuracy.md]

For each function and precision, the builtin is evaluated inside a weft kernel launched on the
CPU (the generated Numba code users run) at ``--points`` sample points of a domain; the same
float32/float64 inputs, converted exactly, go to mpmath at ``--dps`` decimal digits. The script
reports mean and max absolute error, relative error and error in ulp of the target precision
(the spacing, ``numpy.spacing``, of the reference rounded to that precision), the share of
results that are correctly rounded, the input of the largest ulp error, and the libm functions
the compiled kernel calls (read from its machine code: ``sinf`` works in float32, ``sin`` in
float64).

The functions and domains are those of Dr.Jit's table of transcendental accuracy
(docs/misc.rst, "Accuracy of transcendental operations"), plus weft builtins that table lacks,
with domains of our choosing (the ``source`` column says which is which). Builtins that ``wp``
does not have (yet) are skipped with a note, so rerunning the script fills them in.

Why kernels are written out as source text: a kernel that closes over a builtin
(``fn = wp.sin`` in a factory) is cached under the same key for every builtin, so each
function gets its own ``wp.<name>(...)`` line in a small generated module instead.
"""
from __future__ import annotations

import argparse
import atexit
import datetime
import importlib.util
import os
import platform
import re
import shutil
import tempfile
import time
from dataclasses import dataclass

import mpmath
import numpy as np

DEFAULT_POINTS = 100_000
DEFAULT_DPS = 40
PRECISIONS = ("float32", "float64")


# ------------------------------------------------------------------------------ the functions
@dataclass(frozen=True)
class Case:
    """One row of the table: a builtin on a domain (one (lo, hi) per argument)."""
    label: str                    # row name; several rows may test one builtin
    builtin: str                  # wp.<builtin>
    domain: tuple                 # ((lo, hi), ...) open intervals, one per argument
    spacing: str = "uniform"      # "uniform", or "uniform+log": half of the points log-spaced
    source: str = "Dr.Jit"        # "Dr.Jit": function and domain from Dr.Jit's table; "ours"
    drjit_ulp: tuple = (None, None)  # Dr.Jit's own max ulp (float32, float64), for context

    @property
    def arity(self):
        return len(self.domain)


def _real_cbrt(x):
    return mpmath.sign(x) * mpmath.cbrt(abs(x))


def _inverse(f, sign, x, guess):
    """The y with f(y) = x, for f = erf (sign 1) or erfc (sign -1), from a float64 guess y0
    by one third-order step: f(y0 + e) = f(y0) + sign f'(y0) (e - y0 e^2 + O(e^3)) with
    f'(y0) = 2/sqrt(pi) exp(-y0^2). mpmath evaluates erf at the 53-bit y0 about ten times
    faster than mpmath.erfinv solves from scratch; with e ~ 1e-16 y0 the dropped terms are
    below 1e-40 relative."""
    y0 = mpmath.mpf(guess)
    d = (x - f(y0)) / (sign * 2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-y0 * y0))
    return y0 + d + y0 * d * d


def _float64_guess(name, x):
    try:
        import scipy.special
        return getattr(scipy.special, name)(float(x))
    except ImportError:
        with mpmath.workdps(17):
            return float(mpmath.erfinv(x if name == "erfinv" else 1 - x))


def _erfinv(x):
    return _inverse(mpmath.erf, 1, x, _float64_guess("erfinv", x))


def _erfcinv(x):
    return _inverse(mpmath.erfc, -1, x, _float64_guess("erfcinv", x))


# mpmath reference of each builtin, on mpf arguments (looked up by name so that worker
# processes can find them)
REFERENCES = {
    "sin": mpmath.sin, "cos": mpmath.cos, "tan": mpmath.tan, "cot": mpmath.cot,
    "asin": mpmath.asin, "acos": mpmath.acos, "atan": mpmath.atan,
    "sinh": mpmath.sinh, "cosh": mpmath.cosh, "tanh": mpmath.tanh,
    "asinh": mpmath.asinh, "acosh": mpmath.acosh, "atanh": mpmath.atanh,
    "exp": mpmath.exp, "exp2": lambda x: mpmath.power(2, x),
    "log": mpmath.log, "log2": lambda x: mpmath.log(x, 2), "log10": mpmath.log10,
    "erf": mpmath.erf, "erfc": mpmath.erfc, "erfinv": _erfinv, "erfcinv": _erfcinv,
    "cbrt": _real_cbrt, "sqrt": mpmath.sqrt, "pow": mpmath.power, "atan2": mpmath.atan2,
}

TRIG = (-8192.0, 8192.0)
UNIT = (-1.0, 1.0)
LOG = (1e-20, 2e30)

CASES = [
    # Dr.Jit's table (single and double precision), in its order
    Case("sin", "sin", (TRIG,), drjit_ulp=(19, 2)),
    Case("cos", "cos", (TRIG,), drjit_ulp=(47, 2)),
    Case("tan", "tan", (TRIG,), drjit_ulp=(30, 3)),
    Case("cot", "cot", (TRIG,), drjit_ulp=(None, 3)),
    Case("asin", "asin", (UNIT,), drjit_ulp=(2, 1)),
    Case("acos", "acos", (UNIT,), drjit_ulp=(1, 1)),
    Case("atan", "atan", (UNIT,), drjit_ulp=(12, 5)),
    Case("sinh", "sinh", ((-10.0, 10.0),), drjit_ulp=(3, 2)),
    Case("cosh", "cosh", ((-10.0, 10.0),), drjit_ulp=(4, 2)),
    Case("tanh", "tanh", ((-10.0, 10.0),), drjit_ulp=(7, 3)),
    Case("asinh", "asinh", ((-30.0, 30.0),), drjit_ulp=(2, 2)),
    Case("acosh", "acosh", ((1.0, 10.0),), drjit_ulp=(3, 5)),
    Case("atanh", "atanh", (UNIT,), drjit_ulp=(1, 2)),
    Case("exp", "exp", ((-20.0, 30.0),), drjit_ulp=(1, 2)),
    Case("log", "log", (LOG,), spacing="uniform+log", drjit_ulp=(1, 1)),
    Case("erf", "erf", (UNIT,), drjit_ulp=(4, 5)),
    Case("erfc", "erfc", (UNIT,), drjit_ulp=(11, 16)),
    # weft builtins (or builtins on their way) that the table lacks, on domains of our choosing
    Case("log (near 1)", "log", ((0.5, 2.0),), source="ours"),
    Case("log2", "log2", (LOG,), spacing="uniform+log", source="ours"),
    Case("log10", "log10", (LOG,), spacing="uniform+log", source="ours"),
    Case("exp2", "exp2", ((-20.0, 30.0),), source="ours"),
    Case("erfc (tail)", "erfc", ((1.0, 9.0),), source="ours"),
    Case("erfinv", "erfinv", (UNIT,), source="ours"),
    Case("erfcinv", "erfcinv", ((0.0, 2.0),), source="ours"),
    Case("cbrt", "cbrt", ((-10.0, 10.0),), source="ours"),
    Case("pow", "pow", ((0.1, 10.0), (-10.0, 10.0)), source="ours"),
    Case("atan2", "atan2", ((-10.0, 10.0), (-10.0, 10.0)), source="ours"),
    Case("sqrt (control)", "sqrt", (LOG,), spacing="uniform+log", source="ours"),
]


# ------------------------------------------------------------------------------ sample points
def sample(case, dtype, n, rng):
    """``n`` points per argument inside the open domain, rounded to ``dtype`` (the exact values
    both weft and mpmath see)."""
    cols = []
    for lo, hi in case.domain:
        u = rng.uniform(lo, hi, n)
        if case.spacing == "uniform+log":
            # exp(t) alone would make log(x) = t + tiny, nearly a float64 number, and float64
            # log look twice as accurate as it is: a random relative jitter of 2^-20 breaks that
            k = n // 2
            t = rng.uniform(np.log(lo), np.log(hi), n - k)
            u[k:] = np.exp(t) * (1.0 + rng.uniform(-2.0 ** -20, 2.0 ** -20, n - k))
        x = u.astype(dtype)
        lo_in = np.nextafter(dtype(lo), dtype(hi))   # rounding may reach an end point:
        hi_in = np.nextafter(dtype(hi), dtype(lo))   # move it one step inside
        cols.append(np.clip(x, lo_in, hi_in))
    return cols


# ------------------------------------------------------------------------------ weft kernels
_KERNEL = """
@wp.kernel
def {name}({params}, y: wp.array(dtype=wp.{dtype})):
    i = wp.tid()
    y[i] = wp.{builtin}({args})
"""


def build_kernels(wp, builtins_by_arity, dtypes):
    """One kernel ``acc_<builtin>_<dtype>`` per builtin and precision, written to a temporary
    module (weft reads kernel source from files) and imported; returns name -> kernel."""
    parts = ["import weft as wp\n"]
    for builtin, arity in sorted(builtins_by_arity.items()):
        for dt in dtypes:
            parts.append(_KERNEL.format(
                name=f"acc_{builtin}_{dt}", dtype=dt, builtin=builtin,
                params=", ".join(f"a{k}: wp.array(dtype=wp.{dt})" for k in range(arity)),
                args=", ".join(f"a{k}[i]" for k in range(arity))))
    folder = tempfile.mkdtemp(prefix="weft-accuracy-")
    atexit.register(shutil.rmtree, folder, True)
    path = os.path.join(folder, "weft_accuracy_kernels.py")
    with open(path, "w") as f:
        f.write("\n".join(parts))
    spec = importlib.util.spec_from_file_location("weft_accuracy_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {k: v for k, v in vars(mod).items() if k.startswith("acc_")}


_LIBM = {"sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh",
         "acosh", "atanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow",
         "cbrt", "sqrt", "erf", "erfc", "hypot"}


def math_calls(kernel, cols, dtype):
    """The libm functions the compiled forward kernel calls (``sinf`` works in float32,
    ``sin`` in float64) and the square-root instructions it uses, read from its machine code.

    Numba keeps no machine code text for code loaded from its cache, so the generated function
    (the serial twin: the threaded entry hands a chunk function to the threads) is compiled
    once more, uncached, and run once on the first points."""
    import numba
    fn = kernel.entry("forward", "serial")
    drop = ("cache", "parallel", "nopython")
    fresh = numba.njit(**{k: v for k, v in fn.targetoptions.items() if k not in drop})(
        fn.py_func)
    fresh((1,), *(c[:1].copy() for c in cols), np.zeros(1, dtype))
    asm = fresh.inspect_asm(fresh.signatures[0])
    names = set(re.findall(r"\$(\w+),", asm)) | set(re.findall(r"\bcall\w*\s+(\w+)", asm))
    names = {n[1:] if n[:1] == "_" else n for n in names}    # macOS prefixes symbols with _
    out = {n for n in names if n in _LIBM or (n[-1:] == "f" and n[:-1] in _LIBM)}
    out |= set(re.findall(r"\bv?(sqrts[sd])\b", asm))
    return sorted(out)


def calls_double(calls):
    """Whether any of ``math_calls`` works in double precision."""
    return any(c in _LIBM or c == "sqrtsd" for c in calls)


def run_kernel(wp, kernel, cols, dtype):
    """The builtin at every point, computed by ``kernel`` through ``wp.launch`` on the CPU."""
    n = len(cols[0])
    args = [wp.array(c, dtype=getattr(wp, dtype.__name__)) for c in cols]
    out = wp.zeros(n, dtype=getattr(wp, dtype.__name__))
    wp.launch(kernel, dim=n, inputs=args, outputs=[out])
    return out.numpy().copy()


# ------------------------------------------------------------------------------ references
def _reference_chunk(key, dps, cols):
    """(hi, lo) float64 arrays with hi + lo the function at the points to about 106 bits."""
    f = REFERENCES[key]
    n = len(cols[0])
    hi, lo = np.empty(n), np.empty(n)
    with mpmath.workdps(dps):
        mpf = mpmath.mpf
        for j, args in enumerate(zip(*cols)):
            r = f(*(mpf(a) for a in args))     # mpf(float) is exact
            h = float(r)                        # nearest float64
            hi[j] = h
            lo[j] = float(r - h) if np.isfinite(h) else 0.0
    return hi, lo


def reference(key, cols, dps, pool=None, chunk=5000):
    cols = [np.asarray(c, dtype=np.float64).tolist() for c in cols]
    if pool is None:
        return _reference_chunk(key, dps, cols)
    n = len(cols[0])
    jobs = [(key, dps, [c[s:s + chunk] for c in cols]) for s in range(0, n, chunk)]
    parts = pool.starmap(_reference_chunk, jobs)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


# ------------------------------------------------------------------------------ error measures
def error_stats(got, hi, lo, cols, dtype):
    """Mean/max absolute, relative and ulp error of ``got`` (``dtype``) against hi + lo.

    Points where weft or the reference is not finite (overflow) are left out and counted."""
    g = got.astype(np.float64)
    ok = np.isfinite(g) & np.isfinite(hi)
    ref_t = (hi + lo).astype(dtype)                  # the correctly rounded result
    d = np.abs((g - hi) - lo)                        # g - hi is exact when they are close
    ulp = np.spacing(np.abs(ref_t)).astype(np.float64)
    ulp_err = d / ulp
    nz = ok & (hi != 0)
    rel = d[nz] / np.abs(hi[nz])
    e = ulp_err[ok]
    worst = int(np.flatnonzero(ok)[np.argmax(e)]) if e.size else 0
    return dict(
        n=len(got), nonfinite=int((~ok & (g != hi)).sum()),  # equal infinities are fine
        abs_mean=float(d[ok].mean()), abs_max=float(d[ok].max()),
        rel_mean=float(rel.mean()) if rel.size else float("nan"),
        rel_max=float(rel.max()) if rel.size else float("nan"),
        ulp_mean=float(e.mean()), ulp_max=float(e.max()),
        exact=float((got[ok] == ref_t[ok]).mean()),
        worst_x=tuple(float(c[worst]) for c in cols),
    )


# ------------------------------------------------------------------------------ tables
def _g(v, digits=2):
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "-"
    if v == 0:
        return "0"
    text = f"{v:.{digits + 1}g}" if 1e-3 <= abs(v) < 1e4 else f"{v:.{digits}g}"
    return text.replace("e-0", "e-").replace("e+0", "e+").replace("e+", "e")


def _num(v):
    return format(v, "g").replace("e+", "e")


def _domain(case):
    names = ("x", "y") if case.arity == 2 else ("x",)
    if case.builtin == "atan2":
        names = ("y", "x")
    text = ", ".join((f"{v} in " if case.arity > 1 else "") + f"({_num(lo)}, {_num(hi)})"
                     for v, (lo, hi) in zip(names, case.domain))
    return text + (" uniform+log" if case.spacing != "uniform" else "")


def table_rows(results, dtype):
    rows = []
    p = 0 if dtype == "float32" else 1
    for r in (r for r in results if r["dtype"] == dtype):
        s, c = r["stats"], r["case"]
        worst = ", ".join(_g(v, 8) for v in s["worst_x"])
        row = [c.label, _domain(c), c.source, _g(s["abs_mean"]), _g(s["abs_max"]),
               _g(s["rel_mean"]), _g(s["rel_max"]), _g(s["ulp_mean"]), _g(s["ulp_max"]),
               f"{100 * s['exact']:.2f}", worst, _g(c.drjit_ulp[p]),
               " ".join(r["calls"]) if r["calls"] is not None else "-"]
        rows.append(row)
    return rows


HEAD = ["function", "domain", "source", "abs mean", "abs max", "rel mean", "rel max",
        "ulp mean", "ulp max", "% exact", "worst x", "Dr.Jit ulp max", "calls"]


def format_text(head, rows):
    w = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
    return "\n".join("  ".join(c.ljust(w[i]) for i, c in enumerate(r)) for r in [head] + rows)


def format_markdown(head, rows):
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


# ------------------------------------------------------------------------------ the document
def _at(result):
    xs = [_g(v, 8) for v in result["stats"]["worst_x"]]
    return f"x = {xs[0]}" if len(xs) == 1 else "(" + ", ".join(xs) + ")"


def findings(results):
    """Short notes computed from the measurements (so they stay true when rerun)."""
    out = []
    for dtype in PRECISIONS:
        rs = [r for r in results if r["dtype"] == dtype]
        if not rs:
            continue
        worst = sorted(rs, key=lambda r: -r["stats"]["ulp_max"])[:3]
        out.append(f"- {dtype}: largest max ulp errors: " + ", ".join(
            f"`{r['case'].label}` {_g(r['stats']['ulp_max'])} ulp at {_at(r)}"
            for r in worst) + ".")
        good = [r["case"].label for r in rs if r["stats"]["ulp_max"] <= 1.0]
        if good:
            out.append(f"- {dtype}: within 1 ulp everywhere sampled: "
                       + ", ".join(f"`{g}`" for g in good) + ".")
    compared = [r for r in results if r["case"].drjit_ulp[PRECISIONS.index(r["dtype"])]]
    above = [r for r in compared
             if r["stats"]["ulp_max"] > r["case"].drjit_ulp[PRECISIONS.index(r["dtype"])]]
    if compared:
        out.append(f"- Against the max ulp Dr.Jit reports for its own implementations: "
                   f"{len(compared) - len(above)} of {len(compared)} rows at or below it"
                   + ("" if not above else "; above it: " + ", ".join(
                       f"`{r['case'].label}` {r['dtype']}" for r in above)) + ".")
    f64 = [r for r in results if r["dtype"] == "float32" and r["calls"]
           and calls_double(r["calls"])]
    if f64:
        out.append("- float32 builtins computed in double precision and rounded to float32 "
                   "(their float32 kernels call double-precision math): " + ", ".join(
                       f"`{r['case'].label}` ({' '.join(r['calls'])}; "
                       f"{100 * r['stats']['exact']:.2f}% correctly rounded)" for r in f64) + ".")
    nonfin = [r for r in results if r["stats"]["nonfinite"]]
    for r in nonfin:
        out.append(f"- `{r['case'].label}` {r['dtype']}: {r['stats']['nonfinite']} points with a "
                   "non-finite result where the reference is finite (or the reverse), left out.")
    return out


def versions():
    import llvmlite
    import numba
    import weft
    return (f"weft {weft.__version__}, numba {numba.__version__}, llvmlite "
            f"{llvmlite.__version__}, numpy {np.__version__}, mpmath {mpmath.__version__}, "
            f"Python {platform.python_version()}, {' '.join(platform.libc_ver())} libm, "
            f"{platform.machine()}")


def markdown_document(results, skipped, args, seconds):
    today = datetime.date.today().isoformat()
    parts = [
        "# Accuracy of the transcendental builtins",
        "",
        "Generated by `benchmarks/accuracy.py` on " + today + " (" + versions() + "), in "
        f"{seconds / 60:.1f} minutes; {args.points:,} points per function and precision.",
        "",
        "## How it was measured",
        "",
        "- Each builtin runs inside a weft kernel (`y[i] = wp.<name>(x[i])`) launched with "
        "`wp.launch` on the CPU, so what is measured is the generated Numba code users run: "
        "Numba lowers `wp.sin` and friends to LLVM intrinsics or to calls into the C library's "
        "libm (`sinf`, `erff`, ...), so these numbers are mostly those of the platform's libm.",
        "- Sample points are drawn uniformly from each domain with a fixed seed "
        f"(`--seed {args.seed}`); rows marked `uniform+log` draw half of their points "
        "log-uniformly, so that a domain spanning 50 decades is covered at every scale. The "
        "points are rounded to the precision tested, and these exact values are what both "
        "weft and the reference see. Domains are open; a point that rounds onto an end point "
        "is moved one step inside.",
        f"- The reference is mpmath {mpmath.__version__} at {args.dps} significant digits, "
        "evaluated at every point and kept as a double-double (about 106 bits).",
        "- Absolute error |got - ref|; relative error |got - ref| / |ref|; ulp error "
        "|got - ref| / ulp, where ulp is `numpy.spacing` of the reference rounded to the "
        "precision tested. `% exact` is the share of results that are the correctly rounded "
        "reference (0.5 ulp or less). `worst x` is the input of the largest ulp error.",
        "- `source`: `Dr.Jit` rows use the functions and domains of the table in Dr.Jit's "
        "documentation (\"Accuracy of transcendental operations\"); `ours` rows are weft builtins "
        "missing from that table (or a second domain of one that is in it) on domains we chose. "
        "`Dr.Jit ulp max` is the max ulp error Dr.Jit reports for its *own* implementations "
        "(the second number of its max relative error column), given for context only.",
        "- `calls`: the libm functions the compiled kernel calls, read from its machine code "
        "(Numba's `inspect_asm` of the generated function, compiled once more uncached): "
        "`sinf` works in float32, `sin` in float64; `sqrtss`/`sqrtsd` are the float32/float64 "
        "square-root instructions. A float32 row calling double-precision functions computes "
        "in float64 and rounds the result.",
        "",
    ]
    for dtype in PRECISIONS:
        rows = table_rows(results, dtype)
        if rows:
            parts += [f"## {dtype}", "", format_markdown(HEAD, rows), ""]
    parts += [
        "## Reading the tables",
        "",
        "- A correctly rounded function scores at most 0.5 ulp, about 0.25 on average; "
        "`sqrt (control)`, which IEEE 754 requires to be correctly rounded, checks the "
        "measurement itself.",
        "- Absolute errors scale with the result: exp's float32 max of about 5e5 is half an "
        "ulp of e^30 (1e13), sqrt's is at 2e30, and tan's comes from points next to its "
        "poles. For these, read the relative and ulp columns.",
        "- Relative error is undefined where the reference is exactly zero (such points are "
        "left out of the relative columns only) and grows without bound near the zeros of a "
        "function that computes them with an absolute rather than relative error. Dr.Jit's "
        "float32 maxima of 19 and 47 ulp for sin and cos are of that kind: its source comments "
        "place them at x = -6374.29, next to 2029 pi, and x = -6199.93, next to 1973.5 pi. "
        "The libm functions weft calls reduce such arguments accurately, which shows in the "
        "sin, cos and tan rows.",
        "- Dr.Jit's mean error for log, 0.0013 ulp, is below the 0.25 ulp of even a correctly "
        "rounded log on random inputs, probably an effect of its sampling: the log of a point "
        "drawn as exp(t) is within a small fraction of an ulp of the float t, and measured "
        "that way float64 log showed a mean of 0.14 ulp here too. The log-spaced points here "
        "get a random relative jitter of 2^-20 against it.",
        "",
        "## Findings",
        "",
        *findings(results),
    ]
    if skipped:
        parts += ["", "Not measured, because `wp` has no such builtin yet (rerun the script "
                  "once it has): " + ", ".join(f"`{s}`" for s in skipped) + "."]
    parts += ["", "## Regenerating this page", "",
              "Run `python benchmarks/accuracy.py --write docs/accuracy.md` from the repository "
              "root in the project's virtual environment (options: `--points N` per function "
              "and precision, `--only sin,exp` for a subset, `--jobs 2` to spread the mpmath "
              "references over processes, `--dps` for the reference precision). The script "
              "notes builtins `wp` lacks and skips them, so a rerun after new builtins land "
              "adds their rows. `tests/stdlib/test_accuracy_script.py` runs it on a few points "
              "and asserts error bounds for `sin` and `exp`. The fast_math section below is "
              "written by `python benchmarks/accuracy_fastmath.py --write docs/accuracy.md`; "
              "this script keeps it when it rewrites the page.", ""]
    return "\n".join(parts)


# ------------------------------------------------------------------------------ main
def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=DEFAULT_POINTS,
                    help="sample points per function and precision")
    ap.add_argument("--only", default="", help="comma-separated builtins or row labels")
    ap.add_argument("--precision", default=",".join(PRECISIONS),
                    help="float32, float64 or both (comma-separated)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dps", type=int, default=DEFAULT_DPS, help="mpmath decimal digits")
    ap.add_argument("--jobs", type=int, default=1, help="processes for the mpmath references")
    ap.add_argument("--write", default="", help="write the Markdown document to this path")
    ap.add_argument("--quiet", action="store_true", help="print no tables")
    ap.add_argument("--no-calls", action="store_true",
                    help="skip reading the kernels' machine code for the calls column")
    return ap.parse_args(argv)


def main(argv=None):
    """Run the measurements; returns a list of {case, dtype, stats, calls, seconds} dicts."""
    args = parse_args(argv)
    import weft as wp
    t_start = time.perf_counter()
    say = (lambda *a: None) if args.quiet else print
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    cases = [c for c in CASES if not only or c.label in only or c.builtin in only]
    dtypes = [d.strip() for d in args.precision.split(",") if d.strip()]
    skipped = sorted({c.builtin for c in cases if not hasattr(wp, c.builtin)})
    for name in skipped:
        print(f"note: wp.{name} does not exist (yet): skipped")
    cases = [c for c in cases if c.builtin not in skipped]
    kernels = build_kernels(wp, {c.builtin: c.arity for c in cases}, dtypes)

    pool = None
    if args.jobs > 1:
        import multiprocessing
        pool = multiprocessing.get_context("spawn").Pool(args.jobs)
    results = []
    try:
        for case in cases:
            for dtype_name in dtypes:
                dtype = np.dtype(dtype_name).type
                rng = np.random.default_rng(
                    [args.seed, CASES.index(case), PRECISIONS.index(dtype_name)])
                cols = sample(case, dtype, args.points, rng)
                t0 = time.perf_counter()
                kernel = kernels[f"acc_{case.builtin}_{dtype_name}"]
                got = run_kernel(wp, kernel, cols, dtype)
                calls = None if args.no_calls else math_calls(kernel, cols, dtype)
                t1 = time.perf_counter()
                hi, lo = reference(case.builtin, cols, args.dps, pool)
                t2 = time.perf_counter()
                stats = error_stats(got, hi, lo, cols, dtype)
                results.append(dict(case=case, dtype=dtype_name, stats=stats, calls=calls,
                                    seconds=(t1 - t0, t2 - t1)))
                say(f"  {case.label:<16} {dtype_name}: max {stats['ulp_max']:.3g} ulp, mean "
                    f"{stats['ulp_mean']:.3g} ulp  (weft {t1 - t0:.1f} s, mpmath {t2 - t1:.1f} s)")
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    seconds = time.perf_counter() - t_start
    for dtype in dtypes:
        rows = table_rows(results, dtype)
        if rows:
            say(f"\n{dtype} ({args.points:,} points per function; errors against mpmath at "
                f"{args.dps} digits)\n" + format_text(HEAD, rows))
    say("\n" + "\n".join(findings(results)))
    say(f"\n{versions()}; {seconds:.0f} s")
    if args.write:
        kept = _marked_sections(args.write)
        with open(args.write, "w") as f:
            f.write(markdown_document(results, skipped, args, seconds) + kept)
        say(f"wrote {args.write}")
    return results


def _marked_sections(path):
    """Sections of the existing page that other scripts write between their markers
    (``benchmarks/accuracy_fastmath.py``), kept when this script rewrites the page."""
    try:
        old = open(path).read()
    except OSError:
        return ""
    begin, end = "<!-- fast_math:begin -->", "<!-- fast_math:end -->"
    if begin not in old or end not in old:
        return ""
    return "\n" + begin + old.split(begin, 1)[1].split(end, 1)[0] + end + "\n"


if __name__ == "__main__":
    main()
