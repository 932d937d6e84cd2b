"""weft's own funcs (declared in the kernel language inside weft: ``quat_rotate``, the
transforms, the decompositions, noise, the mesh queries' differentiable part) compile once per
cache, in modules of their own (``assemble.library_modules``, ``runtime.cache``): every
generated module that calls one binds it there, and the module's text is unchanged."""
import os
import subprocess
import sys
import textwrap
import ast

import numpy as np
import pytest

import weft as wp
from weft.runtime import cache
from weft.transpiler import assemble, pipeline
from weft.transpiler.state import CompileOptions, CompileState
from weft.transpiler.targets import TARGETS


def rotate(q, v):
    """quat_rotate as Warp defines it, in float64 NumPy (q = (x, y, z, w), not normalised)."""
    u, w = q[:3], q[3]
    return v * (2.0 * w * w - 1.0) + u * (2.0 * np.dot(u, v)) + np.cross(u, v) * (2.0 * w)


@wp.kernel
def rotate_d(q: wp.array(dtype=wp.quatd), v: wp.array(dtype=wp.vec3d),
             out: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    out[i] = wp.quat_rotate(q[i], v[i])


@wp.kernel
def rotate_f_one(q: wp.array(dtype=wp.quat), v: wp.array(dtype=wp.vec3),
                 out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = wp.quat_rotate(q[i], v[i])


@wp.func
def twice_rotated(q: wp.quat, v: wp.vec3):
    return wp.quat_rotate(q, wp.quat_rotate(q, v))


@wp.kernel
def rotate_f_two(q: wp.array(dtype=wp.quat), v: wp.array(dtype=wp.vec3),
                 out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = twice_rotated(q[i], v[i]) - wp.quat_rotate(q[i], v[i])


def _module(kernel):
    return kernel.compiled("cpu").module


def test_a_library_func_is_one_function_for_every_module():
    rng = np.random.default_rng(3)
    q = wp.array(rng.normal(size=(5, 4)).astype(np.float32), dtype=wp.quat)
    v = wp.array(rng.normal(size=(5, 3)).astype(np.float32), dtype=wp.vec3)
    out1 = wp.zeros(5, dtype=wp.vec3)
    out2 = wp.zeros(5, dtype=wp.vec3)
    wp.launch(rotate_f_one, 5, inputs=[q, v], outputs=[out1])
    wp.launch(rotate_f_two, 5, inputs=[q, v], outputs=[out2])
    m1, m2 = _module(rotate_f_one), _module(rotate_f_two)
    assert m1 is not m2
    name = "quat_rotate__quatf_vec3f"
    for suffix in ("", "__adj", "__jvp"):
        f1, f2 = getattr(m1, name + suffix), getattr(m2, name + suffix)
        assert f1 is f2, suffix
        assert f1.py_func.__module__.startswith("weft_generated.library.quat_rotate__quatf_vec3f_")
    # the user's func stays in its own module, and calls the library's quat_rotate
    assert m2.twice_rotated.py_func.__module__ == m2.__name__
    # the texts still define every function (what source() shows and weft transpile writes)
    assert f"def {name}(q, x):" in rotate_f_one.source()
    qs, vs = q.numpy().astype(np.float64), v.numpy().astype(np.float64)
    want1 = np.array([rotate(a, b) for a, b in zip(qs, vs)])
    want2 = np.array([rotate(a, rotate(a, b)) - rotate(a, b) for a, b in zip(qs, vs)])
    np.testing.assert_allclose(out1.numpy(), want1, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out2.numpy(), want2, rtol=1e-4, atol=1e-4)


def test_values_and_gradients_through_a_library_module():
    rng = np.random.default_rng(4)
    qs, vs = rng.normal(size=(3, 4)), rng.normal(size=(3, 3))
    w = rng.normal(size=(3, 3))  # the output's adjoint
    q = wp.array(qs, dtype=wp.quatd, requires_grad=True)
    v = wp.array(vs, dtype=wp.vec3d, requires_grad=True)
    out = wp.zeros(3, dtype=wp.vec3d, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(rotate_d, 3, inputs=[q, v], outputs=[out])
    tape.backward(grads={out: wp.array(w, dtype=wp.vec3d)})
    assert _module(rotate_d).quat_rotate__quatd_vec3d__adj.py_func.__module__.startswith(
        "weft_generated.library.")
    np.testing.assert_allclose(out.numpy(), [rotate(a, b) for a, b in zip(qs, vs)], rtol=1e-12)
    h = 1e-6
    for arr, xs, other in ((q, qs, vs), (v, vs, qs)):
        fd = np.zeros_like(xs)
        for i in range(xs.shape[0]):
            for j in range(xs.shape[1]):
                lo, hi = xs.copy(), xs.copy()
                lo[i, j] -= h
                hi[i, j] += h
                f = (lambda a: rotate(a[i], other[i])) if arr is q else \
                    (lambda a: rotate(other[i], a[i]))
                fd[i, j] = np.dot(w[i], f(hi) - f(lo)) / (2 * h)
        np.testing.assert_allclose(arr.grad.numpy(), fd, rtol=1e-6, atol=1e-8)


def test_the_module_text_is_the_same_with_and_without_library_modules():
    texts = {}
    for share in (False, True):
        state = CompileState(roots=[rotate_f_two], options=CompileOptions())
        state.share_library = share
        state = pipeline.run(state)
        texts[share] = state.source
        if share:
            library = state.library
    assert texts[False] == texts[True]
    # one library module for quat_rotate; none for the user's func
    (name, (names, text)), = library.items()
    assert names == ("quat_rotate__quatf_vec3f", "quat_rotate__quatf_vec3f__adj",
                     "quat_rotate__quatf_vec3f__jvp")
    assert "def twice_rotated" not in text
    # each function of it is written as the module writes it
    for n in names:
        start = text.index(f"def {n}(")
        assert text[start:].split("\n\n@")[0].rstrip() in texts[True]


def test_a_func_reading_a_global_of_its_module_is_left_in_its_module():
    state = CompileState(roots=[rotate_f_one], options=CompileOptions())
    state.share_library = True
    state = pipeline.run(state)
    assert len(state.library) == 1
    fdef = next(d for d in state.defs if getattr(d, "name", "") == "quat_rotate__quatf_vec3f")
    assert assemble._free_names(fdef) == {"numba", "float32"}  # (numba: the decorator)
    fdef.body.insert(0, ast.parse("_t = some_constant_of_the_module").body[0])
    assert "some_constant_of_the_module" in assemble._free_names(fdef)
    assert assemble.library_modules(state, state.defs, TARGETS["cpu"]) == {}


PROGRAM = textwrap.dedent("""
    import numpy as np, weft as wp
    from weft.runtime.cache import STATS
    @wp.kernel
    def k(q: wp.array(dtype=wp.quat), v: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        out[i] = wp.quat_rotate_inv(q[i], v[i])
    rng = np.random.default_rng(0)
    q = wp.array(rng.normal(size=(4, 4)).astype(np.float32), dtype=wp.quat, requires_grad=True)
    v = wp.array(rng.normal(size=(4, 3)).astype(np.float32), dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(4, dtype=wp.vec3, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k, 4, inputs=[q, v], outputs=[out])
    out.grad.fill_(1.0)
    tape.backward()
    print(out.numpy().tolist(), q.grad.numpy().tolist(), v.grad.numpy().tolist())
    mod = k.compiled("cpu").module
    print(mod.quat_rotate_inv__quatf_vec3f__adj.py_func.__module__.split(".")[1])
    print(len(STATS["transpiled"]), len(STATS["compiled"]))
""")


@pytest.mark.uncached
def test_new_processes_load_library_modules_and_rebuild_what_is_damaged(tmp_path):
    """Cold, then warm (nothing transpiled or compiled), then with the library module damaged,
    then with the module's record of its library garbled: each damage is reported and the
    module built again (its machine code was linked against the library's), with the same
    numbers."""
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if k != "WEFT_EXPECT_WARM"}
    env["WEFT_CACHE_DIR"] = str(tmp_path / "cache")
    env["WEFT_BACKGROUND_COMPILE"] = "0"

    def run():
        r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env,
                           timeout=300)
        assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
        return r.stdout.splitlines(), r.stderr

    cold, _ = run()
    warm, _ = run()
    assert cold[1] == warm[1] == "library"
    assert cold[2] != "0 0" and warm[2] == "0 0"
    assert cold[0] == warm[0]
    folder = tmp_path / "cache" / cache.LIBRARY
    (lib,) = [p for p in folder.iterdir() if p.name.endswith(".py")]
    lib.write_text(lib.read_text() + "\n# edited\n")
    damaged, err = run()
    assert "needs the library module" in err and "does not match the hash" in err
    assert damaged[0] == cold[0] and damaged[1] == "library" and damaged[2] != "0 0"
    assert run()[0][2] == "0 0"  # repaired
    (record,) = (tmp_path / "cache").glob("k_*.py.sha256")
    digest, table = record.read_text().splitlines()
    assert "quat_rotate_inv__quatf_vec3f__adj" in table
    record.write_text(digest + "\n" + table[:-3] + "\n")
    garbled, err = run()
    assert "does not match the hash" in err
    assert garbled[0] == cold[0] and garbled[1] == "library" and garbled[2] != "0 0"


@wp.kernel(module="unique", module_options={"fast_math": True})
def rotate_f_fast(q: wp.array(dtype=wp.quat), v: wp.array(dtype=wp.vec3),
                  out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = wp.quat_rotate(q[i], v[i])


def test_fast_math_modules_have_library_modules_of_their_own():
    """A ``fast_math`` module's funcs compile with ``fastmath=True``: their library module is
    another text, and so another module, than the plain one."""
    rng = np.random.default_rng(5)
    q = wp.array(rng.normal(size=(3, 4)).astype(np.float32), dtype=wp.quat)
    v = wp.array(rng.normal(size=(3, 3)).astype(np.float32), dtype=wp.vec3)
    out, plain = wp.zeros(3, dtype=wp.vec3), wp.zeros(3, dtype=wp.vec3)
    wp.launch(rotate_f_fast, 3, inputs=[q, v], outputs=[out])
    wp.launch(rotate_f_one, 3, inputs=[q, v], outputs=[plain])
    fast = _module(rotate_f_fast).quat_rotate__quatf_vec3f
    assert fast.py_func.__module__.startswith("weft_generated.library.")
    assert fast is not _module(rotate_f_one).quat_rotate__quatf_vec3f
    assert fast.targetoptions.get("fastmath")
    np.testing.assert_allclose(out.numpy(), plain.numpy(), rtol=1e-5, atol=1e-6)
