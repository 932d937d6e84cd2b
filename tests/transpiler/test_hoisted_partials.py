"""The adjoint computes the math calls of a rule that take the primal call's own arguments
(``cos(x)`` for ``sin(x)``) beside the primal call, so that LLVM fuses the pair
(``adjoint.Adjoint.hoist_partials``). Rules found to make no such call are not built again for
statements of the same kind (builtin, types, constants' kinds): every ``sin`` is still hoisted,
whatever the statements between them."""
import re

import numpy as np

import weft as wp


@wp.kernel
def three_sines(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a = wp.sin(x[i])
    b = x[i] * wp.float64(2.0)
    c = x[i] * wp.float64(3.0) + wp.float64(1.0)
    d = x[i] * wp.float64(5.0) + wp.float64(1.0)
    y[i] = a * wp.sin(b) + wp.sin(c) * b + d


def test_every_sine_has_its_cosine_beside_it_and_the_gradient_is_exact():
    src = three_sines.source("adjoint")
    lines = [ln.strip() for ln in src.splitlines()]
    sines = [(k, m.group(1)) for k, ln in enumerate(lines)
             for m in [re.match(r"\w+ = np\.sin\((\w+)\)$", ln)] if m]
    assert len(sines) == 3, src
    for k, arg in sines:  # the cosine of the same argument, on the next line
        assert re.match(rf"_d\d+ = np\.cos\({arg}\)$", lines[k + 1]), (lines[k], lines[k + 1])
    assert src.count("np.cos(") == 3  # the reverse sweep reads them, computes none again

    xs = np.linspace(-1.5, 2.0, 7)
    x = wp.array(xs, dtype=wp.float64, requires_grad=True)
    y = wp.zeros(7, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(three_sines, 7, inputs=[x], outputs=[y])
    tape.backward(grads={y: wp.array(np.ones(7), dtype=wp.float64)})
    want = (np.cos(xs) * np.sin(2 * xs) + np.sin(xs) * 2 * np.cos(2 * xs)
            + 3 * np.cos(3 * xs + 1) * 2 * xs + np.sin(3 * xs + 1) * 2 + 5)
    np.testing.assert_allclose(y.numpy(), np.sin(xs) * np.sin(2 * xs)
                               + np.sin(3 * xs + 1) * 2 * xs + 5 * xs + 1, rtol=1e-14)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-13)
