"""How a PUT_KV row meets the stored one: the table's merge engine (last row, FIRST_ROW,
VERSIONED, AGGREGATION) or an explicit overwrite, for all columns or a partial update of target
columns (Java's ``RowMerger`` family). Errors follow the Java server's texts and codes."""
from __future__ import annotations

from collections.abc import Sequence

from ..error_codes import Errors
from ..errors import FlussError
from .table_kv import TableKv


class UNCHANGED:
    """Marker: the merge keeps the old row, nothing goes to the changelog."""


class Merger:
    """One request's merge rule: the table's engine (or OVERWRITE) configured for its target
    columns. Errors follow the Java server's texts and codes."""

    def __init__(self, table: TableKv, target_columns: Sequence[int] | None, agg_mode: int) -> None:
        self.t = table
        self.overwrite = agg_mode == 1
        engine = None if self.overwrite else table.engine
        self.engine = engine
        self.target = None
        if target_columns:
            target = sorted(set(int(c) for c in target_columns))
            n = table.ncols
            names = table.names
            bad = [c for c in target if not 0 <= c < n]
            if bad:
                raise FlussError(f"The target write columns {list(target_columns)} are out of range of table "
                                 f"{table.path} with {n} columns.", Errors.INVALID_TARGET_COLUMN)
            if engine == "FIRST_ROW":
                raise FlussError("Partial update is not supported for the first_row merge engine.",
                                 Errors.UNKNOWN_SERVER_ERROR)
            if engine == "VERSIONED":
                raise FlussError("Partial update is not supported for the versioned merge engine.",
                                 Errors.UNKNOWN_SERVER_ERROR)
            tset = set(target)
            if not table.pk_set <= tset:
                raise FlussError(f"The target write columns {_java_list(names[c] for c in target)} must contain the "
                                 f"primary key columns {_java_list(names[c] for c in table.pk)}.",
                                 Errors.INVALID_TARGET_COLUMN)
            for i, c in enumerate(table.schema.columns):
                if i not in table.pk_set and not c.type.nullable:
                    raise FlussError(f"Partial Update requires all columns except primary key to be nullable, but "
                                     f"column {c.name} is NOT NULL.", Errors.INVALID_TARGET_COLUMN)
            if table.auto_inc is not None and table.auto_inc in tset:
                raise FlussError(f"Auto-increment column [{names[table.auto_inc]}] at index {table.auto_inc} must not "
                                 f"be included in target columns.", Errors.INVALID_TARGET_COLUMN)
            if len(tset) < n:
                self.target = tset
        elif table.auto_inc is not None:
            raise FlussError(f"The table contains an auto-increment column [{table.names[table.auto_inc]}], but update "
                             f"target columns are not explicitly specified. Please specify the update target columns "
                             f"and exclude the auto-increment column from them.", Errors.INVALID_TARGET_COLUMN)
        self.delete_behavior = "ALLOW" if self.overwrite else table.delete_behavior
        # WAL image + plain last-row merge of whole rows: no need to read the old row at all
        self.blind = (table.image == "WAL" and engine is None and self.target is None
                      and table.auto_inc is None)

    def merge(self, old: list | None, new: list):
        """The merged row, or UNCHANGED. ``new`` is in the latest schema's width."""
        if self.target is not None:
            if old is None:
                return [v if i in self.target else None for i, v in enumerate(new)]
            if self.target == self.t.pk_set:
                return UNCHANGED
            if self.engine == "AGGREGATION":
                return [old[i] if i not in self.target else
                        (v if agg is None else agg(old[i], v))
                        for i, (v, agg) in enumerate(zip(new, self.t.aggs, strict=True))]
            return [v if i in self.target else old[i] for i, v in enumerate(new)]
        if old is None:
            return new
        engine = self.engine
        if engine is None:
            return new
        if engine == "FIRST_ROW":
            return UNCHANGED
        if engine == "VERSIONED":
            col = self.t.version_col
            ov, nv = old[col], new[col]
            if nv is None and ov is not None:
                return UNCHANGED
            # one column's versions are all ints, or all naive (TIMESTAMP) or all UTC (TIMESTAMP_LTZ)
            # datetimes, as the row decoders give them: they compare as they are
            if ov is not None and nv is not None and nv < ov:
                return UNCHANGED
            return new
        # aggregation
        return [v if agg is None else agg(o, v) for o, v, agg in zip(old, new, self.t.aggs, strict=True)]

    def delete(self, old: list):
        """None (delete the row) or the row that remains (partial delete)."""
        if self.target is None:
            return None
        pk = self.t.pk_set
        for i, v in enumerate(old):
            if i not in self.target and v is not None:
                break
        else:
            return None
        return [None if (i in self.target and i not in pk) else v for i, v in enumerate(old)]


def _java_list(items) -> str:
    return "[" + ", ".join(str(i) for i in items) + "]"
