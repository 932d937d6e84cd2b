"""Which array parameters a kernel or func reads and writes (through views and funcs too).

Used to find arrays that a kernel reads and then overwrites (``x[i] = f(x[i])``): the adjoint
replays the forward from the arrays as they are *after* the launch, so such reads need the values
from before it (the tape keeps a snapshot) and the adjoint of the store must reset the element's
adjoint (the overwritten value has no further influence).
"""
from __future__ import annotations

from .. import types as T
from . import ir


def summary(fir, cache):
    """``{param index: {"read": line or None, "write": line or None, "own": bool}}``.

    ``own`` stays True while every write uses the thread's own index (kernels only)."""
    key = id(fir)
    if key in cache:
        return cache[key]
    root = {p: i for i, p in enumerate(fir.params) if isinstance(p.type, T.ArrayType)}
    out = {i: {"read": None, "write": None, "own": True, "store": None, "accumulate": None}
           for i in root.values()}
    from .codegen import Gen
    owner = Gen(fir, None)

    def mark(var, kind, line, own=True):
        i = root.get(var)
        if i is None:
            return
        rec = out[i]
        if rec[kind] is None:
            rec[kind] = line
        if kind == "write" and not own:
            rec["own"] = False

    used = ir.used_vars(fir.body)
    for s in ir.walk(fir.body):
        if isinstance(s, ir.Assign) and isinstance(s.expr, ir.Load):
            arr = s.expr.array
            if isinstance(s.dst.type, T.ArrayType):
                root[s.dst] = root.get(arr)  # a view aliases its array
                if root[s.dst] is None:
                    del root[s.dst]
            else:
                mark(arr, "read", s.loc.lineno)
        elif isinstance(s, ir.Store):
            mark(s.array, "write", s.loc.lineno, owner.own_index(s.array, s.index))
            mark(s.array, "store", s.loc.lineno)
        elif isinstance(s, ir.AtomicRMW):
            mark(s.array, "write", s.loc.lineno, False)
            mark(s.array, "accumulate", s.loc.lineno)
            if s.dst is not None and id(s.dst) in used:  # the old value is used
                mark(s.array, "read", s.loc.lineno)
        elif isinstance(s, ir.Assign) and isinstance(s.expr, ir.Call):
            callee = summary(s.expr.func, cache)
            for j, a in enumerate(s.expr.args):
                if j in callee and isinstance(a, ir.Var):
                    for kind in ("read", "write", "store", "accumulate"):
                        if callee[j][kind] is not None:
                            mark(a, kind, s.loc.lineno, own=False)
    cache[key] = out
    return out


def overwritten(fir):
    """Array params of kernel ``fir`` that are both read and written: ``[(name, read line,
    write line, writes use own index)]``. Pure accumulation (atomic adds that nobody reads
    back) is not a hazard."""
    found = []
    for i, rec in summary(fir, {}).items():
        if rec["read"] is not None and rec["write"] is not None and T.is_differentiable(
                fir.params[i].type):
            found.append((fir.params[i].name, rec["read"], rec["write"], rec["own"]))
    return found


def stored(fir):
    """Differentiable array params of kernel ``fir`` with plain stores ``a[i] = v``, whose
    adjoint zeroes the stored elements' gradient: ``[(name, the gradient is also accumulated
    into (the array is read or atomically updated))]``."""
    out = []
    for i, rec in summary(fir, {}).items():
        if rec["store"] is not None and T.is_differentiable(fir.params[i].type):
            out.append((fir.params[i].name, rec["read"] is not None or
                        rec["accumulate"] is not None))
    return out


def local_buffer_gradient(fir):
    """A message when a gradient would have to flow through a thread-local buffer, else None.

    That is the case when a value that depends on the kernel's differentiable inputs (float
    parameters, reads of arrays) is stored into a ``wp.alloc_local`` buffer: weft does not
    differentiate those buffers (as Dr.Jit), so the adjoint and tangent would be incomplete."""
    active = {id(p) for p in fir.params if not isinstance(p.type, T.ArrayType)
              and T.is_differentiable(p.type)}
    changed = True
    while changed:
        changed = False

        def mark(v):
            nonlocal changed
            if id(v) not in active:
                active.add(id(v))
                changed = True

        for s in ir.walk(fir.body):
            if isinstance(s, ir.Assign) and T.is_differentiable(s.dst.type):
                e = s.expr
                srcs = e.args if isinstance(e, (ir.Prim, ir.Call)) else \
                    [e.src] if isinstance(e, ir.Copy) else []
                if isinstance(e, ir.Load) and not e.array.type.local and \
                        T.is_differentiable(e.array.type):
                    mark(s.dst)
                elif any(id(a) in active for a in srcs if isinstance(a, ir.Var)):
                    mark(s.dst)
            elif isinstance(s, ir.Loop):
                for h, e in s.carried:
                    if id(e) in active:
                        mark(h)
    for s in ir.walk(fir.body):
        if isinstance(s, (ir.Store, ir.AtomicRMW)) and s.array.type.local and \
                isinstance(s.value, ir.Var) and id(s.value) in active:
            return (f"line {s.loc.lineno} stores a value that depends on the kernel's "
                    "differentiable inputs into a wp.alloc_local buffer; weft does not "
                    "differentiate thread-local buffers, so this kernel has no adjoint or "
                    "tangent. Keep differentiable values out of the buffer.")
    return None


def private_accumulators(fir):
    """Arrays a CPU kernel only accumulates into, which may get per-thread private buffers.

    Returns ``(forward, adjoint)`` name lists: kernel array parameters whose only accesses are
    ``atomic_add``/``atomic_sub`` (old value unused), and ``adj_<p>`` for parameters ``p`` that
    are read but never written (so the adjoint only accumulates into ``adj_p``). Arrays passed to
    funcs or viewed are left alone."""
    used = ir.used_vars(fir.body)
    uses = {id(p): [] for p in fir.params if isinstance(p.type, T.ArrayType)}
    for s in ir.walk(fir.body):
        if isinstance(s, ir.Assign) and isinstance(s.expr, ir.Load) and id(s.expr.array) in uses:
            uses[id(s.expr.array)].append("view" if isinstance(s.dst.type, T.ArrayType)
                                          else "load")
        elif isinstance(s, ir.Store) and id(s.array) in uses:
            uses[id(s.array)].append("store")
        elif isinstance(s, ir.AtomicRMW) and id(s.array) in uses:
            plain = s.op in ("add", "sub") and (s.dst is None or id(s.dst) not in used)
            uses[id(s.array)].append("accumulate" if plain else "atomic")
        elif isinstance(s, ir.Assign) and isinstance(s.expr, ir.Call):
            for a in s.expr.args:
                if id(a) in uses:
                    uses[id(a)].append("call")
    forward, adjoint = [], []
    for p in fir.params:
        kinds = set(uses.get(id(p), ()))
        if not kinds or p.type.local or T.scalar_of(p.type.dtype) is T.float16:
            continue  # float16 arrays are updated through their half bits, never privately
        if kinds == {"accumulate"}:
            forward.append(p.name)
        if kinds == {"load"} and T.is_differentiable(p.type):
            adjoint.append(f"adj_{p.name}")
    return forward, adjoint
