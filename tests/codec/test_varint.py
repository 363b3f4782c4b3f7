"""One varint pair: the protobuf framing of rpc.wire and the row / KV codecs share codec.wire.varint."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluss_fast.codec.wire import varint
from fluss_fast.rpc import wire


def test_rpc_wire_uses_the_codec_varints():
    assert wire.encode_varint is varint.encode_varint
    assert wire.read_varint is varint.read_varint


@given(st.integers(-(1 << 31), (1 << 31) - 1))
def test_a_32_bit_field_takes_at_most_five_bytes_and_decodes_back(value):
    encoded = varint.encode_varint(value, 32)
    assert len(encoded) <= 5
    assert varint.decode_varint(encoded, 0, 32) == (value, len(encoded))


@given(st.integers(-(1 << 63), (1 << 63) - 1))
def test_the_default_is_the_64_bit_pattern(value):
    encoded = varint.encode_varint(value)
    assert encoded == varint.encode_varint(value, 64)
    assert varint.decode_varint(encoded, 0, 64) == (value, len(encoded))
    assert varint.read_varint(encoded, 0, len(encoded)) == (value & varint._U64, len(encoded))


@pytest.mark.parametrize("value", [0, 1, 0x7F, 0x80, 300, (1 << 31) - 1])
def test_small_non_negative_values_encode_alike_in_both_widths(value):
    assert varint.encode_varint(value, 32) == varint.encode_varint(value, 64)
