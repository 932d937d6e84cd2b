"""A launch recorded on a tape has its CPU adjoint compiled meanwhile by a helper process
(weft.runtime.background): backward loads it from the cache instead of compiling it here, the
loss and gradient are the same, and with a warm cache (or the helper switched off) no helper
runs."""
import pytest

from .ahead_kernels import check_values, run_program


def _compiled_here(res):
    return sorted(c.rsplit(".", 1)[1] for c in res["ahead"] + res["late"])


@pytest.mark.cold
def test_adjoints_compiled_by_the_helper(tmp_path):
    res = run_program(tmp_path / "cache")
    check_values(res)
    assert res["helper"]
    # this process compiled the forwards; the helper the adjoints, loaded here from the cache
    assert _compiled_here(res) == ["square__fwd", "total__fwd"]
    warm = run_program(tmp_path / "cache")  # a new process with a warm cache
    check_values(warm)
    assert not warm["helper"] and _compiled_here(warm) == []


@pytest.mark.cold
def test_helper_switched_off(tmp_path):
    res = run_program(tmp_path / "cache", WEFT_BACKGROUND_COMPILE="0")
    check_values(res)
    assert not res["helper"]
    assert _compiled_here(res) == ["square__adj", "square__fwd", "total__adj", "total__fwd"]
