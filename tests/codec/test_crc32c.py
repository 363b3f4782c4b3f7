"""CRC-32C: known answers, buffer handling, and agreement of every implementation."""
import array
import importlib
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluss_fast.codec.wire import crc32c as crc_mod

try:
    _ext = importlib.import_module("fluss_fast.codec.wire._crc32c")
except ImportError:  # built without a compiler: only the pure twin can be checked
    _ext = None

IMPLS = [pytest.param(crc_mod.crc32c_py, id="py")]
if _ext is not None:
    IMPLS += [pytest.param(_ext.crc32c, id="ext"),
              pytest.param(_ext._crc32c_software, id="ext-table")]

# docs/contributing/formats.md §3.2: the 75-byte INDEXED batch, CRC over bytes 25..74
DATA_MD_BATCH = bytes.fromhex(
    "0000000000000000" "3f000000" "00" "0000000000000000"
    "a5c2e32f" "0100" "01" "00000000"
    "ffffffffffffffff" "ffffffff" "01000000"
    "17000000" "00" "0c" "02000000" "03000000" "00000000" "01000000" "6162" "78797a"
)


@pytest.fixture(params=IMPLS)
def crc(request):
    return request.param


def test_data_md_batch_is_75_bytes():
    assert len(DATA_MD_BATCH) == 75


@pytest.mark.parametrize("data, expected", [
    (b"", 0),
    (b"123456789", 0xE3069283),
    (DATA_MD_BATCH[25:], 0x2FE3C2A5),
    # RFC 3720 appendix B.4
    (bytes(32), 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
])
def test_known_answers(crc, data, expected):
    assert crc(data) == expected


def test_running_checksum(crc):
    assert crc(b"56789", crc(b"1234")) == 0xE3069283
    assert crc(b"", 0xE3069283) == 0xE3069283


@pytest.mark.parametrize("make", [bytes, bytearray, memoryview,
                                  lambda b: memoryview(b"xyz" + b + b"q")[3:-1],
                                  lambda b: memoryview(bytearray(b"\x00" + b))[1:]])
def test_buffer_types(crc, make):
    assert crc(make(b"123456789")) == 0xE3069283


def test_typed_array_is_hashed_by_its_bytes(crc):
    arr = array.array("I", [1, 2, 3, 0xDEADBEEF])
    assert crc(arr) == crc(arr.tobytes())


def test_non_contiguous_rejected(crc):
    with pytest.raises(BufferError):
        crc(memoryview(b"0123456789")[::2])


def test_bad_running_value(crc):
    with pytest.raises(OverflowError):
        crc(b"a", -1)
    with pytest.raises(OverflowError):
        crc(b"a", 1 << 32)


def test_rejects_non_buffers(crc):
    with pytest.raises(TypeError):
        crc("text")


# Lengths around the hardware path's thresholds: 8-byte steps, 3x256-byte and 3x8192-byte
# interleaved blocks, the GIL-release threshold (4096), plus misaligned starts.
EDGE_LENGTHS = [1, 7, 8, 9, 255, 767, 768, 769, 1000, 4095, 4096, 4097,
                3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1, 3 * 8192 + 3 * 256 + 13, 70001]


@pytest.mark.skipif(_ext is None, reason="extension not built")
@pytest.mark.parametrize("length", EDGE_LENGTHS)
@pytest.mark.parametrize("shift", [0, 1, 5])
def test_extension_matches_pure_on_thresholds(length, shift):
    data = os.urandom(length + shift)
    view = memoryview(data)[shift:]
    expected = crc_mod.crc32c_py(view)
    assert _ext.crc32c(view) == expected
    assert _ext._crc32c_software(view) == expected
    cut = length // 3
    assert _ext.crc32c(view[cut:], _ext.crc32c(view[:cut])) == expected


def test_detects_single_bit_flip(crc):
    data = bytearray(os.urandom(1000))
    before = crc(data)
    data[500] ^= 0x10
    assert crc(data) != before


@given(st.binary(max_size=300), st.integers(0, 7), st.integers(0, 7),
       st.integers(0, 0xFFFFFFFF))
@settings(max_examples=300, deadline=None)
def test_twins_agree(data, head, tail, start):
    lo = min(head, len(data))
    hi = max(lo, len(data) - tail)
    view = memoryview(data)[lo:hi]  # unaligned start and odd lengths
    expected = crc_mod.crc32c_py(view, start)
    if _ext is not None:
        assert _ext.crc32c(view, start) == expected
        assert _ext._crc32c_software(view, start) == expected
    assert crc_mod.crc32c(bytes(view), start) == expected


@given(st.binary(max_size=300), st.binary(max_size=300))
@settings(deadline=None)
def test_concatenation(a, b):
    for f in [p.values[0] for p in IMPLS]:
        assert f(b, f(a)) == f(a + b)


def test_implementation_names():
    assert crc_mod.implementation_py() == "python"
    if _ext is not None:
        assert _ext.implementation() in ("sse4.2", "slicing-by-8")
