"""Brevis: safetensors checkpoints compressed losslessly, loaded the way safetensors loads them.

    import brevis.numpy
    tensors = brevis.numpy.load_file("model.safetensors.brv")      # dict of numpy arrays

    with brevis.safe_open("model.safetensors.brv", framework="np") as f:
        w = f.get_tensor("layers.0.attention.wq.weight")            # decodes that tensor alone

    brevis.compress("model.safetensors")                              # -> model.safetensors.brv
    brevis.decompress("model.safetensors.brv", "copy.safetensors")

Every tensor is checked against its archive's digest as it is decoded; a damaged archive raises
BrevisError with the library's message. docs/python.md has the whole API.
"""
from ._brevis import BrevisError, archive_format_version
from ._archive import compress, decompress, explain, safe_open, save_file
from . import numpy  # noqa: F401  (brevis.numpy.load_file, as safetensors.numpy)

__all__ = ["BrevisError", "archive_format_version", "compress", "decompress", "explain", "safe_open", "save_file",
           "numpy"]
