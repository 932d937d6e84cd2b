"""PyTorch interop: ``wp.from_torch``, ``wp.to_torch``, the dtype and device conversions, and
weft kernels inside ``torch.autograd``."""
