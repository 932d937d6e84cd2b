"""Optimizers (Warp's ``warp.optim``): :class:`SGD` and :class:`Adam`, with Warp 1.19's
constructor signatures and update rules, each step one weft kernel launch per parameter array.

Example::

    from weft.optim import Adam
    opt = Adam([x], lr=0.01)
    for _ in range(100):
        tape = wp.Tape()
        with tape:
            wp.launch(loss_kernel, dim=n, inputs=[x], outputs=[loss])
        tape.backward(loss)
        opt.step([x.grad])
        tape.zero()
"""
from .adam import Adam
from .sgd import SGD

__all__ = ["Adam", "SGD"]
