"""Walk every builtin written in the kernel language and check its derivatives.

For each public func of the kernel-language stdlib modules and each of its declared signatures
(``weft/stdlib/signatures.py``) with float inputs, this writes a float64 kernel that applies the
builtin to array elements (outputs of Warp's output-argument builtins are stored too), then
checks with ``tests/gradcheck.py``: the adjoint against ``J^T dy`` and the tangent against
``J dx`` from central finite differences of the kernel, and the dot-product test between them.

It runs as plain Python (``NUMBA_DISABLE_JIT=1``, set by ``test_kernel_language_registry.py``,
which runs this file in a subprocess): compiling some sixty kernels would take minutes, and the
generated code is the same either way. Prints one line per signature: ``OK``, ``FAIL`` or
``SKIP`` with the reason, then ``COVERED name ...`` with every builtin checked.
"""
from __future__ import annotations

import importlib.util
import os
import re
import sys
import tempfile
import traceback
import zlib

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import weft as wp  # noqa: E402
from tests.gradcheck import Arr, check  # noqa: E402
from weft.stdlib import decomp, interp, linalg, noise, quat, spatial  # noqa: E402

MODULES = (quat, linalg, interp, noise, decomp, spatial)
WORD_TYPES = {"Float": "wp.float64", "quat": "wp.quatd", "transform": "wp.transformd",
              "vec": "wp.vec3d", "mat": "wp.mat33d", "matN": "wp.mat33d"}
INTS = {"Int": ("int", 3), "uint32": ("wp.uint32", 42)}
# integer arguments of builtins that take axis indices (an axis sequence, in order)
INT_ARGS = {"quat_to_euler": [2, 0, 1], "quat_from_euler": [1, 2, 0]}
# inputs where random normal values leave the builtin's domain or sit on a kink
SPECIAL = {
    "smoothstep": lambda rng, n: [np.full(n, -0.5), np.full(n, 1.5), rng.uniform(0.1, 0.9, n)],
    "quat_slerp": lambda rng, n: [_unit_quats(rng, n), _unit_quats(rng, n),
                                  rng.uniform(0.2, 0.8, n)],
    "quat_from_matrix": lambda rng, n: [_rotations(rng, n)],
    "eig3": lambda rng, n: [_symmetric(rng, n)],
}


def _unit_quats(rng, n):
    q = rng.normal(size=(n, 4))
    q[:, 3] = np.abs(q[:, 3]) + 0.5  # away from 180-degree rotations (an axis-angle kink)
    return q / np.linalg.norm(q, axis=1)[:, None]


def _rotations(rng, n):
    from scipy.spatial.transform import Rotation
    return Rotation.from_quat(_unit_quats(rng, n)).as_matrix()


def _symmetric(rng, n):
    a = rng.normal(size=(n, 3, 3))
    return a + a.transpose(0, 2, 1) + np.diag([3.0, 0.0, -3.0])  # well-separated eigenvalues


def type_of(word):
    """The float64 type (source text) for a signature's type word."""
    if word in WORD_TYPES:
        return WORD_TYPES[word]
    if re.fullmatch(r"vec\d|mat\d\d", word):
        return f"{word}d_"  # a module-level alias (see ALIASES)
    raise ValueError(f"no float64 type for type word {word!r}")


ALIASES = "".join(f"vec{n}d_ = wp.types.vector({n}, wp.float64)\n" for n in range(1, 7)) + \
    "".join(f"mat{r}{c}d_ = wp.types.matrix(({r}, {c}), wp.float64)\n"
            for r in range(1, 7) for c in range(1, 7))


def parse(sig):
    """(inputs [(name, word)], outputs [(name, word)], result word or None); optional
    parameters (in brackets) are left out."""
    head, _, tail = sig.partition("->")
    inner = head[head.index("(") + 1:head.rindex(")")]
    outs = re.search(r"\(([\w, ]+) (?:are|is) outputs\)", sig)
    out_names = set(outs.group(1).replace(" ", "").split(",")) if outs else set()
    inputs, outputs = [], []
    for m in re.finditer(r"(\[?,?\s*)(\w+): (\w+)", inner):
        if "[" in m.group(1):
            break
        (outputs if m.group(2) in out_names else inputs).append((m.group(2), m.group(3)))
    tail = tail.strip()
    if tail.startswith("("):  # several results: a tuple of type words
        result = tail[1:tail.index(")")].replace(" ", "").split(",")
    else:
        result = tail.split()[0] if tail else None
    return inputs, outputs, result


