"""The package's API over brevis._brevis: safe_open, compress, decompress, save_file, explain."""
import json
import os

import numpy as _np

from . import _brevis
from ._brevis import BrevisError

# safetensors dtype -> the numpy dtype its bytes load as (little-endian, as the file holds them).
# numpy has no bfloat16 or float8: those load as their bits (uint16, uint8), or, for BF16 with
# bf16="float32", widened losslessly to float32.
_NUMPY_DTYPES = {
    "BOOL": "|b1", "U8": "|u1", "I8": "|i1", "F8_E4M3": "|u1", "F8_E5M2": "|u1",
    "I16": "<i2", "U16": "<u2", "F16": "<f2", "BF16": "<u2",
    "I32": "<i4", "U32": "<u4", "F32": "<f4",
    "I64": "<i8", "U64": "<u8", "F64": "<f8",
}
_FRAMEWORKS = {"np": "np", "numpy": "np", "pt": "pt", "torch": "pt"}
_BF16_CHOICES = ("bits", "float32")


def _check_file(path):
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No such file: {path!r}")
    return path


def _widen_bf16(bits):
    """BF16 bits (uint16) as float32: the same values, exactly."""
    return _np.left_shift(bits.astype(_np.uint32), _np.uint32(16)).view(_np.float32)


class _Tensor:
    __slots__ = ("index", "name", "dtype", "shape", "nbytes", "member")

    def __init__(self, index, name, dtype, shape, nbytes, member):
        self.index, self.name, self.dtype, self.shape, self.nbytes, self.member = index, name, dtype, shape, nbytes, member


class _Archive:
    """An open archive and its tensors by name."""

    def __init__(self, path):
        self.archive = _brevis.Archive(_check_file(path))
        self.tensors = {}
        for index, (name, dtype, shape, nbytes, member) in enumerate(self.archive.tensors()):
            if name in self.tensors:
                other = self.archive.member_path(self.tensors[name].member)
                raise BrevisError(f"{path} has tensor {name!r} in both {other} and {self.archive.member_path(member)}")
            self.tensors[name] = _Tensor(index, name, dtype, tuple(shape), nbytes, member)

    def tensor(self, name):
        t = self.tensors.get(name)
        if t is None:
            raise KeyError(f"{self.archive.path} has no tensor {name!r}")
        return t

    def read(self, names, threads=0, bf16="bits"):
        """numpy arrays of the tensors `names`, decoded straight into them, all at once."""
        if bf16 not in _BF16_CHOICES:
            raise ValueError(f"bf16 must be one of {_BF16_CHOICES}, not {bf16!r}")
        tensors = [self.tensor(n) for n in names]
        # Each tensor is decoded into a byte buffer that the array is then a view of: no copy.
        buffers = [_np.empty(t.nbytes, dtype=_np.uint8) for t in tensors]
        self.archive.read_into([t.index for t in tensors], buffers, threads)
        arrays = [b.view(_np.dtype(_NUMPY_DTYPES[t.dtype])).reshape(t.shape) for t, b in zip(tensors, buffers)]
        if bf16 == "float32":
            arrays = [_widen_bf16(a) if t.dtype == "BF16" else a for t, a in zip(tensors, arrays)]
        return dict(zip(names, arrays))

    def header(self, member):
        raw = self.archive.header(member)
        if len(raw) < 8:
            return None
        return json.loads(raw[8:].decode("utf-8"))


class _Slice:
    """safe_open(...).get_slice(name): the tensor's shape and dtype without decoding it;
    indexing decodes the tensor and returns that part of it."""

    def __init__(self, owner, name):
        self._owner, self._tensor = owner, owner._archive.tensor(name)

    def get_shape(self):
        return list(self._tensor.shape)

    def get_dtype(self):
        return self._tensor.dtype

    def __getitem__(self, key):
        return self._owner.get_tensor(self._tensor.name)[key]


class safe_open:
    """An archive opened for reading tensors one at a time, as safetensors.safe_open:

        with brevis.safe_open("model.safetensors.brv", framework="np") as f:
            for name in f.keys():
                array = f.get_tensor(name)

    framework: "np" (numpy) or "pt" (torch). bf16 (numpy only): "bits" (uint16, the default)
    or "float32" (widened exactly). threads: decoding threads (0: every core)."""

    def __init__(self, filename, framework="np", device="cpu", bf16="bits", threads=0):
        if framework not in _FRAMEWORKS:
            raise ValueError(f"framework must be one of {sorted(_FRAMEWORKS)}, not {framework!r}")
        self._framework = _FRAMEWORKS[framework]
        if self._framework == "pt":
            from . import torch as _torch  # raises ImportError without torch
            self._to_torch = _torch._from_numpy
        self._device, self._bf16, self._threads = device, bf16, threads
        self._archive = _Archive(filename)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._archive = None
        return False

    def keys(self):
        """The tensors' names, in file order."""
        return list(self._archive.tensors)

    def metadata(self):
        """The header's "__metadata__" (a dict of strings), or None. In an archive of a
        directory, that of its one safetensors file, or None when there are several."""
        members = {t.member for t in self._archive.tensors.values()}
        if len(members) != 1:
            return None
        header = self._archive.header(members.pop())
        return None if header is None else header.get("__metadata__")

    def get_tensor(self, name):
        """The tensor `name`, decoding only its own bytes."""
        t = self._archive.tensor(name)
        if self._framework == "pt":
            array = self._archive.read([name], self._threads)[name]
            return self._to_torch(array, t.dtype, self._device)
        return self._archive.read([name], self._threads, self._bf16)[name]

    def get_slice(self, name):
        return _Slice(self, name)


