"""A slow first call of an entry says what it compiled (wp.config.compile_message_seconds;
wp.config.quiet silences it), and WEFT_DUMP=stats reports the generated code size."""
import re

import numpy as np
import pytest

import weft as wp


@wp.kernel
def twice(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 2.0 * a[i]


@wp.kernel
def halve(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 0.5 * a[i]


@pytest.fixture
def settings():
    saved = (wp.config.compile_message_seconds, wp.config.quiet)
    yield
    wp.config.compile_message_seconds, wp.config.quiet = saved


def test_first_call_message_and_quiet(settings, capfd):
    wp.config.compile_message_seconds = -1.0  # every first call is "slow"
    b = wp.array(np.ones(3, np.float32))
    wp.launch(twice, 3, inputs=[b])  # the serial entry: its first call
    err = capfd.readouterr().err
    # Warp's wording, which Warp's test harness and tools recognise
    assert "Module twice forward load on device 'cpu' took " in err
    # and the kernel's size: its statements
    # (the serial twin, or the threaded entry's chunk where a disk cache holds it already)
    assert re.search(r"\(weft: twice__fwd_(serial|chunk) compiled and ran; 2 statements\)", err)
    wp.launch(twice, 3, inputs=[b])
    assert "Module" not in capfd.readouterr().err  # once per entry
    np.testing.assert_array_equal(b.numpy(), 4.0)
    wp.config.quiet = True
    a = wp.array(np.ones(300, np.float32))
    wp.launch(halve, 300, inputs=[a])  # a first call, quiet (another kernel: twice's chunk,
    assert "Module" not in capfd.readouterr().err  # once cached, would run its small launch)
    np.testing.assert_array_equal(a.numpy(), 0.5)


@pytest.mark.cold
def test_weft_dump_stats_reports_code_size(monkeypatch, capfd, tmp_path):
    monkeypatch.setenv("WEFT_DUMP", "stats")
    monkeypatch.setenv("WEFT_CACHE_DIR", str(tmp_path))  # a cache miss: the passes run

    @wp.kernel
    def fresh_stats_kernel(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = wp.sin(a[i])

    wp.launch(fresh_stats_kernel, 2, inputs=[wp.zeros(2, dtype=float)])
    err = capfd.readouterr().err
    assert "generated code size per function" in err
    assert "fresh_stats_kernel__adj:" in err and " lines, " in err


@pytest.mark.cold
def test_transpile_message_names_kernel_and_size(settings, monkeypatch, capfd, tmp_path):
    monkeypatch.setenv("WEFT_CACHE_DIR", str(tmp_path))  # a cache miss: the passes run
    wp.config.compile_message_seconds = -1.0
    wp.config.quiet = False

    @wp.kernel
    def sized_kernel(a: wp.array(dtype=float)):
        i = wp.tid()
        if a[i] > 0.0:
            a[i] = a[i] * 2.0
        a[i] = a[i] + 1.0

    assert sized_kernel.statement_count() == 4  # the if and the statements in it count
    sized_kernel.compiled("cpu")
    err = capfd.readouterr().err
    assert "Module sized_kernel load on device 'cpu' took " in err
    assert "(weft: release module transpiled and loaded; 4 statements)" in err
