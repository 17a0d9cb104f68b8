"""Safetensors I/O and quantized files for nazar.torch: the tensors of a nazar model file by the
names of its weight-naming contract (docs/design.md §5). Needs only struct, json and numpy, so it
works without torch and without the `safetensors` package (the fixture tools use it to compare
files); load_state_dict and torch tensors as inputs need torch."""

import json
import os
import struct
import tempfile

import numpy as np

try:  # the safetensors I/O below works without torch
    import torch
except ImportError:  # pragma: no cover
    torch = None


# safetensors I/O (https://github.com/huggingface/safetensors): u64 LE header length, JSON header
# {name: {dtype, shape, data_offsets}, "__metadata__": {str: str}}, then the data buffer.
# Written exactly as nazar writes it (sorted names, compact JSON with sorted keys, header padded
# with spaces to 8 bytes), so an all-F32 file has the same bytes from either side.


_DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32, "I8": np.int8}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items()}
MAX_HEADER = 100 << 20


def _as_numpy(t):
    if torch is not None and isinstance(t, torch.Tensor):
        t = t.detach().cpu().numpy()
    a = np.ascontiguousarray(t)
    if a.dtype not in _NAMES:
        raise TypeError(f"unsupported dtype {a.dtype}; use float32, float64, int64 or int32")
    return a.astype(a.dtype.newbyteorder("<"), copy=False)


def serialize_safetensors(tensors, metadata=None):
    """bytes of a safetensors file. tensors: {name: numpy array or torch tensor}."""
    header, chunks, pos = {}, [], 0
    for name in sorted(tensors):
        if not name or name == "__metadata__":
            raise ValueError(f"invalid tensor name {name!r}")
        a = _as_numpy(tensors[name])
        raw = a.tobytes()
        header[name] = {"dtype": _NAMES[a.dtype.newbyteorder("=")], "shape": list(a.shape),
                        "data_offsets": [pos, pos + len(raw)]}
        chunks.append(raw)
        pos += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    h = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(chunks)


def save_safetensors(path, tensors, metadata=None):
    """Atomic write: temp file in the same directory, fsync, rename (like nazar's fileio.h)."""
    data = serialize_safetensors(tensors, metadata)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=os.path.basename(path) + ".tmp.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def parse_safetensors(data, source="<memory>"):
    """(tensors {name: numpy array in the file's dtype}, metadata {str: str})."""
    if len(data) < 8:
        raise ValueError(f"{source}: {len(data)} bytes, not a safetensors file")
    (n,) = struct.unpack("<Q", data[:8])
    if n > MAX_HEADER or n > len(data) - 8:
        raise ValueError(f"{source}: header length {n} exceeds the file size {len(data)} or the limit")

    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise ValueError(f"{source}: duplicate key in header")
        return dict(pairs)

    header = json.loads(data[8:8 + n].decode("utf-8"), object_pairs_hook=no_duplicates)
    metadata = header.pop("__metadata__", {}) or {}
    buf = memoryview(data)[8 + n:]
    tensors, pos = {}, 0
    for name, e in sorted(header.items(), key=lambda kv: tuple(kv[1]["data_offsets"])):
        if e["dtype"] == "BF16":  # quantized model files: widened to float32 here (exact)
            b, end = e["data_offsets"]
            count = int(np.prod(e["shape"], dtype=np.int64))
            if b != pos or end - b != count * 2 or end > len(buf):
                raise ValueError(f"{source}: bad data_offsets for {name!r}")
            bits = np.frombuffer(buf[b:end], dtype="<u2").astype(np.uint32) << 16
            tensors[name] = bits.view(np.float32).reshape(e["shape"])
            pos = end
            continue
        dt = np.dtype(_DTYPES[e["dtype"]]).newbyteorder("<")
        b, end = e["data_offsets"]
        count = int(np.prod(e["shape"], dtype=np.int64))
        if b != pos or end - b != count * dt.itemsize or end > len(buf):
            raise ValueError(f"{source}: bad data_offsets for {name!r}")
        tensors[name] = np.frombuffer(buf[b:end], dtype=dt).reshape(e["shape"]).astype(dt.newbyteorder("="))
        pos = end
    if pos != len(buf):
        raise ValueError(f"{source}: data buffer has {len(buf)} bytes, tensors cover {pos}")
    return tensors, metadata


def load_safetensors(path):
    with open(path, "rb") as f:
        return parse_safetensors(f.read(), path)


def dequantize(tensors, metadata, source="<memory>"):
    """The fp32 tensors of a quantized model file (nazar quantize; README "Formats"): int8
    matrices times their per-row "<name>.scale" (w = w_q * s_row, in float32 as nazar does), the
    ".scale" tensors dropped; bf16 ones are float32 already (parse_safetensors). Files without
    "nazar.precision" come back unchanged."""
    precision = metadata.get("nazar.precision")
    if precision is None:
        return tensors
    if precision not in ("int8", "bf16"):
        raise ValueError(f"{source}: nazar.precision must be int8 or bf16, got {precision!r}")
    out = {}
    for name, t in tensors.items():
        if name.endswith(".scale") and name[:-len(".scale")] in tensors \
                and tensors[name[:-len(".scale")]].dtype == np.int8:
            continue
        if t.dtype == np.int8:
            if precision != "int8" or name + ".scale" not in tensors:
                raise ValueError(f"{source}: int8 tensor {name!r} without {name + '.scale'!r}")
            scale = tensors[name + ".scale"].astype(np.float32)
            out[name] = t.astype(np.float32) * scale[:, None]
        else:
            out[name] = t
    return out


def load_state_dict(module, path, prefix="", strict=True):
    """Copies the tensors of a nazar file (names prefix + state_dict names) into module."""
    tensors, _ = load_safetensors(path)
    sd = {k[len(prefix):]: torch.from_numpy(v) for k, v in tensors.items() if k.startswith(prefix)}
    module.load_state_dict(sd, strict=strict)
