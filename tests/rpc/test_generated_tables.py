"""The written-out name tables (``Errors``, ``ErrorCode``, ``Api``) say exactly what the code tables
say: same names, same values, nothing missing, nothing extra."""
from __future__ import annotations

from fluss_fast import error_codes as errors
from fluss_fast.errors import ErrorCode
from fluss_fast.rpc import api


def _constants(cls) -> dict:
    return {n: getattr(cls, n) for n in dir(cls) if n.isupper()}


def _fix(cls_name: str, table: dict) -> str:
    return f"class {cls_name} should read:\n" + "\n".join(f"    {n} = {v}" for n, v in table.items())


def test_errors_class_equals_the_error_table():
    want = dict(errors.BY_NAME)
    want["CLIENT_ERROR"] = errors.CLIENT_ERROR
    assert _constants(errors.Errors) == want, _fix("Errors", want)
    assert all(errors.info(v).name == n for n, v in want.items() if n != "CLIENT_ERROR")


def test_error_code_class_equals_the_error_table():
    want = dict(errors.BY_NAME)
    want["CLIENT_ERROR"] = errors.CLIENT_ERROR
    assert _constants(ErrorCode) == want
    assert ErrorCode.CLIENT_ERROR == -2 and ErrorCode.TABLE_NOT_EXIST == 7


def test_api_class_equals_the_api_table():
    want = {k.name: k.id for k in api.API_KEYS.values()}
    assert _constants(api.Api) == want, _fix("Api", want)
    assert api.Api.PRODUCE_LOG == 1014
