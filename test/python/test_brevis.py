"""Tests of the Python package `brevis` (tools/python): round trips against the committed
checkpoints, random access, slices, every dtype, errors, and agreement with the CLI. Run by
ctest with PYTHONPATH set to the build's tools/python, BREVISC to the build's brevisc and
BREVIS_TEST_DATA to test/data."""
import json
import os
import pathlib
import struct
import subprocess

import numpy as np
import pytest

import brevis
import brevis.numpy

DATA = os.environ.get("BREVIS_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "data"))
BREVISC = os.environ.get("BREVISC", "brevisc")
CHECKPOINTS = ["stories260K.bf16.safetensors", "stories260K.safetensors"]


def read_safetensors(path):
    """(metadata, {name: (dtype, shape, bytes)}) in file order, read independently of brevis."""
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    metadata = header.pop("__metadata__", None)
    tensors = {}
    for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        b, e = t["data_offsets"]
        tensors[name] = (t["dtype"], tuple(t["shape"]), data[8 + n + b:8 + n + e])
    return metadata, tensors


def write_safetensors(path, parts):
    """A safetensors file of `parts` [(name, dtype, shape, bytes)], laid out one after another."""
    header, offset = {}, 0
    for name, dtype, shape, raw in parts:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    path.write_bytes(len(h).to_bytes(8, "little") + h + b"".join(raw for *_, raw in parts))


@pytest.fixture(scope="module", params=CHECKPOINTS)
def archived(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("archived")
    source = tmp / request.param
    source.write_bytes(open(os.path.join(DATA, request.param), "rb").read())
    size = brevis.compress(str(source), level=1)
    archive = str(source) + ".brv"
    assert size == os.path.getsize(archive)
    return str(source), archive


def test_load_file_gives_every_tensor_bit_for_bit(archived):
    source, archive = archived
    _, want = read_safetensors(source)
    got = brevis.numpy.load_file(archive)
    assert list(got) == list(want)  # file order
    for name, (dtype, shape, raw) in want.items():
        assert got[name].shape == shape, name
        assert got[name].tobytes() == raw, name


def test_decompress_rebuilds_the_file(archived, tmp_path):
    source, archive = archived
    out = brevis.decompress(archive, str(tmp_path / "back.safetensors"), threads=2)
    assert open(out, "rb").read() == open(source, "rb").read()
    # By default, the recorded name beside the archive; an existing file needs overwrite.
    assert brevis.decompress(archive, overwrite=True) == source
    with pytest.raises(FileExistsError, match="overwrite=True"):
        brevis.decompress(archive)


def test_safe_open_reads_one_tensor_and_the_metadata(archived):
    source, archive = archived
    metadata, want = read_safetensors(source)
    with brevis.safe_open(archive, framework="np") as f:
        assert f.keys() == list(want)
        assert f.metadata() == metadata
        name = list(want)[len(want) // 2]
        assert f.get_tensor(name).tobytes() == want[name][2]
        with pytest.raises(KeyError, match="nope"):
            f.get_tensor("nope")


def test_slices_are_the_parts_of_the_tensor(archived):
    _, archive = archived
    with brevis.safe_open(archive, framework="np") as f:
        name = max(f.keys(), key=lambda n: len(f.get_slice(n).get_shape()))
        whole = f.get_tensor(name)
        s = f.get_slice(name)
        assert s.get_shape() == list(whole.shape)
        assert s.get_dtype() in ("BF16", "F32")
        np.testing.assert_array_equal(s[1:3], whole[1:3])
        np.testing.assert_array_equal(s[..., ::2], whole[..., ::2])


def test_a_slice_of_a_large_tensor_decodes_only_the_pieces_holding_its_rows(tmp_path):
    # 3000 x 4096 float32 is 49 MB: three 16 MiB pieces, each checked by the archive on its own.
    rng = np.random.default_rng(7)
    large = (rng.standard_normal((3000, 4096)) * 0.02).astype(np.float32)
    bits = rng.integers(0, 1 << 16, (3000, 2800), dtype=np.uint16)
    path = str(tmp_path / "large.brv")
    brevis.save_file({"large": large, "bits": bits}, path, level=1, dtypes={"bits": "BF16"})
    keys = [5, -1, 2999, slice(0, 10), slice(1500, 1700), slice(None, None, -7), slice(2999, 0, -3),
            slice(-10, None), slice(5, 5), slice(4000, 5000), (slice(10, 20), slice(3, 9)), (7, 5), (-3, -2),
            [1, 2, 2999], np.array([3, 0]), Ellipsis, (Ellipsis, 4), (), (None, 3), np.True_, np.False_,
            np.int64(-2), (slice(0, 3000, 1000), 0)]
    with brevis.safe_open(path) as f:
        archive = f._archive.archive
        index = f._archive.tensors["large"].index
        row = 4096 * 4
        assert archive.part_to_decode(index, 2000 * row, 10 * row) == (1 << 24, 1 << 24)  # one piece
        assert archive.part_to_decode(index, 0, 3000 * row) == (0, 3000 * row)
        for key in keys:
            got, want = f.get_slice("large")[key], large[key]
            assert type(got) is type(want) and np.asarray(got).dtype == want.dtype, key
            assert np.array_equal(got, want), key
            assert np.array_equal(f.get_slice("bits")[key], bits[key]), key
        whole = f.get_tensor("large")  # in memory of its own (huge pages): writable, freed with it
        assert whole.flags.writeable and whole.flags.c_contiguous and np.array_equal(whole, large)
        whole[0, 0] = 1.5
        assert whole[0, 0] == 1.5 and f.get_tensor("large")[0, 0] == large[0, 0]
        # A part owns its memory: a stepped slice does not keep the rows between its picks alive.
        stepped = f.get_slice("large")[0:3000:1000]
        assert stepped.base is None and stepped.shape == (3, 4096)
        with pytest.raises(IndexError, match="index 3000 is out of bounds for axis 0 with size 3000"):
            f.get_slice("large")[3000]
        with pytest.raises(IndexError):
            f.get_slice("large")[-3001]
    with brevis.safe_open(path, bf16="float32") as f:
        widened = (bits.astype(np.uint32) << 16).view(np.float32)
        for key in (slice(1000, 1004), 2500, (3, slice(None, 4)), (2500, 7)):
            got = f.get_slice("bits")[key]
            assert type(got) is type(widened[key]), key  # one element: a numpy scalar, as indexing gives
            np.testing.assert_array_equal(got, widened[key])
    try:
        import torch
    except ImportError:
        return
    with brevis.safe_open(path, framework="pt") as f:
        part = f.get_slice("bits")[2990:]
        assert part.dtype == torch.bfloat16 and tuple(part.shape) == (10, 2800)
        assert part.view(torch.int16).numpy().tobytes() == bits[2990:].tobytes()
        assert torch.equal(f.get_slice("large")[7, 5], torch.tensor(large[7, 5]))
        assert f.get_slice("large")[7, 5].shape == torch.Size([])


def test_one_element_of_a_slice_for_torch_stays_zero_dimensional(tmp_path):
    # What the "pt" path hands torch.from_numpy, seen without torch: the array as converted.
    path = str(tmp_path / "s.safetensors.brv")
    brevis.save_file({"v": np.arange(8, dtype=np.float32), "m": np.ones((3, 4), np.float16)}, path)
    with brevis.safe_open(path) as f:
        f._framework, f._to_torch = "pt", lambda array, dtype, device: array
        assert f.get_slice("v")[3].shape == ()
        assert f.get_slice("m")[1, 2].shape == ()
        assert f.get_slice("v")[3:5].shape == (2,) and f.get_slice("m")[1:, 2].shape == (2,)
        assert f.get_slice("v")[::2].flags.c_contiguous


def test_a_path_that_is_not_utf8_is_refused_plainly(tmp_path):
    with pytest.raises(ValueError, match="not UTF-8"):
        brevis.numpy.load_file(os.fsencode(str(tmp_path)) + b"/\xff\xfe.brv")


def test_bf16_widens_exactly_to_float32(tmp_path):
    source = os.path.join(DATA, "stories260K.bf16.safetensors")
    archive = str(tmp_path / "m.brv")
    brevis.compress(source, archive, level=1)
    bits = brevis.numpy.load_file(archive)
    wide = brevis.numpy.load_file(archive, bf16="float32")
    for name, b in bits.items():
        assert b.dtype == np.uint16 and wide[name].dtype == np.float32
        # The high half of each float32 is the BF16 word, the low half zero.
        as_words = wide[name].view(np.uint32)
        assert np.array_equal((as_words >> 16).astype(np.uint16), b) and not np.any(as_words & 0xFFFF)
    with pytest.raises(ValueError, match="bf16"):
        brevis.numpy.load_file(archive, bf16="float16")


EVERY_DTYPE = {
    "BOOL": np.array([True, False, True]),
    "U8": np.arange(7, dtype=np.uint8),
    "I8": np.array([-128, 0, 127], dtype=np.int8),
    "F8_E4M3": np.array([0x38, 0x40, 0xB8], dtype=np.uint8),
    "F8_E5M2": np.array([0x3C, 0x40], dtype=np.uint8),
    "I16": np.array([[-1, 2], [3, -32768]], dtype=np.int16),
    "U16": np.array([65535, 0], dtype=np.uint16),
    "F16": np.linspace(-2, 2, 12, dtype=np.float16).reshape(3, 4),
    "BF16": np.array([0x3F80, 0xBF80, 0x4049], dtype=np.uint16),
    "I32": np.array([-(2**31), 2**31 - 1], dtype=np.int32),
    "U32": np.array([2**32 - 1], dtype=np.uint32),
    "F32": np.random.default_rng(1).standard_normal((4, 5, 6)).astype(np.float32),
    "I64": np.array([-(2**63), 5], dtype=np.int64),
    "U64": np.array([2**64 - 1], dtype=np.uint64),
    "F64": np.array([np.pi, -np.e, 0.0]),
}


def test_every_dtype_through_save_file(tmp_path):
    tensors = {f"t_{d.lower()}": a for d, a in EVERY_DTYPE.items()}
    tensors["scalar"] = np.array(3.5, dtype=np.float32)
    tensors["empty"] = np.zeros((0, 4), dtype=np.float32)
    dtypes = {f"t_{d.lower()}": d for d in ("F8_E4M3", "F8_E5M2", "BF16")}
    archive = str(tmp_path / "every.safetensors.brv")
    brevis.save_file(tensors, archive, metadata={"format": "pt", "note": "every dtype"}, dtypes=dtypes)
    loaded = brevis.numpy.load_file(archive)
    assert set(loaded) == set(tensors)
    for name, a in tensors.items():
        assert loaded[name].shape == a.shape, name
        assert loaded[name].tobytes() == a.tobytes(), name
    # Decompressed, it is a safetensors file laid out as the safetensors library lays one out:
    # header padded to 8 bytes, tensors contiguous, largest element size first and then by name,
    # so that each is aligned to its element size.
    out = brevis.decompress(archive)
    assert os.path.basename(out) == "every.safetensors"
    metadata, read = read_safetensors(out)
    n = struct.unpack("<Q", open(out, "rb").read(8))[0]
    assert n % 8 == 0
    assert metadata == {"format": "pt", "note": "every dtype"}
    assert list(read) == sorted(tensors, key=lambda k: (-tensors[k].dtype.itemsize, k))
    data = open(out, "rb").read()
    header = json.loads(data[8:8 + n])
    for name, t in header.items():
        if name != "__metadata__":
            assert t["data_offsets"][0] % tensors[name].dtype.itemsize == 0, name
    for name, (dtype, shape, raw) in read.items():
        assert raw == tensors[name].tobytes() and shape == tensors[name].shape
        assert dtype == (dtypes.get(name) or {"scalar": "F32", "empty": "F32"}.get(name) or name[2:].upper())


def test_save_file_stores_complex64_and_block_scales(tmp_path):
    # What load_file hands out for C64 and F8_E8M0 tensors saves back as them (save_file refused
    # complex64, which safetensors holds as C64).
    c = (np.arange(6, dtype=np.float32) + 1j * np.arange(6, dtype=np.float32)).astype(np.complex64).reshape(2, 3)
    scales = np.array([0x7F, 0x80, 0x01], dtype=np.uint8)
    archive = str(tmp_path / "c.safetensors.brv")
    brevis.save_file({"c": c, "s": scales}, archive, dtypes={"s": "F8_E8M0"})
    _, read = read_safetensors(brevis.decompress(archive))
    assert read["c"] == ("C64", (2, 3), c.tobytes())
    assert read["s"] == ("F8_E8M0", (3,), scales.tobytes())
    loaded = brevis.numpy.load_file(archive)
    assert loaded["c"].dtype == np.complex64 and np.array_equal(loaded["c"], c)
    assert np.array_equal(loaded["s"], scales)


def test_save_file_refuses_what_safetensors_cannot_hold(tmp_path):
    a = np.zeros(2, dtype=np.float32)
    out = str(tmp_path / "x.brv")
    with pytest.raises(ValueError, match="complex128"):
        brevis.save_file({"c": np.zeros(2, dtype=np.complex128)}, out)
    with pytest.raises(ValueError, match="metadata"):
        brevis.save_file({"a": a}, out, metadata={"n": 1})
    with pytest.raises(ValueError, match="cannot hold"):
        brevis.save_file({"a": a}, out, dtypes={"a": "BF16"})
    with pytest.raises(ValueError, match="cannot hold"):
        brevis.save_file({"h": np.ones(2, np.float16)}, out, dtypes={"h": "BF16"})
    with pytest.raises(ValueError, match="only BF16"):
        brevis.save_file({"i": np.ones(2, np.int32)}, out, dtypes={"i": "F32"})
    with pytest.raises(ValueError, match="not given"):
        brevis.save_file({"a": a}, out, dtypes={"b": "BF16"})
    with pytest.raises(ValueError, match="__metadata__"):
        brevis.save_file({"__metadata__": a, "b": a}, out)
    with pytest.raises(TypeError, match="names must be str"):
        brevis.save_file({1: a}, out)
    with pytest.raises(TypeError, match="dict"):
        brevis.save_file([("a", a)], out)
    with pytest.raises(TypeError, match="masked"):
        brevis.save_file({"m": np.ma.masked_array(a, [True, False])}, out)
    assert not os.path.exists(out)
    # Any layout and byte order is stored as safetensors holds it: C order, little-endian.
    tensors = {"f": np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
               "s": np.arange(10, dtype=np.int16)[::3], "b": np.arange(4, dtype=">f8"), "é": np.ones(1, np.uint8)}
    brevis.save_file(tensors, out)
    loaded = brevis.numpy.load_file(out)
    for k, v in tensors.items():
        assert loaded[k].tobytes() == np.ascontiguousarray(v).astype(v.dtype.newbyteorder("<")).tobytes(), k


def test_arguments_are_checked_where_they_are_given(tmp_path):
    source = os.path.join(DATA, "stories260K.bf16.safetensors")
    archive = tmp_path / "m.brv"
    assert brevis.compress(pathlib.Path(source), archive, level=1) == archive.stat().st_size
    for bad, error in ((dict(level=5.9), TypeError), (dict(level=True), TypeError), (dict(level=0), ValueError),
                       (dict(threads=-1), ValueError), (dict(overwrite="False"), TypeError)):
        with pytest.raises(error):
            brevis.compress(source, str(tmp_path / "y.brv"), **bad)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        brevis.compress(source, archive)
    with pytest.raises(FileNotFoundError, match="directory"):
        brevis.compress(source, tmp_path / "no" / "such.brv")
    with pytest.raises(IsADirectoryError):
        brevis.compress(tmp_path)
    with pytest.raises(ValueError, match="archive itself"):
        brevis.decompress(archive, archive, overwrite=True)
    with pytest.raises(ValueError, match="threads"):
        brevis.numpy.load_file(archive, threads=-1)
    with pytest.raises(TypeError, match="path"):
        brevis.numpy.load_file(12)
    # Paths as str, bytes or os.PathLike alike.
    assert set(brevis.numpy.load_file(os.fsencode(str(archive)))) == set(brevis.numpy.load_file(archive))
    assert brevis.decompress(os.fsencode(str(archive)), tmp_path / "b.safetensors") == str(tmp_path / "b.safetensors")
    with pytest.raises(TypeError, match="tensor"):
        brevis.explain(archive, tensor=0)
    f = brevis.safe_open(archive)
    f.close()
    with pytest.raises(brevis.BrevisError, match="closed"):
        f.keys()
    with pytest.raises(ValueError, match="bf16"):
        brevis.safe_open(archive, bf16="nope")


def test_a_zero_dimensional_bf16_tensor_widens_to_an_array(tmp_path):
    out = str(tmp_path / "s.brv")
    brevis.save_file({"s": np.array(0x3F80, np.uint16)}, out, dtypes={"s": "BF16"})
    x = brevis.numpy.load_file(out, bf16="float32")["s"]
    assert isinstance(x, np.ndarray) and x.shape == () and x == 1.0


def test_an_archive_of_a_file_that_was_not_safetensors_does_not_load_as_empty(tmp_path):
    blob = tmp_path / "notes.txt"
    blob.write_bytes(b"not a checkpoint\n" * 100)
    brevis.compress(blob)
    with pytest.raises(brevis.BrevisError, match="no tensors to load"):
        brevis.numpy.load_file(str(blob) + ".brv")
    assert open(brevis.decompress(str(blob) + ".brv", tmp_path / "back.txt"), "rb").read() == blob.read_bytes()


def test_metadata_of_a_header_padded_with_nuls(tmp_path):
    h = json.dumps({"__metadata__": {"k": "v"}, "a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}}).encode()
    h += b"\0" * (-len(h) % 8 or 8)
    source = tmp_path / "p.safetensors"
    source.write_bytes(len(h).to_bytes(8, "little") + h + b"\x01\x02")
    brevis.compress(source)
    with brevis.safe_open(str(source) + ".brv") as f:
        assert f.keys() == ["a"] and f.metadata() == {"k": "v"}


def test_tensors_of_dtypes_programs_have_no_words_for_load_as_their_bytes(tmp_path):
    # F4, F6, F8_E8M0 and C64 tensors are kept in `bytes` regions, between ordinary tensors.
    rng = np.random.default_rng(5)
    parts = [("w", "F32", [4000], rng.standard_normal(4000).astype(np.float32).tobytes()),
             ("z", "C64", [3000], (rng.standard_normal(3000) + 1j).astype(np.complex64).tobytes()),
             ("scale", "F8_E8M0", [50, 100], rng.integers(100, 130, 5000, dtype=np.uint8).tobytes()),
             ("q", "F4", [6000], rng.integers(0, 256, 3000, dtype=np.uint8).tobytes()),
             ("nothing", "F6_E2M3", [0], b""),
             ("w2", "F32", [4000], rng.standard_normal(4000).astype(np.float32).tobytes())]
    source = tmp_path / "mixed.safetensors"
    write_safetensors(source, parts)
    brevis.compress(source)
    archive = str(source) + ".brv"
    got = brevis.numpy.load_file(archive)
    assert list(got) == [name for name, *_ in parts]  # file order, every tensor
    for name, dtype, shape, raw in parts:
        assert got[name].tobytes() == raw, name
    assert got["z"].dtype == np.complex64 and got["z"].shape == (3000,)
    assert got["scale"].dtype == np.uint8 and got["scale"].shape == (50, 100)
    assert got["q"].dtype == np.uint8 and got["q"].shape == (3000,)  # packed: two elements a byte
    with brevis.safe_open(archive) as f:
        assert f.get_slice("scale").get_dtype() == "F8_E8M0"
        assert np.array_equal(f.get_slice("scale")[7:9], got["scale"][7:9])
        assert np.array_equal(f.get_slice("z")[100:105], got["z"][100:105])
    tensor = tmp_path / "scale.bin"
    subprocess.run([BREVISC, "run", "-q", archive, "--tensor", "scale", "-o", str(tensor)], check=True)
    assert tensor.read_bytes() == parts[2][3]
    # Empty ones where no region of bytes is: between two tensor regions, and last.
    f32 = np.arange(4, dtype=np.float32).tobytes()
    source = tmp_path / "empties.safetensors"
    write_safetensors(source, [("a", "F32", [4], f32), ("e", "F8_E8M0", [0], b""), ("z", "F32", [4], f32),
                               ("last", "C64", [0, 3], b"")])
    brevis.compress(source)
    got = brevis.numpy.load_file(str(source) + ".brv")
    assert list(got) == ["a", "e", "z", "last"]
    assert got["e"].shape == (0,) and got["last"].shape == (0, 3) and got["last"].dtype == np.complex64
    subprocess.run([BREVISC, "run", "-q", str(source) + ".brv", "--tensor", "e", "-o", str(tmp_path / "e.bin")],
                   check=True)
    assert (tmp_path / "e.bin").read_bytes() == b""


def test_errors_are_exceptions_with_the_librarys_message(tmp_path):
    with pytest.raises(FileNotFoundError):
        brevis.numpy.load_file(str(tmp_path / "missing.brv"))
    with pytest.raises(FileNotFoundError):
        brevis.compress(str(tmp_path / "missing.safetensors"))
    not_archive = tmp_path / "text.brv"
    not_archive.write_bytes(b"hello, this is not an archive at all" * 10)
    with pytest.raises(brevis.BrevisError, match="not a brevis archive|magic"):
        brevis.safe_open(str(not_archive))
    source = os.path.join(DATA, "stories260K.bf16.safetensors")
    archive = tmp_path / "m.brv"
    brevis.compress(source, str(archive), level=1)
    data = bytearray(archive.read_bytes())
    truncated = tmp_path / "truncated.brv"
    truncated.write_bytes(bytes(data[: len(data) // 2]))
    with pytest.raises(brevis.BrevisError, match="truncated or corrupt"):
        brevis.numpy.load_file(str(truncated))
    # A damaged payload byte: the tensor that reads it fails its digest.
    data[72 + 40000] ^= 0x55
    damaged = tmp_path / "damaged.brv"
    damaged.write_bytes(bytes(data))
    with pytest.raises(brevis.BrevisError, match="tensor"):
        brevis.numpy.load_file(str(damaged))
    with pytest.raises(brevis.BrevisError):
        brevis.decompress(str(damaged), str(tmp_path / "never.safetensors"))
    assert not os.path.exists(tmp_path / "never.safetensors")
    with pytest.raises(ValueError, match="level"):
        brevis.compress(source, str(tmp_path / "x.brv"), level=10)
    with pytest.raises(FileExistsError):
        brevis.compress(source, str(archive))
    for framework in ("jax", [], None):
        with pytest.raises(ValueError, match="framework"):
            brevis.safe_open(str(archive), framework=framework)
    # A directory where a file belongs, even with overwrite; a non-empty one a directory archive
    # would be written into, without it; a path with a NUL.
    (tmp_path / "somedir").mkdir()
    for overwrite in (False, True):
        with pytest.raises(IsADirectoryError):
            brevis.compress(source, str(tmp_path / "somedir"), overwrite=overwrite)
        with pytest.raises(IsADirectoryError):
            brevis.numpy.save_file({"a": np.zeros(2, np.float32)}, str(tmp_path / "somedir"), overwrite=overwrite)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "m.safetensors").write_bytes(open(source, "rb").read())
    brevisc_archive = str(tmp_path / "tree.brv")
    subprocess.run([BREVISC, "compress", "-q", "-l", "1", str(tree), "-o", brevisc_archive], check=True)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "other").write_bytes(b"x")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        brevis.decompress(brevisc_archive, str(tmp_path / "full"))
    assert brevis.decompress(brevisc_archive, str(tmp_path / "full"), overwrite=True) == str(tmp_path / "full")
    assert (tmp_path / "full" / "m.safetensors").read_bytes() == open(source, "rb").read()
    (tmp_path / "afile").write_bytes(b"keep")
    for overwrite in (False, True):  # a directory archive needs a directory: the file stays
        with pytest.raises(NotADirectoryError):
            brevis.decompress(brevisc_archive, str(tmp_path / "afile"), overwrite=overwrite)
    assert (tmp_path / "afile").read_bytes() == b"keep"
    with pytest.raises(ValueError, match="NUL"):
        brevis.numpy.load_file(str(tmp_path / "a\0b.brv"))


def test_a_tensor_from_python_is_the_clis(tmp_path):
    source = os.path.join(DATA, "stories260K.safetensors")
    archive = str(tmp_path / "m.brv")
    brevis.compress(source, archive, level=1)
    out = str(tmp_path / "t.bin")
    subprocess.run([BREVISC, "run", archive, "--tensor", "layers.2.attention.wq.weight", "-o", out], check=True)
    with brevis.safe_open(archive) as f:
        assert f.get_tensor("layers.2.attention.wq.weight").tobytes() == open(out, "rb").read()


def test_an_archive_from_the_cli_loads(tmp_path):
    source = tmp_path / "m.safetensors"
    source.write_bytes(open(os.path.join(DATA, "stories260K.bf16.safetensors"), "rb").read())
    subprocess.run([BREVISC, "compress", "-q", "-l", "1", str(source)], check=True)
    _, want = read_safetensors(str(source))
    got = brevis.numpy.load_file(str(source) + ".brv", threads=1)
    assert all(got[n].tobytes() == raw for n, (_, _, raw) in want.items())


def test_a_directory_archive_loads_every_shard(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    brevis.decompress  # noqa: B018 (the API under test below is load_file on a directory archive)
    a = {"x": np.arange(6, dtype=np.float32)}
    b = {"y": np.ones((2, 2), dtype=np.int16)}
    for name, tensors in (("a.safetensors", a), ("b.safetensors", b)):
        brevis.save_file(tensors, str(tmp_path / (name + ".brv")))
        brevis.decompress(str(tmp_path / (name + ".brv")), str(model / name))
    (model / "config.json").write_text('{"hidden": 2}')
    subprocess.run([BREVISC, "compress", "-q", "-l", "1", str(model)], check=True)
    got = brevis.numpy.load_file(str(model) + ".brv")
    assert set(got) == {"x", "y"}
    np.testing.assert_array_equal(got["x"], a["x"])
    np.testing.assert_array_equal(got["y"], b["y"])
    with brevis.safe_open(str(model) + ".brv") as f:
        assert f.metadata() is None  # two safetensors files
    out = brevis.decompress(str(model) + ".brv", str(tmp_path / "again"))
    assert (tmp_path / "again" / "config.json").read_text() == '{"hidden": 2}'
    assert open(os.path.join(out, "a.safetensors"), "rb").read() == open(model / "a.safetensors", "rb").read()


def test_torch():
    torch = pytest.importorskip("torch")
    import brevis.torch
    source = os.path.join(DATA, "stories260K.bf16.safetensors")
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        archive = os.path.join(tmp, "m.brv")
        brevis.compress(source, archive, level=1)
        tensors = brevis.torch.load_file(archive)
        _, want = read_safetensors(source)
        for name, (_, shape, raw) in want.items():
            t = tensors[name]
            assert t.dtype == torch.bfloat16 and tuple(t.shape) == shape
            assert t.view(torch.int16).numpy().tobytes() == raw
        with brevis.safe_open(archive, framework="pt") as f:
            assert f.get_tensor("norm.weight").dtype == torch.bfloat16
        again = os.path.join(tmp, "again.safetensors.brv")
        brevis.torch.save_file(tensors, again)
        back = brevis.torch.load_file(again)
        assert all(torch.equal(back[n].view(torch.int16), tensors[n].view(torch.int16)) for n in tensors)
        # Every dtype: the bits of each tensor, whatever torch type holds them.
        every = os.path.join(tmp, "every.brv")
        arrays = {d: a for d, a in EVERY_DTYPE.items()}
        brevis.save_file(arrays, every, dtypes={d: d for d in ("F8_E4M3", "F8_E5M2", "BF16")})
        loaded = brevis.torch.load_file(every)
        for d, a in arrays.items():
            t = loaded[d]
            raw = t.view(torch.int16) if t.dtype == torch.bfloat16 else t
            raw = raw.view(torch.uint8) if str(t.dtype).startswith("torch.float8") else raw
            assert raw.numpy().tobytes() == a.tobytes() and tuple(t.shape) == a.shape, d


def test_explain_reports_each_tensor_as_the_cli_does(tmp_path):
    source = os.path.join(DATA, "stories260K.bf16.safetensors")
    archive = str(tmp_path / "m.brv")
    brevis.compress(source, archive, level=1)
    report = brevis.explain(archive, tensor="layers.0.attention.wq.weight", level=1, candidates=3)
    cli = json.loads(subprocess.run([BREVISC, "explain", "--json", "-l", "1", "--candidates", "3", "--tensor",
                                     "layers.0.attention.wq.weight", archive], check=True, capture_output=True,
                                    text=True).stdout)["tensors"]
    assert report == cli
    (t,) = report
    assert t["name"] == "layers.0.attention.wq.weight" and t["dtype"] == "bf16" and t["shape"] == [64, 64]
    assert t["payload_bytes"] == sum(l["bytes"] for l in t["literals"])
    assert len(brevis.explain(archive, level=1, candidates=0)) == 49
    with pytest.raises(brevis.BrevisError, match="no tensor"):
        brevis.explain(archive, tensor="nope")
