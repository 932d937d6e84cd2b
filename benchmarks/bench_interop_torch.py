"""PyTorch interop overhead: what calling a weft kernel from torch costs per call, beside a plain
``wp.launch`` of the same kernel.

    python benchmarks/bench_interop_torch.py [--sizes 16 4096 1048576] [--repeat 200] [--markdown]

Rows, for a one-line float32 kernel ``y[i] = x[i] * a + b`` over n elements:

- ``wp.launch``: the kernel on weft arrays (the baseline);
- ``from_torch + launch``: tensors wrapped each call (``wp.from_torch``, no copy), then launched;
- ``torch forward`` / ``forward + backward``: ``weft.torch.function`` inside ``torch.autograd``
  (output allocated by torch; the backward runs weft's adjoint kernel);
- ``torch eager``: the same arithmetic in torch (``x * a + b``), for scale;
- ``Warp`` rows (forward, and a Warp-style ``autograd.Function``) when warp-lang is importable.

Times are per call (median of ``--repeat`` calls after a warm-up); the overhead column is the
difference to the plain launch.
"""
import argparse
import os
import sys
import time

os.environ.setdefault("WEFT_TIERED_COMPILE", "0")  # steady state: the threaded kernels

sys.path.insert(0, os.path.dirname(__file__))
import machine  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import weft as wp  # noqa: E402
import weft.torch as wt  # noqa: E402


@wp.kernel
def affine(x: wp.array(dtype=float), a: float, b: float, y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * a + b


def weft_rows(n, repeat):
    x = torch.rand(n, requires_grad=True)
    y = torch.zeros(n)
    wx, wy = wp.from_torch(x.detach()), wp.from_torch(y)
    f = wt.function(affine)
    rows = {}
    rows["wp.launch"] = machine.median(lambda: wp.launch(affine, n, inputs=[wx, 2.0, 1.0],
                                                   outputs=[wy]), repeat)
    rows["from_torch + launch"] = machine.median(
        lambda: wp.launch(affine, n, inputs=[wp.from_torch(x.detach(), requires_grad=False),
                                             2.0, 1.0],
                          outputs=[wp.from_torch(y, requires_grad=False)]), repeat)
    with torch.no_grad():
        rows["torch forward (no_grad)"] = machine.median(lambda: f(x, 2.0, 1.0), repeat)
    rows["torch forward"] = machine.median(lambda: f(x, 2.0, 1.0), repeat)

    def fwd_bwd():
        x.grad = None
        f(x, 2.0, 1.0).sum().backward()
    rows["torch forward + backward"] = machine.median(fwd_bwd, repeat)
    np.testing.assert_allclose(x.grad.numpy(), 2.0)
    with torch.no_grad():
        rows["torch eager x * a + b"] = machine.median(lambda: x * 2.0 + 1.0, repeat)
    return rows


def warp_rows(n, repeat):
    try:
        import warp
    except ImportError:
        return {}
    warp.config.quiet = True
    warp.init()

    @warp.kernel
    def waffine(x: warp.array(dtype=float), a: float, b: float, y: warp.array(dtype=float)):
        i = warp.tid()
        y[i] = x[i] * a + b

    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            y = torch.empty_like(x)
            warp.launch(waffine, n, inputs=[warp.from_torch(x.detach(), requires_grad=False),
                                            2.0, 1.0],
                        outputs=[warp.from_torch(y, requires_grad=False)])
            return y

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            gx = torch.zeros_like(x)
            warp.launch(waffine, n, inputs=[warp.from_torch(x.detach(), requires_grad=False),
                                            2.0, 1.0],
                        outputs=[warp.from_torch(torch.empty_like(x), requires_grad=False)],
                        adj_inputs=[warp.from_torch(gx, requires_grad=False), None, None],
                        adj_outputs=[warp.from_torch(g.contiguous(), requires_grad=False)],
                        adjoint=True)
            return gx

    x = torch.rand(n, requires_grad=True)
    wx = warp.from_torch(x.detach(), requires_grad=False)
    wy = warp.zeros(n, dtype=float)
    rows = {"Warp wp.launch": machine.median(lambda: warp.launch(waffine, n, inputs=[wx, 2.0, 1.0],
                                                           outputs=[wy]), repeat)}

    def fwd_bwd():
        x.grad = None
        Fn.apply(x).sum().backward()
    rows["Warp torch forward + backward"] = machine.median(fwd_bwd, repeat)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[16, 4096, 1 << 20])
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    print(machine.describe())
    for n in args.sizes:
        rows = {**weft_rows(n, args.repeat), **warp_rows(n, args.repeat)}
        base = rows["wp.launch"]
        table = [[name, f"{t * 1e6:.1f}", f"{(t - base) * 1e6:+.1f}" if name != "wp.launch"
                  else ""] for name, t in rows.items()]
        print(f"\nn = {n}")
        print(machine.text_table(["call", "us per call", "vs wp.launch (us)"], table,
                                 markdown=args.markdown))


if __name__ == "__main__":
    main()
