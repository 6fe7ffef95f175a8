"""The package's API over brevis._brevis: safe_open, compress, decompress, save_file, explain."""
import json
import mmap as _mmap
import operator
import os

import numpy as _np

from . import _brevis
from ._brevis import BrevisError

# safetensors dtype -> the numpy dtype its bytes load as (little-endian, as the file holds them).
# numpy has no bfloat16 or float8: those load as their bits (uint16, uint8), or, for BF16 with
# bf16="float32", widened losslessly to float32.
_NUMPY_DTYPES = {
    "BOOL": "|b1", "U8": "|u1", "I8": "|i1", "F8_E4M3": "|u1", "F8_E5M2": "|u1", "F8_E8M0": "|u1",
    "I16": "<i2", "U16": "<u2", "F16": "<f2", "BF16": "<u2",
    "I32": "<i4", "U32": "<u4", "F32": "<f4",
    "I64": "<i8", "U64": "<u8", "F64": "<f8", "C64": "<c8",
}
# Dtypes of fewer than 8 bits an element: their tensors load as their packed bytes (uint8, one
# dimension), as the file holds them.
_PACKED_DTYPES = ("F4", "F6_E2M3", "F6_E3M2")


def _as_array(buffer, t):
    """The bytes of tensor `t` as the array it loads as."""
    if t.dtype in _PACKED_DTYPES:
        return buffer
    return buffer.view(_np.dtype(_NUMPY_DTYPES[t.dtype])).reshape(t.shape)
_FRAMEWORKS = {"np": "np", "numpy": "np", "pt": "pt", "torch": "pt"}
_BF16_CHOICES = ("bits", "float32")


# --- arguments: checked where they are given, with Python's own exception types -------------

def _path(path, what="path"):
    """A path argument (str, bytes or os.PathLike) as str."""
    try:
        path = os.fsdecode(os.fspath(path))
    except TypeError:
        raise TypeError(f"{what} must be a str, bytes or os.PathLike, not {type(path).__name__}") from None
    if "\0" in path:
        raise ValueError(f"{what} contains a NUL character: {path!r}")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8, decoded by fsdecode as surrogates
        raise ValueError(f"{what} is not UTF-8, which brevis needs of file names: {path!r}") from None
    return path


def _existing_file(path):
    path = _path(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No such file: {path!r}")
    if os.path.isdir(path):
        raise IsADirectoryError(f"Is a directory: {path!r}")
    return path


def _output(path, overwrite):
    """An output path: its directory must exist, and it must not unless overwrite."""
    if path == "":
        raise ValueError("the output path is empty")
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"No such directory: {parent!r}")
    if os.path.isdir(path):
        raise IsADirectoryError(f"Is a directory: {path!r}")
    if not overwrite and os.path.lexists(path):
        raise FileExistsError(f"{path!r} exists; pass overwrite=True to replace it")
    return path


def _integer(value, name, low, high=None):
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not bool")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}") from None
    if value < low or (high is not None and value > high):
        raise ValueError(f"{name} must be {'from %d to %d' % (low, high) if high is not None else 'at least %d' % low}, "
                         f"not {value}")
    return value


def _flag(value, name):
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {value!r}")
    return value


def _threads(value):
    return _integer(value, "threads", 0, 1024)


def _level(value):
    return _integer(value, "level", 1, 9)


def _bf16(value):
    if value not in _BF16_CHOICES:
        raise ValueError(f"bf16 must be one of {_BF16_CHOICES}, not {value!r}")
    return value


def _widen_bf16(bits):
    """BF16 bits (uint16) as float32: the same values, exactly (a 0-d array stays an array)."""
    words = bits.astype(_np.uint32)
    words <<= _np.uint32(16)
    return words.view(_np.float32)


# --- reading -------------------------------------------------------------------------------

# Arrays of at least this many bytes are mapped memory that asks for transparent huge pages:
# the kernel then clears and maps 2 MiB at a time, not 4 KiB (docs/python.md, "Speed").
_HUGE_PAGE_BYTES = 8 << 20


