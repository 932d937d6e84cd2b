"""Warp's Python-scope runtime API in weft: devices, module options, kernel cache, timers,
config, exception classes, constants, wp.Kernel(...), unsupported packages (expected values from
Warp 1.19 where Warp defines them)."""
import contextlib
import importlib
import io
import os
import re

import numpy as np
import pytest

import weft as wp


def test_devices():
    cpu = wp.get_device("cpu")
    assert repr(cpu) == "'cpu'" and str(cpu) == "cpu"
    assert (cpu.name, cpu.arch, cpu.ordinal, cpu.is_uva, cpu.is_mempool_supported) == \
        ("CPU", 0, -1, False, False)
    assert cpu == "cpu" and wp.is_cpu_available() and wp.is_device_available("cpu")
    assert wp.get_devices()[0] == "cpu"
    assert wp.get_preferred_device() in wp.get_devices()
    assert wp.synchronize_device("cpu") is None
    with pytest.raises(RuntimeError, match="Unable to determine CUDA context for device alias "
                       "'foo'"):
        wp.map_cuda_device("foo")


def test_module_options_registry():
    opts = wp.get_module_options()
    assert opts == wp.get_module_options(__name__)
    assert opts["enable_backward"] is True and opts["fast_math"] is False
    assert opts["mode"] is None and opts["block_dim"] == 256 and opts["max_unroll"] == 16
    wp.set_module_options({"fast_math": True}, "weft_test.some.module")
    assert wp.get_module_options("weft_test.some.module")["fast_math"] is True
    assert wp.get_module_options()["fast_math"] is False  # other modules unchanged
    m = wp.get_module("weft_test.other")
    assert m is wp.get_module("weft_test.other") and m.name == "weft_test.other"
    wp.set_module_options({"enable_backward": False}, m)
    assert wp.get_module_options("weft_test.other")["enable_backward"] is False
    # the calling module by default
    wp.set_module_options({"mode": "debug"})
    assert wp.get_module_options(__name__)["mode"] == "debug"
    wp.set_module_options({"mode": None})


