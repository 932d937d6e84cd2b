"""Checking calls of the builtins written in the kernel language against their signatures.

Those builtins are generic funcs, so without a declaration a call with wrong types would fail
deep inside the stdlib func, or worse, be accepted by a branch meant for another size. Each
declares its signatures where it is defined (``@builtin_func([...])``, :mod:`weft.stdlib.funcs`); every
call is checked against them first, and a call no signature accepts raises ``KernelTypeError``
at the call site naming the builtin, the argument types given and the signatures that exist.

Type words: ``Float`` (a float scalar), ``Int`` (an integer scalar), ``uint32``, ``vecN`` (a
vector of N components), ``vec`` (any vector), ``matRC`` (an R x C matrix), ``mat`` (any
matrix), ``matN`` (any square matrix), ``quat``, ``transform``. Vector, matrix, quaternion and
transform arguments and ``Float`` scalars of one call share one float type (float16, float32 or
float64), as Warp's generic ``Float`` does. A signature noting "any scalar type" also takes
integer scalars, vectors and matrices for its ``Float``/vector/matrix words (Warp's ``trace``,
``ddot``, ``cw_div`` on integer types).
"""
from __future__ import annotations

import re

from ..core import types as T


_PARAM = re.compile(r"(\[?,?\s*)(\w+): (\w+)")


def _numeric(t):
    return T.is_scalar(t) and t is not T.bool


def _word_ok(word, t, numeric=False):
    """Whether type ``t`` fits the type word (the float type is checked separately);
    ``numeric``: integer element types are accepted too."""
    if word == "Float":
        return T.is_scalar(t) and (T.is_float(t) or numeric and _numeric(t))
    if word == "Int":
        return T.is_scalar(t) and T.is_int(t)
    if word == "uint32":
        return t is T.uint32
    if not T.is_composite(t) or not (T.is_float(T.scalar_of(t)) or
                                     numeric and _numeric(T.scalar_of(t))):
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
    numeric = "any scalar type" in sig
    for (word, _), t, lit in zip(params, types, literal):
        if lit and word in ("Float", "Int", "uint32"):
            if T.is_float(t) and word != "Float":
                return False
            continue
        if not _word_ok(word, t, numeric):
            return False
        if word not in ("Int", "uint32"):
            floats.add(T.scalar_of(t))
    return len(floats) <= 1


def check_call(func, types, literal=None):
    """None when some signature of builtin func ``func`` accepts ``types``, else the error
    text."""
    sigs = func.signatures
    name = func.__name__
    if sigs is None or any(accepts(s, types, literal) for s in sigs):
        return None
    given = ", ".join(T.type_name(t) for t in types)
    lines = "\n".join("    " + s for s in sigs)
    return f"no signature of 'wp.{name}' accepts ({given}); signatures:\n{lines}"