def _buffer(nbytes):
    """A new writable uint8 array of `nbytes`, for a tensor to be decoded into."""
    if nbytes >= _HUGE_PAGE_BYTES and hasattr(_mmap, "MADV_HUGEPAGE"):
        memory = _mmap.mmap(-1, nbytes, flags=_mmap.MAP_PRIVATE | _mmap.MAP_ANONYMOUS)
        try:
            memory.madvise(_mmap.MADV_HUGEPAGE)
        except OSError:  # a kernel without transparent huge pages: small pages, as np.empty
            pass
        return _np.frombuffer(memory, dtype=_np.uint8)  # unmapped when the last array using it goes
    return _np.empty(nbytes, dtype=_np.uint8)


class _Tensor:
    __slots__ = ("index", "name", "dtype", "shape", "nbytes", "member")

    def __init__(self, index, name, dtype, shape, nbytes, member):
        self.index, self.name, self.dtype, self.shape, self.nbytes, self.member = index, name, dtype, shape, nbytes, member


class _Archive:
    """An open archive and its tensors by name."""

    def __init__(self, path):
        path = _existing_file(path)
        self.archive = _brevis.Archive(path)
        members = range(self.archive.member_count)
        self.safetensors = [m for m in members if self.archive.member_is_safetensors(m)]
        if not self.safetensors:
            what = "a file that was not safetensors" if not self.archive.is_directory else "no safetensors file"
            raise BrevisError(f"{path} holds {what} when it was compressed (its bytes were kept as they are): "
                              "there are no tensors to load; brevis.decompress gives the file back")
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
        threads, bf16 = _threads(threads), _bf16(bf16)
        tensors = [self.tensor(n) for n in names]
        # Each tensor is decoded into a byte buffer that the array is then a view of: no copy.
        buffers = [_buffer(t.nbytes) for t in tensors]
        self.archive.read_into([t.index for t in tensors], buffers, threads)
        arrays = [_as_array(b, t) for t, b in zip(tensors, buffers)]
        if bf16 == "float32":
            arrays = [_widen_bf16(a) if t.dtype == "BF16" else a for t, a in zip(tensors, arrays)]
        return dict(zip(names, arrays))

    def header(self, member):
        raw = self.archive.header(member)
        if len(raw) < 8:
            return None
        # The JSON object, without the padding after it (spaces, or NULs some writers use).
        text = raw[8:].decode("utf-8", errors="strict")
        value, _ = json.JSONDecoder().raw_decode(text.lstrip())
        return value


class _Slice:
    """safe_open(...).get_slice(name): the tensor's shape and dtype without decoding it.
    Indexing decodes the part of the tensor that holds the rows the first index picks (an int
    or a slice): the 16 MiB pieces of it that the archive checks one by one (docs/python.md),
    or the whole tensor when the first index is anything else."""

    def __init__(self, owner, name):
        self._owner, self._tensor = owner, owner._open().tensor(name)

    def get_shape(self):
        return list(self._tensor.shape)

    def get_dtype(self):
        return self._tensor.dtype

    def __getitem__(self, key):
        t = self._tensor
        rest = key[1:] if isinstance(key, tuple) else ()
        first = (key[0] if key else slice(None)) if isinstance(key, tuple) else key
        whole = (t.dtype in _PACKED_DTYPES  # rows of packed elements need not be whole bytes
                 or not t.shape or t.nbytes == 0 or first is Ellipsis or first is None
                 or isinstance(first, (bool, _np.bool_)))
        if whole:
            return _own(self._owner.get_tensor(t.name)[key], t.nbytes)
        rows = range(t.shape[0])
        if isinstance(first, slice):
            picked = rows[first]
            if not picked:
                lo = hi = 0
            else:
                lo, hi = min(picked[0], picked[-1]), max(picked[0], picked[-1]) + 1
            stop = picked.stop - lo
            first = slice(picked.start - lo, stop if stop >= 0 else None, picked.step)
        else:
            try:
                index = operator.index(first)
            except TypeError:  # a list, an array, a mask: any row may be needed
                return _own(self._owner.get_tensor(t.name)[key], t.nbytes)
            if not -len(rows) <= index < len(rows):
                raise IndexError(f"index {index} is out of bounds for axis 0 with size {len(rows)}")
            row = rows[index]
            lo, hi, first = row, row + 1, 0
        rows, decoded = self._owner._rows(t, lo, hi)
        return self._owner._convert(_own(rows[(first,) + rest], decoded), t)


