"""Wire primitives every format builds on: CRC-32C, varints, Fluss's MurmurHash variants, and the
byte-buffer toolkit (``buffer.pxd`` for the compiled codecs, ``buffer.py`` for the pure ones)."""
