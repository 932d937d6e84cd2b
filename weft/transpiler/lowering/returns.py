"""A func's ``-> T`` annotation checked against what its body returns (Warp's messages)."""
from __future__ import annotations

import ast

from ...core import types as T
from ...core.errors import KernelTypeError
from . import literals


def check_return_annotation(ctx, rtype, node):
    """A func's ``-> T`` annotation (when it names concrete types) must match what it returns,
    with Warp's messages."""
    ann = ctx.src.tree.returns if ctx.kind == "func" else None
    if ann is None or (isinstance(ann, ast.Constant) and ann.value is None):
        return
    name = ctx.src.tree.name
    head = f"The function `{name}` has its return type annotated as"
    got = rtype.types if isinstance(rtype, T.TupleType) else None
    if isinstance(ann, ast.Subscript) and literals.resolve_global(ctx, ann.value) is tuple:
        elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        want = [_annotated(ctx, e) for e in elts]
        if got is None or len(got) != len(want):
            raise ctx.fail(node, f"{head} a tuple of {len(want)} elements but the code returns "
                           f"{len(got) if got else 1} values.", KernelTypeError)
        if any(w is not None and w != g for w, g in zip(want, got)):
            shown = ", ".join(T.type_name(g) for g in got)
            raise ctx.fail(node, f"{head} `{ast.unparse(ann)}` but the code returns a tuple "
                           f"with types `({shown})`.", KernelTypeError)
        return
    want = _annotated(ctx, ann)
    if want is None:
        return
    value = literals.resolve_global(ctx, ann)
    shown = getattr(value, "__name__", ast.unparse(ann))
    if got is not None:
        raise ctx.fail(node, f"{head} `{shown}` but the code returns {len(got)} values.",
                       KernelTypeError)
    if want != rtype:
        raise ctx.fail(node, f"{head} `{shown}` but the code returns a value of type "
                       f"`{T.type_name(rtype)}`.", KernelTypeError)


def _annotated(ctx, node):
    """The concrete weft type an annotation names, or None (generic, or not a value type)."""
    try:
        t = literals.annotation_type(ctx, node)
    except Exception:  # noqa: BLE001 - generic (Any, wp.Float, ...) or unknown: not checked
        return None
    return t if (T.is_scalar(t) or T.is_composite(t)) and not getattr(t, "_wp_generic_", False) \
        else None
