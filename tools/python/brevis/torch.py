"""brevis.torch: archives to torch tensors, as safetensors.torch (needs torch installed)."""
import torch as _torch

from ._archive import _Archive, save_file as _save_file

# dtypes torch has that numpy lacks: the bits are reinterpreted in place.
_TORCH_VIEWS = {"BF16": _torch.bfloat16}
for _name, _attr in (("F8_E4M3", "float8_e4m3fn"), ("F8_E5M2", "float8_e5m2")):
    if hasattr(_torch, _attr):  # torch 2.1 and later
        _TORCH_VIEWS[_name] = getattr(_torch, _attr)


# Unsigned words torch may lack (before torch 2.3 it has uint8 only): the bits are read as the
# signed type of their width, which torch has, before any view.
_SIGNED = {"uint16": "int16", "uint32": "int32", "uint64": "int64"}


def _from_numpy(array, dtype, device):
    if array.dtype.name in _SIGNED:
        array = array.view(_SIGNED[array.dtype.name])
    tensor = _torch.from_numpy(array)
    if dtype in _TORCH_VIEWS:
        tensor = tensor.view(_TORCH_VIEWS[dtype])
    return tensor if str(device) == "cpu" else tensor.to(device)


def load_file(filename, device="cpu", threads=0):
    """Every tensor of the archive as a torch tensor on `device`, by name, in file order. BF16
    tensors are torch.bfloat16 (F8 ones torch's float8 types where torch has them, else uint8);
    U16, U32 and U64 ones hold their bits as int16, int32 and int64."""
    archive = _Archive(filename)
    arrays = archive.read(list(archive.tensors), threads)
    return {name: _from_numpy(a, archive.tensors[name].dtype, device) for name, a in arrays.items()}


_SAVE_VIEWS = {_torch.bfloat16: (_torch.int16, "BF16")}
for _name, _dtype in _TORCH_VIEWS.items():
    if _name.startswith("F8"):
        _SAVE_VIEWS[_dtype] = (_torch.uint8, _name)


def save_file(tensors, filename, metadata=None, level=5, threads=0, overwrite=True):
    """An archive of torch tensors (moved to the CPU). Tensors that share storage are stored
    each whole. torch before 2.3 has no uint16, uint32 or uint64: tensors loaded from those
    (held as int16, int32, int64) are saved as I16, I32, I64."""
    if not isinstance(tensors, dict):
        raise TypeError(f"tensors must be a dict of name -> tensor, not {type(tensors).__name__}")
    arrays, dtypes = {}, {}
    for name, t in tensors.items():
        t = t.detach().cpu().contiguous()
        if t.dtype in _SAVE_VIEWS:
            view, dtypes[name] = _SAVE_VIEWS[t.dtype]
            t = t.view(view)
        arrays[name] = t.numpy()
    return _save_file(arrays, filename, metadata=metadata, level=level, threads=threads, overwrite=overwrite,
                      dtypes=dtypes)
