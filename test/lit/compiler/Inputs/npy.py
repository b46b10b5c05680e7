# Small fixed inputs and readable outputs for `attnc run`, without numpy:
#   npy.py write FILE.npy DTYPE SHAPE V...   DTYPE f4, i4 or b1; SHAPE 2x3
#   npy.py print FILE.npy...                 one line per file: name = values
# The values are given and printed in row-major order (the .npy layout).
import ast
import os
import struct
import sys

CODES = {"f4": ("<f4", "f"), "f8": ("<f8", "d"), "i4": ("<i4", "i"), "b1": ("|b1", "?")}


def write(path, dtype, shape, values):
    descr, fmt = CODES[dtype]
    dims = tuple(int(x) for x in shape.split("x"))
    count = 1
    for d in dims:
        count *= d
    if len(values) != count:
        sys.exit(f"npy.py: {count} values expected, {len(values)} given")
    conv = float if fmt in "fd" else int
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, repr(dims))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (count, fmt), *[conv(v) for v in values]))


def number(v):
    """Integral values in full (int outputs come back as floats), others %g."""
    if v == v and abs(v) != float("inf") and v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return "%g" % v


def show(path):
    with open(path, "rb") as f:
        data = f.read()
    hlen = struct.unpack("<H", data[8:10])[0]
    header = ast.literal_eval(data[10 : 10 + hlen].decode())
    fmt = {v[0]: v[1] for v in CODES.values()}[header["descr"]]
    count = 1
    for d in header["shape"]:
        count *= d
    vals = struct.unpack("<%d%s" % (count, fmt), data[10 + hlen :])
    text = " ".join(number(v) for v in vals)
    print("%s = %s" % (os.path.basename(path)[:-4], text))


if sys.argv[1] == "write":
    write(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
else:
    for p in sys.argv[2:]:
        show(p)