def _own(part, decoded):
    """`part` of an array decoded into `decoded` bytes, as an array of its own: a view of a few
    rows of the buffer (a stepped slice, a whole tensor decoded for a part) would keep all of it
    alive."""
    if isinstance(part, _np.ndarray) and part.base is not None and part.nbytes < decoded:
        return part.copy()
    return part


class safe_open:
    """An archive opened for reading tensors one at a time, as safetensors.safe_open:

        with brevis.safe_open("model.safetensors.brv", framework="np") as f:
            for name in f.keys():
                array = f.get_tensor(name)

    framework: "np" (numpy) or "pt" (torch). bf16 (numpy only): "bits" (uint16, the default)
    or "float32" (widened exactly). threads: decoding threads (0: every core)."""

    def __init__(self, filename, framework="np", device="cpu", bf16="bits", threads=0):
        if not isinstance(framework, str) or framework not in _FRAMEWORKS:
            raise ValueError(f"framework must be one of {sorted(_FRAMEWORKS)}, not {framework!r}")
        self._framework = _FRAMEWORKS[framework]
        if self._framework == "pt":
            from . import torch as _torch  # raises ImportError without torch
            self._to_torch = _torch._from_numpy
        self._device, self._bf16, self._threads = device, _bf16(bf16), _threads(threads)
        self._archive = _Archive(filename)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        """Releases the archive; the object can be used no more."""
        self._archive = None

    def _open(self):
        if self._archive is None:
            raise BrevisError("the archive is closed")
        return self._archive

    def keys(self):
        """The tensors' names, in file order."""
        return list(self._open().tensors)

    def metadata(self):
        """The header's "__metadata__" (a dict of strings), or None. In an archive of a
        directory, that of its one safetensors file, or None when there are several."""
        archive = self._open()
        if len(archive.safetensors) != 1:
            return None
        header = archive.header(archive.safetensors[0])
        return header.get("__metadata__") if isinstance(header, dict) else None

    def get_tensor(self, name):
        """The tensor `name`, decoding only its own bytes."""
        archive = self._open()
        t = archive.tensor(name)
        if self._framework == "pt":
            return self._to_torch(archive.read([name], self._threads)[name], t.dtype, self._device)
        return archive.read([name], self._threads, self._bf16)[name]

    def get_slice(self, name):
        """The tensor `name` for indexing (safetensors' PySafeSlice): get_shape(), get_dtype(),
        and [rows, ...], which decodes only the part of the tensor that holds those rows."""
        return _Slice(self, name)

    def _rows(self, t, lo, hi):
        """Rows [lo, hi) of tensor `t` as a numpy array of its bits, decoding only the pieces
        that hold them, and the bytes decoded."""
        archive = self._open().archive
        shape = (hi - lo,) + t.shape[1:]
        dtype = _np.dtype(_NUMPY_DTYPES[t.dtype])
        row_bytes = t.nbytes // t.shape[0]
        begin, size = lo * row_bytes, (hi - lo) * row_bytes
        if size == 0:
            return _np.empty(shape, dtype=dtype), 0
        offset, decoded = archive.part_to_decode(t.index, begin, size)
        buffer = _buffer(decoded)
        archive.read_part_into(t.index, begin, size, buffer, self._threads)
        return buffer[begin - offset:begin - offset + size].view(dtype).reshape(shape), decoded

    def _convert(self, array, t):
        """A part of tensor `t`, read as bits, as get_tensor gives it."""
        if self._framework == "pt":
            # (ascontiguousarray would make one element's 0-d array 1-d)
            return self._to_torch(_np.require(_np.asarray(array), requirements="C"), t.dtype, self._device)
        if self._bf16 == "float32" and t.dtype == "BF16":
            widened = _widen_bf16(_np.asarray(array))
            return widened[()] if isinstance(array, _np.generic) else widened  # a scalar stays one
        return array  # as indexing the whole array gives it (a numpy scalar for one element)


