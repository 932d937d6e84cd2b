"""Graph capture, Warp's API: ``wp.capture_begin()``, ``wp.capture_end() -> Graph``,
``wp.capture_launch(graph)``, ``wp.ScopedCapture()``::

    with wp.ScopedCapture() as capture:
        for _ in range(substeps):
            wp.launch(step, n, inputs=[x, v, dt])
        x.zero_()                      # recorded too: fill_, zero_, wp.copy
    for frame in range(100):
        wp.capture_launch(capture.graph)

As in Warp (CPU and CUDA alike), nothing runs during capture: each launch is checked and bound
to its arguments (the arrays, and the values of scalars, at capture time) and recorded; each
``fill_``/``zero_``/``wp.copy`` is recorded with its arguments. ``capture_launch`` replays
them in order on the same memory, so contents written into those arrays between replays are
seen; a launch made later with other arguments does not change the graph (capture again).
Arrays allocated during capture are allocated at once (zeroed, where Warp leaves them
uninitialised until replay). Inside a ``wp.Tape`` the captured launches are recorded on the tape
as they are captured, so ``tape.backward`` after a replay differentiates them.

On the CPU a graph is compiled, on its first replay, into one generated Python function that
calls each launch's bound entry (the Numba function chosen at capture: serial or parallel) with
the arguments bound at capture, in order: one call per replay, no per-launch Python beyond
Numba's own dispatch. The argument checks, binding and dispatch choices of a launch happened at
capture (``wp.config.verify_fp`` and debug builds keep their checks: such launches replay
through the general path).

``wp.capture_while(cond, body)`` and ``wp.capture_if(cond, on_true, on_false)`` (Warp's
conditional nodes) run at once outside a capture; inside one, each body is captured into a graph
of its own and the op recorded reads ``cond[0]`` at every replay (so a captured solver loop runs
as many iterations as the replay's data asks). A Tape records a body's launches once, at capture.
"""
from __future__ import annotations

import threading

from ..core.errors import LaunchError

_state = threading.local()
_open = [0]  # captures open on any thread (launch's fast path reads it without a lookup)


def _stack():
    s = getattr(_state, "stack", None)
    if s is None:
        s = _state.stack = []
    return s


def capturing():
    """The graph being captured on this thread, or None."""
    s = _stack()
    return s[-1] if s else None


class Graph:
    """A captured sequence of operations (Warp's ``wp.Graph``), replayed by
    ``wp.capture_launch``."""

    def __init__(self, device, apic=False):
        self.device = device
        self.apic = apic     # a saveable capture: operations that cannot be saved refuse
        self.ops = []        # (callable, arguments or None), in capture order
        self.launches = 0
        self._replay = None  # the generated function running every op, built on first replay

    def __reduce__(self):
        from ..core.errors import refuse
        refuse(self, "a captured graph replays operations on this process's memory; capture "
               "it again where it runs")

    def record(self, op, args=None, is_launch=False):
        """Record ``op(*args)`` (``op()`` when ``args`` is None)."""
        self.ops.append((op, None if args is None else tuple(args)))
        self.launches += is_launch
        self._replay = None

    def replay(self):
        fn = self._replay
        if fn is None:
            fn = self._replay = self._compile()
        try:
            fn()
        except Exception as exc:
            from numba.core.errors import NumbaError
            if isinstance(exc, NumbaError):
                from ..core.errors import InternalError
                raise InternalError(f"a kernel replayed by a captured graph does not compile:"
                                    f"\n{exc}") from None
            raise

    def _compile(self):
        """One function calling every op in order, its callables and arguments bound as the
        generated module's globals (readable: ``graph.source()``)."""
        ns, lines = {}, []
        for k, (op, args) in enumerate(self.ops):
            ns[f"op{k}"] = op
            names = []
            for j, a in enumerate(args or ()):
                ns[f"a{k}_{j}"] = a
                names.append(f"a{k}_{j}")
            lines.append(f"    op{k}({', '.join(names)})")
        self._source = "def replay():\n" + ("\n".join(lines) or "    pass") + "\n"
        exec(compile(self._source, f"<weft graph {id(self):x}>", "exec"), ns)
        return ns["replay"]

    def source(self):
        """The generated replay function's source."""
        if self._replay is None:
            self._replay = self._compile()
        return self._source

    def __repr__(self):
        return f"<weft Graph: {len(self.ops)} operations ({self.launches} launches)>"


def capture_begin(device=None, stream=None, force_module_load=None, external=False,
                  capture_mode=None, apic=False):
    """Start capturing launches and array operations on this thread into a new graph."""
    from .device import get_device
    _stack().append(Graph(get_device(device), apic))
    _open[0] += 1


