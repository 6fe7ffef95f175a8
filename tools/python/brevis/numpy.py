"""brevis.numpy: archives to numpy arrays, as safetensors.numpy."""
from ._archive import _Archive, save_file as _save_file


def load_file(filename, bf16="bits", threads=0):
    """Every tensor of the archive as a numpy array, by name, in file order; all decoded at once
    on `threads` (0: every core). numpy has no bfloat16: BF16 tensors load as their bits
    (uint16), or with bf16="float32" widened exactly to float32. F8 tensors load as their bits
    (uint8)."""
    archive = _Archive(filename)
    return archive.read(list(archive.tensors), threads, bf16)


def save_file(tensors, filename, metadata=None, level=5, threads=0, overwrite=True, dtypes=None):
    """brevis.save_file: an archive of numpy arrays."""
    return _save_file(tensors, filename, metadata=metadata, level=level, threads=threads, overwrite=overwrite,
                      dtypes=dtypes)