@wp.kernel
def kernel_in_this_module(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 2.0 * a[i]


def test_load_module_and_force_load_accept_warps_arguments(monkeypatch):
    # what they compile is tested in tests/runtime/test_load_module.py; here: Warp's arguments
    # and which kernels each one picks (kernels other tests of this process declared, some
    # failing by design, are not compiled here)
    from weft.runtime import ahead
    seen = []
    monkeypatch.setattr(ahead, "load_kernels", lambda ks, kind, workers: seen.append(
        (sorted(k.key for k in ks), kind, workers)))
    assert wp.load_module(__name__, device="cpu", recursive=True, block_dim=64, max_workers=2) \
        is None
    assert wp.get_module(__name__).load("cpu", block_dim=1) is True
    assert wp.force_load(device=["cpu"], modules=None, block_dim=None, max_workers=0) is None
    assert [s[1:] for s in seen] == [("cpu", 2), ("cpu", None), ("cpu", 0)]
    assert all("kernel_in_this_module" in s[0] for s in seen)
    assert len(seen[2][0]) >= len(seen[0][0])  # force_load: every module's kernels


def test_clear_kernel_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    monkeypatch.setenv("WEFT_CACHE_DIR", str(cache))
    (cache / "k_0123.py").write_text("x = 1\n")
    (cache / "sub").mkdir()
    (cache / "sub" / "f.nbi").write_bytes(b"1")
    wp.clear_kernel_cache()
    assert cache.is_dir() and os.listdir(cache) == []


def test_scoped_timer_prints_nested_and_collects():
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        with wp.ScopedTimer("outer") as t:
            with wp.ScopedTimer("inner"):
                pass
    lines = buf.getvalue().splitlines()
    assert re.fullmatch(r"    inner took \d+\.\d\d ms", lines[0])  # Warp's format and indent
    assert re.fullmatch(r"outer took \d+\.\d\d ms", lines[1])
    assert isinstance(t.elapsed, float) and t.elapsed >= 0.0
    d = {}
    for _ in range(3):
        with wp.ScopedTimer("s", print=False, dict=d):
            pass
    assert len(d["s"]) == 3
    with contextlib.redirect_stdout(io.StringIO()) as quiet:
        with wp.ScopedTimer("off", active=False):
            pass
    assert quiet.getvalue() == ""


def test_config_has_warps_settings_and_defaults():
    c = wp.config
    assert (c.mode, c.verify_fp, c.enable_backward, c.max_unroll, c.cache_kernels,
            c.verbose_warnings, c.print_launches, c.log_level, c.default_grid_stride,
            c.verify_autograd_array_access, c.optimization_level) == \
        ("release", False, True, 16, True, False, False, 20, True, False, None)
    assert c.launch_array_access_mode == 0 and c.deterministic == wp.DeterministicMode.NOT_GUARANTEED
    assert c.quiet is False and c.verbose is False
    assert list(wp.DeterministicMode) == [0, 1, 2]


def test_exception_classes_and_weft_errors():
    bases = {wp.WarpCodegenError: RuntimeError, wp.WarpCodegenTypeError: TypeError,
             wp.WarpCodegenAttributeError: AttributeError, wp.WarpCodegenIndexError: IndexError,
             wp.WarpCodegenKeyError: KeyError, wp.WarpCodegenValueError: ValueError,
             wp.WarpDeterminismError: RuntimeError}
    for cls, base in bases.items():
        assert cls.__mro__[1] is base
    assert issubclass(wp.KernelError, wp.WarpCodegenError)
    assert issubclass(wp.KernelTypeError, wp.WarpCodegenTypeError)
    assert issubclass(wp.KernelNameError, KeyError) and issubclass(wp.KernelNameError,
                                                                   AttributeError)
    e = wp.KernelNameError("unknown name 'x'", "f.py", 3, 4, "    y = x\n", "k")
    assert str(e).splitlines()[0] == "f.py:3:5: in kernel 'k':"
    assert str(e).splitlines()[-1] == "unknown name 'x'"  # not quoted


def test_kernel_type_error_is_caught_as_warps_classes():
    @wp.kernel
    def bad(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = a[i] + wp.float64(1.0)

    with pytest.raises(wp.WarpCodegenTypeError):
        wp.launch(bad, dim=1, inputs=[wp.zeros(1)])
    with pytest.raises(RuntimeError):
        wp.launch(bad, dim=1, inputs=[wp.zeros(1)])


def test_constants():
    assert (wp.pi, wp.PI, wp.e, wp.tau, wp.half_pi, wp.ln2, wp.ln10, wp.log2e, wp.log10e,
            wp.phi) == (3.141592653589793, 3.141592653589793, 2.718281828459045,
                        6.283185307179586, 1.5707963267948966, 0.6931471805599453,
                        2.302585092994046, 1.4426950408889634, 0.4342944819032518,
                        1.618033988749895)
    assert wp.inf == float("inf") and np.isnan(wp.nan)
    assert (wp.LOG_DEBUG, wp.LOG_INFO, wp.LOG_WARNING, wp.LOG_ERROR) == (10, 20, 30, 40)


def test_kernel_constructor_as_warp():
    def fill_one(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = 1.0

    k = wp.Kernel(func=fill_one, key="my_key", options={"enable_backward": False})
    assert k.key == "my_key" and isinstance(k, wp.Kernel)
    assert k.options == {"enable_backward": False}
    # Warp's module options, read without compiling the kernel
    assert k.module.options["enable_backward"] is True and k.module.name == __name__
    a = wp.zeros(2)
    wp.launch(k, dim=2, inputs=[a])
    assert a.numpy().tolist() == [1.0, 1.0]

    @wp.kernel
    def decorated(a: wp.array(dtype=float)):
        pass

    assert isinstance(decorated, wp.Kernel)


@pytest.mark.parametrize("name", ["sim", "fem"])
def test_unsupported_packages_raise_clear_import_errors(name):
    with pytest.raises(ImportError, match=f"weft.{name}: "):
        importlib.import_module(f"weft.{name}")


def test_render_imports_but_renderers_say_why_they_are_missing():
    render = importlib.import_module("weft.render")  # Warp's examples import it at the top
    for cls in (render.UsdRenderer, render.OpenGLRenderer):
        with pytest.raises(NotImplementedError, match="--stage_path None"):
            cls("frame.usd")