def compress(src, dst=None, level=5, threads=0, overwrite=False):
    """Compresses the safetensors file `src` (or any file) into the archive `dst` (default
    src + ".brv"), verified before it is written. Returns the archive's size in bytes."""
    src = _check_file(src)
    if os.path.isdir(src):
        raise BrevisError(f"{src} is a directory; brevisc compress archives directories")
    dst = os.fspath(dst) if dst is not None else src + ".brv"
    return _brevis.compress_file(src, dst, int(level), int(threads), bool(overwrite))


def decompress(src, dst=None, threads=0, overwrite=False):
    """Rebuilds the archive `src` bit for bit at `dst`: by default the file name the archive
    recorded, beside it (a directory archive: src without ".brv"). Returns the path written."""
    src = _check_file(src)
    if dst is None:
        archive = _brevis.Archive(src)
        if not archive.is_directory:
            dst = os.path.join(os.path.dirname(src), archive.member_path(0))
        elif src.endswith(".brv") and len(os.path.basename(src)) > 4:
            dst = src[: -len(".brv")]
        else:
            raise BrevisError(f"cannot derive a directory name from {src} (it does not end in .brv); give dst")
    dst = os.fspath(dst)
    _brevis.decompress_file(src, dst, int(threads), bool(overwrite))
    return dst


# numpy dtype -> safetensors dtype, for save_file.
_SAFETENSORS_DTYPES = {
    "bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "uint16": "U16", "float16": "F16",
    "int32": "I32", "uint32": "U32", "float32": "F32", "int64": "I64", "uint64": "U64", "float64": "F64",
}


def _safetensors_bytes(tensors, metadata, dtypes):
    """A safetensors file of `tensors` (name -> numpy array) in name order, with the header
    padded with spaces to a multiple of 8 bytes, as the safetensors library writes it."""
    header, offset, blobs = {}, 0, []
    if metadata is not None:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise ValueError("metadata must map str to str")
        header["__metadata__"] = dict(metadata)
    for name in sorted(tensors):
        array = _np.asarray(tensors[name])  # (ascontiguousarray would make a 0-d array 1-d)
        dtype = dtypes.get(name) if dtypes else None
        if dtype is None:
            dtype = _SAFETENSORS_DTYPES.get(array.dtype.name)
            if dtype is None:
                raise ValueError(f"tensor {name!r} has dtype {array.dtype}, which safetensors does not hold")
        elif _np.dtype(_NUMPY_DTYPES[dtype]).itemsize != array.dtype.itemsize:
            raise ValueError(f"tensor {name!r} of {array.dtype} cannot hold {dtype}")
        data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes(order="C")
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + b"".join(blobs)


def save_file(tensors, filename, metadata=None, level=5, threads=0, overwrite=True, dtypes=None):
    """Writes `tensors` (name -> numpy array) as an archive at `filename`, straight from the
    arrays. Decompressing it gives a valid safetensors file named as `filename` without ".brv":
    tensors contiguous in name order, the header padded to 8 bytes. `dtypes` (name ->
    safetensors dtype) stores the bits of a uint16 array as BF16, of a uint8 one as F8_E4M3 or
    F8_E5M2. Returns the archive's size in bytes."""
    filename = os.fspath(filename)
    base = os.path.basename(filename)
    name = base[: -len(".brv")] if base.endswith(".brv") and len(base) > 4 else base
    blob = _safetensors_bytes(tensors, metadata, dtypes)
    return _brevis.compress_bytes(blob, name, filename, int(level), int(threads), bool(overwrite))


def explain(path, tensor=None, level=5, candidates=5, threads=0):
    """Why each tensor of an archive (or a safetensors checkpoint) got its program, as
    `brevisc explain --json` reports it: a list of dicts, one per tensor, with its program,
    payload bytes and bits per weight, each literal's bytes, order-0 entropies, and the
    `candidates` cheapest candidates the search scored at `level`."""
    return json.loads(_brevis.explain_json(_check_file(path), tensor or "", int(level), int(candidates), int(threads)))
