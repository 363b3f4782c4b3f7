"""The pure byte-buffer toolkit (codec/wire/bytebuf.py), the twin of bytebuf.pxd."""
import pytest

from fluss_fast import datatypes as D
from fluss_fast.codec import LOADED
from fluss_fast.codec.wire import bytebuf as B
from fluss_fast.codec.wire.varint import encode_varint
from fluss_fast.datatypes import DataType as T


def test_writes_are_little_endian_and_a_skipped_length_is_patched():
    out = bytearray()
    start = B.wb_skip(out, 4)
    B.wb_le16(out, -2)
    B.wb_le32(out, 7)
    B.wb_le64(out, -1)
    B.wb_varint(out, 300)
    B.wb_write(out, b"xy")
    B.wb_patch32(out, start, len(out) - 4)
    assert bytes(out) == (bytes([18, 0, 0, 0]) + b"\xfe\xff" + b"\x07\x00\x00\x00" + b"\xff" * 8
                          + b"\xac\x02" + b"xy")


@pytest.mark.parametrize("value", [0, 1, 127, 128, -1, (1 << 31) - 1, -(1 << 31)])
def test_reads_what_the_varint_writer_wrote(value):
    data = encode_varint(value, 32)
    assert B.read_v32(data, 0, len(data)) == (value, len(data))
    data = encode_varint(value, 64)
    assert B.read_v64(data, 0, len(data)) == (value, len(data))


def test_the_reader_never_passes_end():
    with pytest.raises(ValueError, match="truncated varint at byte 2"):
        B.read_varint(b"\x80\x80\x01", 0, 2, 5)
    with pytest.raises(ValueError, match="malformed varint ending at byte 5: more than 5 bytes"):
        B.read_varint(b"\xff" * 6, 0, 6, 5)
    with pytest.raises(ValueError, match="bad length 5 at byte 1: only 2 bytes left"):
        B.read_len(b"\x05ab", 0, 3)
    with pytest.raises(ValueError, match="needs 4 bytes at byte 1, 2 left"):
        B.need(1, 4, 3)


@pytest.mark.skipif(not LOADED.get("_compacted"), reason="extension _compacted is not built")
def test_the_compiled_reader_says_the_same():
    from fluss_fast.codec.rows.compacted import CompactedRowDecoder

    row = b"\x00" + b"\xff\xff"  # a BIGINT whose varint runs past the row's end
    with pytest.raises(ValueError) as compiled:
        CompactedRowDecoder([T(D.BIGINT)]).decode(row)
    with pytest.raises(ValueError) as pure:
        B.read_v64(row, 1, len(row))
    assert str(compiled.value).endswith(str(pure.value))
