# The type codes of the row codecs, for the compiled side: the same numbers as rowtypes.T_*
# Declarations only (no module):
# ``from fluss_fast.codec.rows.row_type_codes cimport *``.
cdef enum:
    C_BOOLEAN = 0
    C_TINYINT = 1
    C_SMALLINT = 2
    C_INT = 3
    C_BIGINT = 4
    C_FLOAT = 5
    C_DOUBLE = 6
    C_CHAR = 7
    C_STRING = 8
    C_BINARY = 9
    C_BYTES = 10
    C_DECIMAL = 11
    C_DATE = 12
    C_TIME = 13
    C_TIMESTAMP = 14
    C_TIMESTAMP_LTZ = 15
    C_ARRAY = 16
    C_MAP = 17
    C_ROW = 18
