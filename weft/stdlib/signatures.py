"""Signatures of the builtins written in the kernel language (``quat.py``, ``linalg.py``,
``interp.py``, ``noise.py``).

Those builtins are generic funcs, so without a declaration a call with wrong types would fail
deep inside the stdlib func, or worse, be accepted by a branch meant for another size. Every
call is checked against these signatures first; a call no signature accepts raises
``KernelTypeError`` at the call site naming the builtin, the argument types given and the
signatures that exist (``tests/stdlib/test_signatures.py`` checks every public kernel-language
builtin has an entry).

Type words: ``Float`` (a float scalar), ``Int`` (an integer scalar), ``uint32``, ``vecN`` (a
vector of N components), ``vec`` (any vector), ``matRC`` (an R x C matrix), ``mat`` (any
matrix), ``matN`` (any square matrix), ``quat``, ``transform``. Vector, matrix, quaternion and
transform arguments and ``Float`` scalars of one call share one float type (float16, float32 or
float64), as Warp's generic ``Float`` does.
"""
from __future__ import annotations

import re

from .. import types as T

SIGNATURES = {
    # interp.py
    "lerp": ["lerp(a: Float, b: Float, t: Float) -> Float",
             "lerp(a: vec, b: vec, t: Float) -> vec",
             "lerp(a: mat, b: mat, t: Float) -> mat",
             "lerp(a: quat, b: quat, t: Float) -> quat",
             "lerp(a: transform, b: transform, t: Float) -> transform"],
    "smoothstep": ["smoothstep(a: Float, b: Float, x: Float) -> Float"],
    # linalg.py
    "trace": ["trace(m: matN) -> Float"],
    "get_diag": ["get_diag(m: matN) -> vec"],
    "diag": ["diag(d: vec) -> matN"],
    "ddot": ["ddot(a: mat, b: mat) -> Float  (same shape)"],
    "skew": ["skew(v: vec3) -> mat33"],
    "determinant": ["determinant(m: mat22) -> Float", "determinant(m: mat33) -> Float",
                    "determinant(m: mat44) -> Float"],
    "inverse": ["inverse(m: mat22) -> mat22", "inverse(m: mat33) -> mat33",
                "inverse(m: mat44) -> mat44"],
    "cw_div": ["cw_div(a: vec, b: vec) -> vec  (same length)"],
    "matrix_from_rows": ["matrix_from_rows(r0: vec3, r1: vec3, r2: vec3) -> mat33"],
    "matrix_from_cols": ["matrix_from_cols(c0: vec3, c1: vec3, c2: vec3) -> mat33"],
    "spatial_top": ["spatial_top(a: vec6) -> vec3"],
    "spatial_bottom": ["spatial_bottom(a: vec6) -> vec3"],
    "spatial_dot": ["spatial_dot(a: vec6, b: vec6) -> Float"],
    "spatial_cross": ["spatial_cross(a: vec6, b: vec6) -> vec6"],
    "spatial_cross_dual": ["spatial_cross_dual(a: vec6, b: vec6) -> vec6"],
    "spatial_adjoint": ["spatial_adjoint(r: mat33, s: mat33) -> mat66"],
    "svd3": ["svd3(A: mat33, U: mat33, sigma: vec3, V: mat33)  (U, sigma, V are outputs)"],
    "svd2": ["svd2(A: mat22, U: mat22, sigma: vec2, V: mat22)  (U, sigma, V are outputs)"],
    "qr3": ["qr3(A: mat33, Q: mat33, R: mat33)  (Q, R are outputs)"],
    "eig3": ["eig3(A: mat33, Q: mat33, d: vec3)  (Q, d are outputs)"],
    # quat.py
    "quat_identity": ["quat_identity(dtype=float32) -> quat"],
    "quat_from_axis_angle": ["quat_from_axis_angle(axis: vec3, angle: Float) -> quat"],
    "quat_to_axis_angle": ["quat_to_axis_angle(q: quat, axis: vec3, angle: Float)  "
                           "(axis, angle are outputs)"],
    "quat_between_vectors": ["quat_between_vectors(a: vec3, b: vec3) -> quat"],
    "quat_inverse": ["quat_inverse(q: quat) -> quat"],
    "quat_rotate": ["quat_rotate(q: quat, x: vec3) -> vec3"],
    "quat_rotate_inv": ["quat_rotate_inv(q: quat, x: vec3) -> vec3"],
    "quat_to_matrix": ["quat_to_matrix(q: quat) -> mat33"],
    "quat_from_matrix": ["quat_from_matrix(m: mat33) -> quat"],
    "quat_rpy": ["quat_rpy(roll: Float, pitch: Float, yaw: Float) -> quat"],
    "quat_slerp": ["quat_slerp(q0: quat, q1: quat, t: Float) -> quat"],
    "transform_identity": ["transform_identity(dtype=float32) -> transform"],
    "transform_point": ["transform_point(t: transform, p: vec3) -> vec3"],
    "transform_vector": ["transform_vector(t: transform, v: vec3) -> vec3"],
    "transform_multiply": ["transform_multiply(a: transform, b: transform) -> transform"],
    "transform_inverse": ["transform_inverse(t: transform) -> transform"],
    "transform_get_translation": ["transform_get_translation(t: transform) -> vec3"],
    "transform_get_rotation": ["transform_get_rotation(t: transform) -> quat"],
    # noise.py
    "noise": ["noise(state: uint32, x: Float) -> Float", "noise(state: uint32, xy: vec2) -> Float",
              "noise(state: uint32, xyz: vec3) -> Float",
              "noise(state: uint32, xyzt: vec4) -> Float"],
    "pnoise": ["pnoise(state: uint32, x: Float, px: Int) -> Float",
               "pnoise(state: uint32, xy: vec2, px: Int, py: Int) -> Float",
               "pnoise(state: uint32, xyz: vec3, px: Int, py: Int, pz: Int) -> Float",
               "pnoise(state: uint32, xyzt: vec4, px: Int, py: Int, pz: Int, pt: Int) -> Float"],
    "curlnoise": ["curlnoise(state: uint32, xy: vec2[, octaves: uint32[, lacunarity: Float"
                  "[, gain: Float]]]) -> vec2",
                  "curlnoise(state: uint32, xyz: vec3[, octaves: uint32[, lacunarity: Float"
                  "[, gain: Float]]]) -> vec3",
                  "curlnoise(state: uint32, xyzt: vec4[, octaves: uint32[, lacunarity: Float"
                  "[, gain: Float]]]) -> vec3"],
}