def kernel_source(kname, name, sig):
    """Source of a kernel applying builtin ``name`` as ``sig`` declares, or None when the
    signature has no float input (nothing to differentiate) or takes a dtype."""
    if "dtype" in sig:
        return None
    inputs, outputs, result = parse(sig)
    if not any(w not in INTS for _, w in inputs):
        return None
    params, args = [], []
    for k, (_, w) in enumerate(inputs):
        if w in INTS:
            params.append(f"s{k}: {INTS[w][0]}")
            args.append(f"s{k}")
        else:
            params.append(f"a{k}: wp.array(dtype={type_of(w)})")
            args.append(f"a{k}[i]")
    body = []
    results = [(f"o{k}", w) for k, (_, w) in enumerate(outputs)]
    for var, w in results:
        body.append(f"    {var} = {type_of(w)}()" if w != "Float" else
                    f"    {var} = wp.float64(0.0)")
    call = f"wp.{name}({', '.join(args + [v for v, _ in results])})"
    if isinstance(result, list):
        results = [(f"r{k}", w) for k, w in enumerate(result)]
        body.append(f"    {', '.join(v for v, _ in results)} = {call}")
    elif result is not None:
        results = [("r", result)]
        body.append(f"    r = {call}")
    else:
        body.append(f"    {call}")
    for var, w in results:
        params.append(f"out_{var}: wp.array(dtype={type_of(w)})")
        body.append(f"    out_{var}[i] = {var}")
    return (f"@wp.kernel\ndef {kname}({', '.join(params)}):\n    i = wp.tid()\n"
            + "\n".join(body) + "\n")


def shape_of(type_src):
    ns = {"wp": wp}
    exec(ALIASES, ns)  # noqa: S102 - our own type text
    t = eval(type_src, ns)  # noqa: S307
    return t, tuple(getattr(t, "_shape_", ()))


def run_case(kernel, name, sig, rng, n=2):
    inputs, outputs, result = parse(sig)
    special = SPECIAL.get(name)
    values = special(rng, n) if special else None
    ins, k_float = [], 0
    ints = list(INT_ARGS.get(name, []))
    for k, (_, w) in enumerate(inputs):
        if w in INTS:
            ins.append(ints.pop(0) if ints else INTS[w][1])
            continue
        t, shape = shape_of(type_of(w))
        if values is not None:
            data = np.asarray(values[k_float], dtype=np.float64)
            if data.ndim == 3 and data.shape[1:] != shape:  # the block of a larger identity
                block, data = data, np.tile(np.eye(*shape), (n, 1, 1))
                data[:, :block.shape[1], :block.shape[2]] = block
            data = data.reshape((n,) + shape)
        elif w == "quat":
            data = _unit_quats(rng, n)
        elif w == "transform":
            data = np.concatenate([rng.normal(size=(n, 3)), _unit_quats(rng, n)], 1)
        elif w.startswith("mat"):
            data = rng.normal(size=(n,) + shape) + 3.0 * np.eye(*shape)  # well conditioned
        else:
            data = rng.uniform(0.3, 1.3, (n,) + shape) * rng.choice([-1, 1], (n,) + shape)
        k_float += 1
        ins.append(Arr(data, t))
    outs = []
    for _, w in (outputs if result is None else [("r", w) for w in result]
                 if isinstance(result, list) else [("r", result)]):
        t, shape = shape_of(type_of(w))
        outs.append(Arr(np.zeros((n,) + shape), t))
    check(kernel, n, ins, outs, rtol=1e-5, atol=1e-7)


def main():
    cases = []
    for module in MODULES:
        for name in sorted(module.FUNCS):
            for j, sig in enumerate(module.FUNCS[name].signatures):
                src = kernel_source(f"k_{name}_{j}", name, sig)
                if src is None:
                    print(f"SKIP {sig}: no float inputs")
                    continue
                cases.append((f"k_{name}_{j}", name, sig, src))
    folder = tempfile.mkdtemp(prefix="weft-walk-")
    path = os.path.join(folder, "walk_kernels.py")
    with open(path, "w") as f:
        f.write("import weft as wp\n\n" + ALIASES + "\n\n" +
                "\n\n".join(src for *_, src in cases))
    spec = importlib.util.spec_from_file_location("walk_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001 - e.g. a signature naming a type with no alias
        print(f"FAIL the generated kernels do not import: {type(e).__name__}: {e}")
        print("COVERED")
        return
    covered = set()
    for kname, name, sig, _ in cases:
        rng = np.random.default_rng(zlib.crc32(sig.encode()))  # the same inputs every run
        try:
            with np.errstate(all="ignore"):
                run_case(getattr(mod, kname), name, sig, rng)
        except Exception as e:  # noqa: BLE001 - reported, and the test fails on it
            msg = " ".join(str(e).split())[:600]
            print(f"FAIL {sig}: {type(e).__name__}: {msg}")
            if os.environ.get("WEFT_WALK_TRACEBACK"):
                traceback.print_exc()
            continue
        covered.add(name)
        print(f"OK {sig}")
    print("COVERED " + " ".join(sorted(covered)))


if __name__ == "__main__":
    main()
