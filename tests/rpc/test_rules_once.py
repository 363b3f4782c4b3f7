"""Rules with one home: error-code classification, the client-error code, change-type bytes and the
partition separator are imported from where they are defined, not restated as numbers."""
import os
import re

from fluss_fast import error_codes as table
from fluss_fast.client import lookup, snapshot
from fluss_fast.client.cluster import partition_name_of
from fluss_fast.client.scan import fetcher
from fluss_fast.client.write import sender
from fluss_fast.codec.log import indexedlog
from fluss_fast.error_codes import CLIENT_ERROR, ERRORS, REFRESH_METADATA_CODES, Errors
from fluss_fast.errors import ErrorCode
from fluss_fast.metadata import PARTITION_SEPARATOR, ChangeType
from fluss_fast.server import kvstore

PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "fluss_fast")


def _sources():
    for dirpath, _dirs, files in os.walk(PKG):
        for name in files:
            if name.endswith((".py", ".pyx")):
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    yield os.path.relpath(path, PKG), f.read()


def test_refresh_set_is_the_tables_flag():
    assert {code for code, row in ERRORS.items() if row.refresh_metadata} == REFRESH_METADATA_CODES
    # The Java InvalidMetadataException family, by name.
    assert {Errors.NETWORK_EXCEPTION, Errors.NOT_LEADER_OR_FOLLOWER,
                                      Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION,
                                      Errors.LEADER_NOT_AVAILABLE_EXCEPTION} == REFRESH_METADATA_CODES


def test_writers_and_readers_use_the_table():
    assert sender._INVALID_METADATA is REFRESH_METADATA_CODES
    assert lookup._RETRY_CODES is REFRESH_METADATA_CODES
    assert snapshot._RETRY_CODES is REFRESH_METADATA_CODES
    # Deliberate differences, kept as named codes.
    assert {Errors.NETWORK_EXCEPTION, Errors.REQUEST_TIME_OUT, Errors.UNKNOWN_SERVER_ERROR} == sender._AMBIGUOUS
    assert (REFRESH_METADATA_CODES - {Errors.NETWORK_EXCEPTION}) | {
        Errors.FENCED_LEADER_EPOCH_EXCEPTION, Errors.INVALID_COORDINATOR_EXCEPTION} == fetcher._REFRESH_CODES
    assert fetcher._REFRESH_CODES | {Errors.NETWORK_EXCEPTION, Errors.REQUEST_TIME_OUT} == fetcher._TRANSIENT_CODES
    assert all(table.is_retriable(c) for c in fetcher._RETRY_CODES - {Errors.UNKNOWN_SERVER_ERROR})


def test_client_error_defined_once():
    assert CLIENT_ERROR == ErrorCode.CLIENT_ERROR == Errors.CLIENT_ERROR == -2
    redefined = [path for path, text in _sources()
                 if re.search(r"^\s*CLIENT_ERROR\s*=\s*-2\b", text, re.M) and path != "error_codes.py"]
    assert redefined == []


def test_no_bare_error_code_sets():
    bare = [(path, m.group(0)) for path, text in _sources()
            for m in re.finditer(r"(frozenset\(\(|error_code in \()\s*-?\d+\s*,", text)]
    assert bare == []


def test_change_type_bytes_come_from_change_type():
    assert tuple(ChangeType) == (indexedlog.APPEND_ONLY, indexedlog.INSERT, indexedlog.UPDATE_BEFORE,
                                 indexedlog.UPDATE_AFTER, indexedlog.DELETE)
    assert all(type(v) is int for v in (indexedlog.APPEND_ONLY, indexedlog.DELETE))
    assert (ChangeType.Insert, ChangeType.UpdateBefore, ChangeType.UpdateAfter, ChangeType.Delete) == (
        kvstore.INSERT, kvstore.UPDATE_BEFORE, kvstore.UPDATE_AFTER, kvstore.DELETE)


def test_partition_separator():
    assert PARTITION_SEPARATOR == "$"
    assert partition_name_of({"region": "eu", "year": "2024"}, ["year", "region"]) == "2024$eu"
    joined = [path for path, text in _sources() if '"$".join' in text or "'$'.join" in text]
    assert joined == []
