"""The three tensor formats' names, byte sizes and bit fields: plain constants, no numpy, no I/O.

Apart from `dtypes.py` so that reading a packet needs no numpy: the command line reads it while numpy loads.
"""

DTYPES = ("float16", "bfloat16", "float32")
ITEM_SIZE = {"float16": 2, "bfloat16": 2, "float32": 4}
# (sign, exponent, mantissa) field widths in bits.
FIELD_BITS = {"bfloat16": (1, 8, 7), "float16": (1, 5, 10), "float32": (1, 8, 23)}
