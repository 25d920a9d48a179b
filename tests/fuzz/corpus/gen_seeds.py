#!/usr/bin/env python3
"""Writes the seed files of the loader fuzz targets (standard library only): small valid files
tests/fuzz/corpus/{safetensors,checkpoint,idx,idx_gzip,cifar}/seed_*, and regress_* inputs that
crashed or were wrongly accepted before (also in corpus/npy). Run from anywhere; rewrites only
those files, so crash inputs added by hand stay. Each file is small (libFuzzer mutates small
inputs best, and the largest seed sets its maximum input length)."""
import gzip
import json
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, target)
    os.makedirs(d, exist_ok=True)
    assert len(data) < 64 * 1024
    with open(os.path.join(d, "seed_" + name), "wb") as f:
        f.write(data)


# --- safetensors: the qgrad/reference layout, optionally with qgrad's CRC32 metadata --------
ST_FORMATS = {"F32": "<f", "F64": "<d", "I8": "<b", "U8": "<B", "I16": "<h", "I32": "<i",
              "I64": "<q"}


def safetensors(tensors, metadata=None, checksums=True):
    """tensors: list of (name, dtype, shape, values) in file order."""
    header, data = {}, b""
    crcs = {}
    for name, dt, shape, values in tensors:
        raw = struct.pack("<%d%s" % (len(values), ST_FORMATS[dt][1]), *values)
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        crcs[name] = "%08x" % (zlib.crc32(raw) & 0xFFFFFFFF)
        data += raw
    meta = dict(metadata or {})
    if checksums and (tensors or meta):
        # The metadata's CRC32: every other entry in key order, each key and value preceded by
        # its byte length as 8 little-endian bytes (see nn/serialize/safetensors.h).
        flat = b"".join(struct.pack("<Q", len(x)) + x for k in sorted(meta, key=str.encode)
                        for x in (k.encode(), meta[k].encode()))
        crcs = {"__metadata__": "%08x" % (zlib.crc32(flat) & 0xFFFFFFFF), **crcs}
        meta["qgrad.crc32"] = json.dumps(crcs, separators=(",", ":"))
    if meta:
        header = {"__metadata__": meta, **header}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


put("safetensors", "two.safetensors",
    safetensors([("a", "F32", [2], [1.0, 2.0]), ("b", "U8", [3], [1, 2, 3])]))
put("safetensors", "no_crc.safetensors",
    safetensors([("w", "F64", [1, 2], [0.5, -1.0]), ("i", "I16", [2], [-3, 7])],
                {"format": "pt"}, checksums=False))
put("safetensors", "every_dtype.safetensors",
    safetensors([("l", "I64", [1], [1 << 40]), ("d", "F64", [], [3.25]), ("f", "F32", [2, 1], [1, 2]),
                 ("i", "I32", [1], [-5]), ("h", "I16", [0, 3], []), ("c", "I8", [2], [-1, 1]),
                 ("u", "U8", [1], [9])], {"note": "x"}))
put("safetensors", "empty.safetensors", safetensors([]))


# --- checkpoint: a safetensors file with qgrad's checkpoint metadata and section prefixes ----
def checkpoint(tensors, epoch=1, step=3, extra_meta=None):
    meta = {"qgrad.format": "checkpoint", "qgrad.version": "1", "qgrad.epoch": str(epoch),
            "qgrad.step": str(step)}
    meta.update(extra_meta or {})
    return safetensors(tensors, meta)


put("checkpoint", "model_optim.safetensors",
    checkpoint([("optim.state.0.step", "I64", [], [3]), ("model.b", "F32", [2], [0.0, 0.5]),
                ("model.w", "F32", [3, 2], [1, 2, 3, 4, 5, 6]),
                ("optim.param_groups.0.lr", "F64", [], [0.1]),
                ("sched.last_epoch", "I64", [], [3]), ("extra.loader.epoch", "I64", [], [1])],
               extra_meta={"run": "fuzz"}))
put("checkpoint", "model_only.safetensors",
    checkpoint([("model.seen", "I64", [], [0]), ("model.w", "F32", [1], [0.25])], 0, 0))


# --- IDX: magic 00 00 <type> <ndim>, big-endian uint32 dims, big-endian data ----------------
IDX_TYPES = {0x08: ">B", 0x09: ">b", 0x0B: ">h", 0x0C: ">i", 0x0D: ">f", 0x0E: ">d"}