# --- compressing and decompressing files ---------------------------------------------------

def compress(src, dst=None, level=5, threads=0, overwrite=False):
    """Compresses the safetensors file `src` (or any file) into the archive `dst` (default
    src + ".brv"), verified before it is written. Returns the archive's size in bytes."""
    src = _existing_file(src)
    dst = _output(_path(dst, "dst") if dst is not None else src + ".brv", _flag(overwrite, "overwrite"))
    if os.path.exists(dst) and os.path.samefile(src, dst):
        raise ValueError(f"{dst!r} is the file to compress")
    return _brevis.compress_file(src, dst, _level(level), _threads(threads), overwrite)


def decompress(src, dst=None, threads=0, overwrite=False):
    """Rebuilds the archive `src` bit for bit at `dst`: by default the file name the archive
    recorded, beside it (a directory archive: src without ".brv"). Returns the path written."""
    src = _existing_file(src)
    threads, overwrite = _threads(threads), _flag(overwrite, "overwrite")
    if dst is None:
        archive = _brevis.Archive(src)
        if not archive.is_directory:
            dst = os.path.join(os.path.dirname(src), archive.member_path(0))
        elif src.endswith(".brv") and len(os.path.basename(src)) > 4:
            dst = src[: -len(".brv")]
        else:
            raise ValueError(f"cannot derive a directory name from {src!r} (it does not end in .brv); give dst")
    dst = _path(dst, "dst")
    if os.path.exists(dst) and os.path.samefile(src, dst):
        raise ValueError(f"{dst!r} is the archive itself; give another dst")
    is_directory = _brevis.Archive(src).is_directory
    if os.path.isdir(dst) and not is_directory:
        raise IsADirectoryError(f"Is a directory: {dst!r}")
    if is_directory and os.path.exists(dst) and not os.path.isdir(dst):
        raise NotADirectoryError(f"{dst!r} exists and is not a directory; a directory archive needs one")
    if not os.path.isdir(dst):
        _output(dst, overwrite)
    elif not overwrite and any(os.scandir(dst)):
        raise FileExistsError(f"{dst!r} exists and is not empty; pass overwrite=True to write into it")
    _brevis.decompress_file(src, dst, threads, overwrite)
    return dst


# --- writing archives from arrays ----------------------------------------------------------

# numpy dtype -> safetensors dtype, for save_file.
_SAFETENSORS_DTYPES = {
    "bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "uint16": "U16", "float16": "F16",
    "int32": "I32", "uint32": "U32", "float32": "F32", "int64": "I64", "uint64": "U64", "float64": "F64",
    "complex64": "C64",
}
# The dtypes numpy cannot hold, stored from the bits of an array of this type (dtypes=).
_BITS_OF = {"BF16": ("uint16", "int16"), "F8_E4M3": ("uint8",), "F8_E5M2": ("uint8",), "F8_E8M0": ("uint8",)}


