"""wp.load_module / wp.force_load compile a module's kernels ahead of their launches (forward
and adjoint, for contiguous arrays with gradients), here or shared with worker processes; the
launches then compile nothing, and a new process loads everything from the cache. (Without
them every entry compiles at its first call: tests/runtime/test_background.py.)"""
import numpy as np
import pytest

pytestmark = pytest.mark.uncached  # programs with caches of their own

from .ahead_kernels import check_values, run_program


@pytest.mark.cold
@pytest.mark.parametrize("load", ["wp.load_module(ak, max_workers=2)",
                                  "wp.load_module(ak)", "wp.force_load(modules=[ak])"])
def test_launches_after_load_compile_nothing(tmp_path, load):
    # a small launch too (10 threads: the serial target) runs the chunk loaded ahead for the
    # threaded entry, over the whole launch, instead of compiling the serial twin
    small = ("z = wp.zeros(10, dtype=float)\nwp.launch(ak.square, 10, inputs=[x, z])\n"
             "extra = z.numpy().tolist()")
    res = run_program(tmp_path / "cache", load, after=small)
    check_values(res)
    np.testing.assert_allclose(res["extra"], (np.arange(10) / 100) ** 2, rtol=1e-6)
    assert res["late"] == []  # every entry the launches call was compiled (or loaded) ahead
    assert not res["helper"]  # so no adjoint was left for the background helper
    if "max_workers" in load:  # this process compiled its share, the worker the rest
        assert 1 <= len(res["ahead"]) <= 4
    else:  # the forward and adjoint of both kernels, compiled here
        assert len(res["ahead"]) == 4
    again = run_program(tmp_path / "cache", load, after=small)  # a new process: the cache's
    check_values(again)
    assert again["extra"] == res["extra"]
    assert again["ahead"] == [] and again["late"] == []