def idx(code, shape, values):
    out = bytes([0, 0, code, len(shape)]) + b"".join(struct.pack(">I", d) for d in shape)
    return out + b"".join(struct.pack(IDX_TYPES[code], v) for v in values)


IDX_SEEDS = {
    "images_ubyte.idx": idx(0x08, [2, 3, 3], list(range(18))),
    "labels_ubyte.idx": idx(0x08, [4], [0, 9, 3, 1]),
    "sbyte.idx": idx(0x09, [2, 2], [-128, -1, 0, 127]),
    "short.idx": idx(0x0B, [3], [1, -2, 300]),
    "int.idx": idx(0x0C, [2, 1], [0x01020304, -2]),
    "float.idx": idx(0x0D, [1], [1.5]),
    "double.idx": idx(0x0E, [2], [0.25, -8.0]),
    "empty.idx": idx(0x08, [0, 28, 28], []),
}
for name, data in IDX_SEEDS.items():
    put("idx", name, data)
    # mtime=0: reproducible bytes.
    put("idx_gzip", name + ".gz", gzip.compress(data, mtime=0))
    # The gzip target also takes plain bytes (it compresses them itself, see fuzz_idx_gzip.cpp).
    put("idx_gzip", name, data)
# Two gzip members (what `cat a.gz b.gz` makes) split inside the header.
d = IDX_SEEDS["images_ubyte.idx"]
put("idx_gzip", "two_members.idx.gz", gzip.compress(d[:9], mtime=0) + gzip.compress(d[9:], mtime=0))


# --- CIFAR binary: records of label byte(s) + 3072 image bytes (CHW) -----------------------
def cifar_image(i):
    return bytes((i * 31 + p) % 256 for p in range(3072))


put("cifar", "cifar10_two.bin", bytes([3]) + cifar_image(0) + bytes([9]) + cifar_image(1))
put("cifar", "cifar100_two.bin", bytes([19, 99]) + cifar_image(0) + bytes([0, 5]) + cifar_image(1))
put("cifar", "bad_label.bin", bytes([200]) + cifar_image(2))
put("cifar", "truncated.bin", bytes([1]) + cifar_image(3)[:100])
put("cifar", "empty.bin", b"")

# --- Regression seeds: inputs that crashed or were wrongly accepted before issue 9 ----------
def npy(header, data=b"", major=1):
    total = 10 + len(header) + 1
    header = header + " " * ((64 - total % 64) % 64) + "\n"
    return b"\x93NUMPY" + bytes([major, 0]) + struct.pack("<H", len(header)) + header.encode() + data


def put_regress(target, name, data):
    d = os.path.join(HERE, target)
    with open(os.path.join(d, "regress_" + name), "wb") as f:
        f.write(data)


F4 = "{'descr': '<f4', 'fortran_order': False, "
put_regress("npy", "shape_int.npy", npy(F4 + "'shape': 7, }", b"abcd"))  # loaded as 0-d
put_regress("npy", "shape_no_value.npy", npy(F4 + "'shape':"))  # std::out_of_range
put_regress("npy", "hidden_overflow.npy",  # strides overflowed behind a leading 0
            npy(F4 + "'shape': (0, 4294967296, 4294967296, 4294967296), }"))
put_regress("npy", "v2_huge_header.npy", b"\x93NUMPY\x02\x00\xf0\xff\xff\xff{}")
put_regress("idx", "hidden_overflow.idx", bytes([0, 0, 8, 3, 0, 0, 0, 0]) + b"\xff" * 8)
put_regress("idx_gzip", "hidden_overflow.idx.gz",
            gzip.compress(bytes([0, 0, 8, 3, 0, 0, 0, 0]) + b"\xff" * 8, mtime=0))
put_regress("idx_gzip", "trailing_zeros.idx.gz",  # 6 declared bytes, 1 MiB inflated
            gzip.compress(bytes([0, 0, 8, 1, 0, 0, 0, 6]) + bytes(1 << 20), mtime=0))
deep = "[" * 3000 + "]" * 3000  # dump() of it in an error message recursed
text = ('{"a":{"dtype":"F32","shape":%s,"data_offsets":[0,0]}}' % deep).encode()
put_regress("safetensors", "deep_shape.safetensors", struct.pack("<Q", len(text)) + text)
text = b'{"a":{"dtype":"U8","shape":[0,4294967296,4294967296,4294967296],"data_offsets":[0,0]}}'
put_regress("safetensors", "hidden_overflow.safetensors", struct.pack("<Q", len(text)) + text)