def _safetensors_image(tensors, metadata, dtypes):
    """A safetensors file of `tensors` (name -> array), as the safetensors library lays it out:
    tensors ordered by element size, largest first, then by name (so that each is aligned to
    its element size), contiguous; compact JSON header, __metadata__ first, padded with spaces to
    a multiple of 8 bytes. Built in one buffer, each array copied into it once."""
    if not isinstance(tensors, dict):
        raise TypeError(f"tensors must be a dict of name -> array, not {type(tensors).__name__}")
    dtypes = dict(dtypes or {})
    header = {}
    if metadata is not None:
        if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise ValueError("metadata must be a dict of str to str")
        header["__metadata__"] = dict(metadata)
    unknown = set(dtypes) - set(tensors)
    if unknown:
        raise ValueError(f"dtypes names tensors that are not given: {sorted(unknown)}")
    entries = []
    for name, value in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"tensor names must be str, not {type(name).__name__} ({name!r})")
        if name == "__metadata__":
            raise ValueError('"__metadata__" is not a tensor name: it holds the metadata in a safetensors header')
        if isinstance(value, _np.ma.MaskedArray):
            raise TypeError(f"tensor {name!r} is a masked array, which safetensors cannot hold")
        array = _np.asarray(value)  # (ascontiguousarray would make a 0-d array 1-d)
        natural = _SAFETENSORS_DTYPES.get(array.dtype.name)
        dtype = dtypes.get(name, natural)
        if dtype is None:
            raise ValueError(f"tensor {name!r} has dtype {array.dtype}, which safetensors does not hold")
        if dtype != natural:
            if dtype not in _BITS_OF:
                raise ValueError(f"dtypes[{name!r}] = {dtype!r}: only BF16 (from uint16 bits) and F8_E4M3, F8_E5M2 "
                                 f"or F8_E8M0 (from uint8 bits) can be given")
            if array.dtype.name not in _BITS_OF[dtype]:
                raise ValueError(f"tensor {name!r} of {array.dtype} cannot hold the bits of {dtype} "
                                 f"(give a {' or '.join(_BITS_OF[dtype])} array)")
        entries.append((name, dtype, array))
    entries.sort(key=lambda e: (-e[2].dtype.itemsize, e[0]))
    offset = 0
    for name, dtype, array in entries:
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    image = _np.empty(8 + len(text) + offset, dtype=_np.uint8)
    image[:8] = _np.frombuffer(len(text).to_bytes(8, "little"), dtype=_np.uint8)
    image[8:8 + len(text)] = _np.frombuffer(text, dtype=_np.uint8)
    at = 8 + len(text)
    for name, dtype, array in entries:
        little = array.dtype.newbyteorder("<") if array.dtype.byteorder not in ("|", "=", "<") else array.dtype
        view = image[at:at + array.nbytes].view(little).reshape(array.shape) if array.nbytes else None
        if view is not None:
            view[...] = array  # C order, little-endian, whatever the array's layout
        at += array.nbytes
    return image


def save_file(tensors, filename, metadata=None, level=5, threads=0, overwrite=True, dtypes=None):
    """Writes `tensors` (name -> numpy array) as an archive at `filename` (replacing it, as
    safetensors' save_file does, unless overwrite=False). Decompressing it gives a safetensors
    file named as `filename` without ".brv", laid out as the safetensors library lays one out.
    `dtypes` (name -> safetensors dtype) stores the bits of a uint16 array as BF16, of a uint8
    one as F8_E4M3 or F8_E5M2. Returns the archive's size in bytes."""
    filename = _output(_path(filename, "filename"), _flag(overwrite, "overwrite"))
    level, threads = _level(level), _threads(threads)
    base = os.path.basename(filename)
    name = base[: -len(".brv")] if base.endswith(".brv") and len(base) > 4 else base
    if not name or "\0" in name:
        raise ValueError(f"{filename!r} does not name a file")
    image = _safetensors_image(tensors, metadata, dtypes)
    return _brevis.compress_bytes(image, name, filename, level, threads, overwrite)


def explain(path, tensor=None, level=5, candidates=5, threads=0):
    """Why each tensor of an archive (or a safetensors checkpoint) got its program: the
    "tensors" list of `brevisc explain --json`, one dict per tensor, with its program, payload
    bytes and bits per weight, each literal's bytes, order-0 entropies, and the `candidates`
    cheapest candidates the search scored at `level`."""
    if tensor is not None and not isinstance(tensor, str):
        raise TypeError(f"tensor must be a str or None, not {type(tensor).__name__}")
    return json.loads(_brevis.explain_json(_existing_file(path), tensor or "", _level(level),
                                           _integer(candidates, "candidates", 0, 1000), _threads(threads)))