_PARAM = re.compile(r"(\[?,?\s*)(\w+): (\w+)")


def _word_ok(word, t):
    """Whether type ``t`` fits the type word (the float type is checked separately)."""
    if word == "Float":
        return T.is_scalar(t) and T.is_float(t)
    if word == "Int":
        return T.is_scalar(t) and T.is_int(t)
    if word == "uint32":
        return t is T.uint32
    if not T.is_composite(t) or not T.is_float(T.scalar_of(t)):
        return False
    kind = t._wp_kind_
    if word == "quat":
        return kind == "quaternion"
    if word == "transform":
        return kind == "transformation"
    if word.startswith("vec"):
        return kind == "vector" and (word == "vec" or t._length_ == int(word[3:]))
    if word.startswith("mat"):
        if kind != "matrix":
            return False
        rows, cols = t._shape_
        if word == "mat":
            return True
        if word == "matN":
            return rows == cols
        return (rows, cols) == (int(word[3]), int(word[4]))
    return False


def _parse(sig):
    """``[(word, optional)]`` of the input parameters of one signature string."""
    head = sig.split("->")[0]
    inner = head[head.index("(") + 1:head.rindex(")")]
    outputs = sig.count("are outputs") and re.search(r"\(([\w, ]+) (?:are|is) outputs\)", sig)
    out_names = set(outputs.group(1).replace(" ", "").split(",")) if outputs else set()
    params = []
    for m in _PARAM.finditer(inner):
        if m.group(2) in out_names:
            continue
        params.append((m.group(3), "[" in m.group(1)))
    return params


def accepts(sig, types, literal=None):
    """Whether signature string ``sig`` accepts argument ``types`` (the inputs only).
    ``literal[k]`` marks a number literal, which fits any scalar parameter of its kind."""
    params = _parse(sig)
    literal = literal or [False] * len(types)
    required = [p for p in params if not p[1]]
    if not len(required) <= len(types) <= len(params):
        return False
    floats = set()
    for (word, _), t, lit in zip(params, types, literal):
        if lit and word in ("Float", "Int", "uint32"):
            if T.is_float(t) and word != "Float":
                return False
            continue
        if not _word_ok(word, t):
            return False
        if word not in ("Int", "uint32"):
            floats.add(T.scalar_of(t))
    return len(floats) <= 1


def check_call(name, types, literal=None):
    """None when some signature of builtin ``name`` accepts ``types``, else the error text."""
    sigs = SIGNATURES.get(name)
    if sigs is None or any(accepts(s, types, literal) for s in sigs):
        return None
    given = ", ".join(T.type_name(t) for t in types)
    lines = "\n".join("    " + s for s in sigs)
    return f"no signature of 'wp.{name}' accepts ({given}); signatures:\n{lines}"