def capture_end(device=None, stream=None):
    """Stop the capture begun by ``capture_begin`` and return its :class:`Graph`."""
    s = _stack()
    if not s:
        raise RuntimeError("capture_end(): no graph capture is active (call capture_begin "
                           "first)")
    _open[0] -= 1
    return s.pop()


def capture_launch(graph, stream=None):
    """Replay a captured graph."""
    if not isinstance(graph, Graph):
        raise LaunchError(f"capture_launch() takes the Graph returned by capture_end() or "
                          f"ScopedCapture().graph, got {type(graph).__name__}")
    if capturing() is not None:  # replaying inside another capture records the replay
        capturing().record(graph.replay)
        return
    graph.replay()


def _condition(condition, who):
    """The first element of ``condition`` (a wp.array of int32) read now, as a bool."""
    from ..core import types as T
    from ..core.typeinfo import is_array
    is_array = is_array(condition) and not isinstance(condition, T.ArrayType)
    if not is_array or condition.dtype is not T.int32:
        raise TypeError(f"{who}(): the condition must be a Warp array of int32 with a single "
                        f"element, got {type(condition).__name__}"
                        + (f" of {T.type_name(condition.dtype)}" if is_array else ""))
    if condition.size < 1:
        raise TypeError(f"{who}(): the condition array is empty")
    return lambda: bool(condition.numpy().flat[0])


def _body(body, who, kwargs):
    """``body`` (a callable taking ``kwargs``, or a Graph) as a function of no arguments."""
    if isinstance(body, Graph):
        return body.replay
    if callable(body):
        return lambda: body(**kwargs)
    raise TypeError(f"{who}(): the body must be a callable or a Graph, got "
                    f"{type(body).__name__}")


def _captured(run, device):
    """``run()`` captured into a graph of its own (nothing runs), to replay as one op."""
    g = Graph(device, capturing().apic)
    _stack().append(g)
    _open[0] += 1
    try:
        run()
    finally:
        _stack().pop()
        _open[0] -= 1
    return g


def capture_if(condition, on_true=None, on_false=None, stream=None, **kwargs):
    """Warp's dynamic branch: run ``on_true`` when ``condition[0]`` is nonzero, else
    ``on_false`` (callables given ``kwargs``, or Graphs). Outside a capture the branch runs at
    once; during a capture each branch is captured into a graph of its own (nothing runs) and
    every replay reads ``condition`` then and runs the branch it picks (Warp's conditional
    graph node)."""
    if on_true is None and on_false is None:
        return
    read = _condition(condition, "capture_if")
    yes = _body(on_true, "capture_if", kwargs) if on_true is not None else None
    no = _body(on_false, "capture_if", kwargs) if on_false is not None else None
    g = capturing()
    if g is None:
        run = yes if read() else no
        if run is not None:
            run()
        return
    yes = _captured(yes, g.device).replay if yes is not None else None
    no = _captured(no, g.device).replay if no is not None else None

    def branch():
        run = yes if read() else no
        if run is not None:
            run()
    g.record(branch)


def capture_while(condition, while_body, stream=None, **kwargs):
    """Warp's dynamic loop: run ``while_body`` (a callable given ``kwargs``, or a Graph) while
    ``condition[0]`` is nonzero; the body updates the condition. Outside a capture the loop
    runs at once; during a capture the body is captured once into a graph of its own (nothing
    runs) and every replay loops over it, reading ``condition`` before each iteration (Warp's
    conditional graph node)."""
    read = _condition(condition, "capture_while")
    body = _body(while_body, "capture_while", kwargs)
    g = capturing()
    if g is None:
        while read():
            body()
        return
    body = _captured(body, g.device).replay

    def loop():
        while read():
            body()
    g.record(loop)


def capture_pause(*args, **kwargs):
    raise NotImplementedError("weft does not support pausing a graph capture")


def is_capturing(device=None):
    return capturing() is not None


class ScopedCapture:
    """``with wp.ScopedCapture() as capture: ...`` then ``wp.capture_launch(capture.graph)``."""

    def __init__(self, device=None, stream=None, force_module_load=None, external=False,
                 apic=False, capture_mode=None):
        self.device = device
        self.apic = apic
        self.graph = None
        self.active = False

    def __reduce__(self):
        from ..core.errors import refuse
        refuse(self, "a graph capture belongs to the process that records it; capture again "
               "where it runs")

    def __enter__(self):
        capture_begin(self.device, apic=self.apic)
        self.active = True
        return self

    def __exit__(self, *exc):
        self.graph = capture_end(self.device)
        self.active = False
        return False
