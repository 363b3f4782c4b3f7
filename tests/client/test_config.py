"""fluss_fast.Config against pyfluss's Config at runtime: keys, defaults, parsing, messages, setters."""
from __future__ import annotations

import pickle

import pytest

import fluss_fast
from fluss_fast.config import _OPTIONS, ALIASES

fluss = pytest.importorskip("fluss")

# fluss_fast extensions pyfluss does not have
EXTENSION_KEYS = ("request-timeout", "client.compression-threads",
                  "writer.dynamic-create-partition.enabled", "scanner.log.read-preference")
PYFLUSS_KEYS = [o for o in _OPTIONS if o[0] not in EXTENSION_KEYS]
PROPS = [o[1] for o in PYFLUSS_KEYS]

SAMPLE_VALUES = [
    "0", "1", "-1", "+5", "-0", "007", "", " 5", "5.0", "abc", "-", "+",
    "2147483647", "2147483648", "-2147483648", "-2147483649",
    "9223372036854775807", "9223372036854775808", "-9223372036854775809",
    "18446744073709551615", "18446744073709551616", "99999999999x", "1_000",
    "true", "false", "TRUE", "True", "yes", "sticky", "STICKY", "round_robin", "Round_Robin", "round-robin",
    "all", "ALL", "sasl", "PLAINTEXT", "١٢",  # Arabic-Indic digits are not Rust digits
]


def _outcome(factory):
    try:
        cfg = factory()
    except Exception as exc:  # noqa: BLE001 - the kind and text of the failure is what we compare
        return ("error", type(exc).__name__, str(exc))
    return ("ok", tuple(getattr(cfg, p) for p in PROPS))


def test_defaults_match_pyfluss():
    ours, theirs = fluss_fast.Config(), fluss.Config()
    for prop in PROPS:
        assert getattr(ours, prop) == getattr(theirs, prop), prop
        assert type(getattr(ours, prop)) is type(getattr(theirs, prop)), prop


def test_every_pyfluss_property_exists():
    theirs = {n for n in dir(fluss.Config) if not n.startswith("_")}
    ours = {n for n in dir(fluss_fast.Config) if not n.startswith("_")}
    assert theirs <= ours


@pytest.mark.parametrize("key", [o[0] for o in PYFLUSS_KEYS])
def test_parsing_matches_pyfluss(key):
    for value in SAMPLE_VALUES:
        ours = _outcome(lambda value=value: fluss_fast.Config({key: value}))
        theirs = _outcome(lambda value=value: fluss.Config({key: value}))
        assert ours[:2] == theirs[:2], (key, value, ours, theirs)
        if ours[0] == "error":
            assert ours[2].replace("FlussError: ", "") == theirs[2].replace("FlussError: ", ""), (key, value)
        else:
            assert ours == theirs, (key, value)


@pytest.mark.parametrize("props", [
    {"writer.batch-size": 5}, {1: "a"}, {"writer.acks": None}, {"foo": "bar"}, {"client.writer.batch-size": "1"},
    {"writer.acks": b"all"},
])
def test_bad_dicts_match_pyfluss(props):
    ours = _outcome(lambda: fluss_fast.Config(props))
    theirs = _outcome(lambda: fluss.Config(props))
    assert ours == theirs


def test_unknown_property_is_a_client_error():
    with pytest.raises(fluss_fast.FlussError) as info:
        fluss_fast.Config({"nope.key": "1"})
    assert info.value.error_code == fluss_fast.ErrorCode.CLIENT_ERROR
    assert info.value.message == "Unknown property: nope.key"


def test_non_dict_argument():
    with pytest.raises(TypeError):
        fluss_fast.Config([("a", "b")])
    with pytest.raises(TypeError):
        fluss.Config([("a", "b")])
    assert fluss_fast.Config(None).bootstrap_servers == "127.0.0.1:9123"


SETTER_VALUES = [0, 1, -1, 5, 2**31 - 1, 2**31, -(2**31) - 1, 2**63, 2**64, True, 1.5, "5", None, "sticky",
                 "round_robin", "ROUND_ROBIN", "bad", "", "x:1", False]


@pytest.mark.parametrize("prop", PROPS)
def test_setters_match_pyfluss(prop):
    for value in SETTER_VALUES:
        ours, theirs = fluss_fast.Config(), fluss.Config()
        r1 = _outcome(lambda ours=ours, value=value: (setattr(ours, prop, value), ours)[1])
        r2 = _outcome(lambda theirs=theirs, value=value: (setattr(theirs, prop, value), theirs)[1])
        assert r1[:2] == r2[:2], (prop, value, r1, r2)
        if r1[0] == "ok":
            assert r1 == r2, (prop, value)


def test_property_cannot_be_deleted_or_invented():
    c = fluss_fast.Config()
    with pytest.raises(AttributeError):
        del c.writer_retries
    with pytest.raises(AttributeError):
        c.no_such_property = 1


def test_older_guide_aliases():
    c = fluss_fast.Config({"request.max.size": "1024", "writer.batch.size": "2048"})
    assert c.writer_request_max_size == 1024
    assert c.writer_batch_size == 2048
    assert c.get("request.max.size") == 1024
    assert set(ALIASES) == {"request.max.size", "writer.batch.size",
                            # the Java client's spellings of the Java-only options
                            "client.writer.dynamic-create-partition.enabled", "client.scanner.log.read-preference"}
    with pytest.raises(fluss_fast.FlussError, match="Invalid value 'x' for 'writer.batch.size'"):
        fluss_fast.Config({"writer.batch.size": "x"})


def test_get_to_dict_round_trip_and_pickle():
    c = fluss_fast.Config({"bootstrap.servers": "a:1,b:2", "writer.enable-idempotence": "false",
                           "security.protocol": "sasl", "request-timeout": "1234"})
    assert c.get("writer.enable-idempotence") is False
    assert c.request_timeout_ms == 1234
    d = c.to_dict()
    assert d["writer.enable-idempotence"] == "false" and d["bootstrap.servers"] == "a:1,b:2"
    assert fluss_fast.Config(d) == c
    assert pickle.loads(pickle.dumps(c)) == c
    assert c.sasl_enabled
    with pytest.raises(fluss_fast.FlussError, match="Unknown property: zzz"):
        c.get("zzz")


def test_repr_hides_password():
    c = fluss_fast.Config({"security.sasl.password": "s3cret"})
    assert "s3cret" not in repr(c)
