"""Wrong-type calls of builtins raise KernelTypeError at the call site, naming the builtin, the
argument types given and the signatures that exist; every kernel-language builtin declares its
signatures where it is defined (@builtin_func)."""
import pytest

import weft as wp
from weft.core.errors import KernelError
from weft.stdlib import decomp, interp, linalg, noise, quat
from weft.stdlib.funcs import Function
from weft.stdlib.signatures import _parse, accepts


def test_every_kernel_language_builtin_declares_signatures():
    for module in (quat, linalg, interp, noise, decomp):
        public = {n: v for n, v in vars(module).items()
                  if isinstance(v, Function) and not n.startswith("_")}
        assert public and public.keys() <= module.FUNCS.keys()
        for name, fn in public.items():
            assert fn.signatures, f"{module.__name__}.{name} has no signature"
            assert getattr(wp, name) is fn
            for sig in fn.signatures:
                assert sig.startswith(name + "("), sig
                _parse(sig)


def test_signature_matching():
    f, d = wp.float32, wp.float64
    assert accepts("lerp(a: vec, b: vec, t: Float) -> vec", [wp.vec3, wp.vec3, f])
    assert not accepts("lerp(a: vec, b: vec, t: Float) -> vec", [wp.vec3, wp.vec3d, f])
    assert accepts("lerp(a: vec, b: vec, t: Float) -> vec", [wp.vec3d, wp.vec3d, f], [0, 0, 1])
    assert not accepts("skew(v: vec3) -> mat33", [wp.vec4])
    assert accepts("inverse(m: mat33) -> mat33", [wp.mat33d])
    assert not accepts("trace(m: matN) -> Float", [wp.types.matrix((2, 3), d)])
    assert accepts("svd3(A: mat33, U: mat33, sigma: vec3, V: mat33)  (U, sigma, V are outputs)",
                   [wp.mat33])
    assert accepts("curlnoise(state: uint32, xy: vec2[, octaves: uint32[, lacunarity: Float"
                   "[, gain: Float]]]) -> vec2", [wp.uint32, wp.vec2])


@wp.kernel
def rotate_vec4(q: wp.quat, v: wp.vec4, out: wp.array(dtype=wp.vec3)):
    out[0] = wp.quat_rotate(q, v)


@wp.kernel
def cross_vec2(a: wp.vec2, out: wp.array(dtype=wp.vec2)):
    out[0] = wp.cross(a, a)


def test_wrong_type_call_of_a_kernel_language_builtin():
    with pytest.raises(KernelError) as e:
        rotate_vec4.compiled()
    msg = str(e.value)
    assert "no signature of 'wp.quat_rotate' accepts (quatf, vec4f)" in msg
    assert "quat_rotate(q: quat, x: vec3) -> vec3" in msg
    assert "test_signatures.py" in msg and "out[0] = wp.quat_rotate(q, v)" in msg and "^" in msg


def test_wrong_type_call_of_a_primitive_builtin():
    with pytest.raises(KernelError) as e:
        cross_vec2.compiled()
    msg = str(e.value)
    assert "no signature of 'cross' accepts (vec2f, vec2f)" in msg
    assert "out[0] = wp.cross(a, a)" in msg and "^" in msg
