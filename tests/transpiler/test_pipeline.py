"""``pipeline.PIPELINE`` names every pass that runs, each a module whose docstring states its
invariant; the kernel, host and second-order pipelines are all made of that list."""
import dataclasses
import sys

import numpy as np

import weft as wp
from weft.runtime import host
from weft.transpiler import pipeline
from weft.transpiler.state import CompileState

from . import golden_kernels as gk

NAMES = ["lower", "verify", "lanes", "analyze", "generate", "prune", "index_wraps", "tile_views",
         "cuda_tiles", "assemble", "second_order"]


def test_the_list_names_every_pass_and_each_states_its_invariant():
    assert [p.name for p in pipeline.PIPELINE] == NAMES
    table = pipeline.__doc__
    for p in pipeline.PIPELINE:
        assert f"\n{p.name} " in table, f"pass {p.name} missing from pipeline's docstring"
        doc = sys.modules[p.run.__module__].__doc__
        assert doc.startswith("Pass ``"), p.run.__module__
        assert "Invariant" in doc or "invariant" in doc, p.run.__module__


def test_the_pipelines_are_made_of_the_list():
    assert [n for n, _, _ in pipeline.passes("kernel")] == NAMES[:-1]
    assert [n for n, _, _ in pipeline.passes("second_order")] == ["second_order"]
    # a Python-scope call: verified like a kernel; nothing compiles it, so no index_wraps
    assert [n for n, _, _ in pipeline.passes("host")] == [
        "lower", "verify", "analyze", "generate", "prune", "assemble"]


def _recording(monkeypatch):
    ran = []

    def wrap(name, fn):
        def run(state):
            ran.append(name)
            return fn(state)
        return run

    monkeypatch.setattr(pipeline, "PIPELINE", [
        dataclasses.replace(p, run=wrap(p.name, p.run),
                            host=p.host and wrap(p.name, p.host)) for p in pipeline.PIPELINE])
    return ran


def test_what_runs_is_what_the_list_says(monkeypatch):
    ran = _recording(monkeypatch)
    state = pipeline.run(CompileState(roots=[gk.step]))
    assert ran == NAMES[:-1]
    abi = state.abis["step"]
    del ran[:]
    text = pipeline.second_order_source(state.source, abi)
    assert ran == ["second_order"] and "def step__adj__hvp(" in text
    del ran[:]
    monkeypatch.setattr(host, "_CACHE", {})
    monkeypatch.setattr(host, "_load", lambda disk: None)  # (not read from the cache)
    q = wp.quat_rpy(0.1, 0.2, 0.3)  # a builtin called at Python scope
    assert ran == ["lower", "verify", "analyze", "generate", "prune", "assemble"]
    assert np.allclose(np.asarray(q), [0.0342708, 0.1060205, 0.1435722, 0.9833475], atol=1e-6)


def test_serial_twins_share_the_threaded_loops():
    """The serial entries' loops are the threaded chunks' loops, generated, pruned and written
    once (``generate``'s ``weft_twin``, ``assemble.link_twins``): the same body objects, and
    the same text in both functions."""
    from weft.transpiler.state import CompileOptions
    state = pipeline.run(CompileState(roots=[gk.step], options=CompileOptions(("cpu", "serial"))))
    defs = {d.name: d for d in state.defs if hasattr(d, "name")}
    for kind in ("fwd", "adj", "jvp"):
        chunk, serial = defs[f"step__{kind}_chunk"], defs[f"step__{kind}_serial"]
        assert serial.weft_twin == chunk.name

        def loop(d):
            return next(s for s in d.body if type(s).__name__ == "For")

        assert loop(serial).body is loop(chunk).body
        src = state.source
        text = src.split(f"def {chunk.name}(")[1].split("\n\n")[0]
        body = text.split(":\n", 2)[2]  # after the signature and the for statement
        serial_text = src.split(f"def {serial.name}(")[1].split("\n\n")[0]
        assert len(body) > 200 and body in serial_text
