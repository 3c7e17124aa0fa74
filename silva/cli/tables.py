"""Reading data files into tables: CSV (pandas, or the csv module without it) and
Parquet (pyarrow); the types columns are read as, and cells that are not numbers."""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from silva.cli.describe import text_table
from silva.cli.errors import CLIError

__all__ = ["BAD_CELLS", "MISSING_CELLS", "SHOWN_BAD_CELLS", "Table", "column_kind",
           "describe_columns", "is_missing_cell", "mostly_numbers", "read_table",
           "summarize_columns"]


@dataclass
class Table:
    """A data file read into memory: a pandas DataFrame, or plain column arrays when
    pandas is not installed."""

    path: str
    names: list[str]
    frame: Any = None  # pandas DataFrame
    columns: dict[str, np.ndarray] | None = None
    # "CSV" (column types inferred from the cells) or "Parquet" (types as stored).
    source: str = "CSV"

    @property
    def n_rows(self) -> int:
        if self.frame is not None:
            return len(self.frame)
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def check_columns(self, names, what="column"):
        missing = [name for name in names if name not in self.names]
        if missing:
            listing = ", ".join(repr(n) for n in missing)
            plural = "s" if len(missing) > 1 else ""
            raise CLIError(f"{what}{plural} {listing} not found in {self.path} (its columns: "
                           f"{', '.join(self.names)})")

    def column(self, name) -> np.ndarray:
        self.check_columns([name])
        if self.frame is not None:
            return self.frame[name].to_numpy()
        return self.columns[name]

    def _cells(self, name):
        return self.frame[name] if self.frame is not None else self.columns[name]

    def _set_numbers(self, name, values):
        if self.frame is not None:
            self.frame[name] = values
        else:
            self.columns[name] = values

    def kind(self, name) -> str:
        """What a column was read as: integer, float, bool, text, category, datetime."""
        return column_kind(self._cells(name))

    def n_missing(self, name) -> int:
        cells = self._cells(name)
        if self.frame is not None:
            return int(cells.isna().sum())
        if cells.dtype.kind == "f":
            return int(np.isnan(cells).sum())
        return int(sum(is_missing_cell(cell) for cell in cells))

    def check_cells(self, names, bad_cells="error") -> list[str]:
        """Settle the type of each CSV column in ``names`` that was read as text but
        holds mostly numbers (see :func:`mostly_numbers`); returns notes, one line each.

        Such a column has cells that are not numbers (a stray ``?`` or ``n.a``) which
        would silently turn it into a text, and so categorical, column. ``bad_cells``
        says what to do: ``"error"`` raises a :class:`CLIError` naming the columns, rows
        and cells; ``"missing"`` reads the column as numbers, those cells missing;
        ``"text"`` keeps it as text. A column whose every cell is a number (padded with
        spaces, say) is read as numbers, and Parquet columns keep their stored types.
        """
        if bad_cells not in BAD_CELLS:
            raise CLIError(f"bad_cells must be one of {BAD_CELLS}; got {bad_cells!r}")
        if self.source != "CSV":
            return []
        self.check_columns(names)
        notes, problems = [], []
        for name in names:
            cells = self._cells(name)
            if not _is_text(cells):
                continue
            values, bad = mostly_numbers(cells)
            if values is None:
                continue
            n_bad = int(bad.sum())
            if n_bad == 0:
                self._set_numbers(name, values)
                continue
            listing = _bad_cell_listing(cells, bad)
            if bad_cells == "error":
                problems.append((name, n_bad, listing, bad))
            elif bad_cells == "missing":
                self._set_numbers(name, values)
                notes.append(f"column {name!r}: {_cells_phrase(n_bad)} read as "
                             f"missing: {listing}")
            else:
                notes.append(f"column {name!r} read as text (--bad-cells=text), though "
                             f"all its cells but {listing} are numbers")
        if problems:
            name, n_bad, listing, bad = problems[0]
            if n_bad == 1:
                row = int(np.flatnonzero(bad)[0])
                cell = str(np.asarray(self._cells(name), dtype=object)[row])
                found = f"row {row + 1} holds {cell!r}"
            else:
                found = f"{n_bad} of its cells are not numbers: {listing}"
            message = (f"column {name!r} of {self.path} holds numbers, but {found}; fix "
                       f"{'that cell' if n_bad == 1 else 'those cells'}, or pass "
                       "--bad-cells=missing to read such cells as missing values "
                       "(--bad-cells=text reads the column as text)")
            if len(problems) > 1:
                others = ", ".join(f"{n!r} ({_cells_phrase(k)})" for n, k, _, _ in problems[1:])
                message += f"; so do column{'s' if len(problems) > 2 else ''} {others}"
            raise CLIError(message)
        return notes

    def features(self, names):
        """The columns ``names`` in that order: a DataFrame, or a float array."""
        self.check_columns(names)
        if self.frame is not None:
            return self.frame[list(names)]
        text = [n for n in names if self.columns[n].dtype.kind not in "fiub"]
        if text:
            raise CLIError(f"columns {text} of {self.path} are not numeric; categorical "
                           "columns need pandas: pip install silva[frames]")
        return np.column_stack([self.columns[n].astype(float) for n in names])


def _pandas():
    try:
        import pandas
    except ImportError:
        return None
    return pandas

# Cells read as missing values whatever the column (as pandas reads them), compared
# after stripping spaces and lowering the case.
MISSING_CELLS = frozenset({"", "na", "n/a", "nan", "-nan", "null", "none", "#n/a", "<na>"})

# What to do with cells that are not numbers in a column of numbers (--bad-cells).
BAD_CELLS = ("error", "missing", "text")

# Cells named in a message about cells that are not numbers.
SHOWN_BAD_CELLS = 5


def is_missing_cell(cell) -> bool:
    if cell is None or (isinstance(cell, float) and np.isnan(cell)):
        return True
    return isinstance(cell, str) and cell.strip().lower() in MISSING_CELLS


def _plain_column(values: list[str]) -> np.ndarray:
    """Floats when every cell is a number or missing (then NaN), else the strings."""
    try:
        return np.array([np.nan if is_missing_cell(v) else float(v) for v in values])
    except ValueError:
        return np.array(values, dtype=object)


def _is_text(cells) -> bool:
    dtype = cells.dtype
    if dtype.kind in "OUS":
        return True
    pd = _pandas()
    return pd is not None and isinstance(dtype, pd.StringDtype)


def column_kind(cells) -> str:
    """A column's type as read, in words: integer, float, bool, text, category,
    datetime (or the dtype's name for anything else)."""
    dtype = cells.dtype
    if dtype.kind == "b":
        return "bool"
    if dtype.kind in "iu":
        return "integer"
    if dtype.kind == "f":
        return "float"
    if dtype.kind == "M":
        return "datetime"
    if getattr(dtype, "name", "") == "category":
        return "category"
    pd = _pandas()
    if pd is not None and isinstance(dtype, pd.BooleanDtype):
        return "bool"
    if _is_text(cells):
        return "text"
    return str(dtype)


def mostly_numbers(cells):
    """``(values, bad)`` when most cells of a text column are numbers, else ``(None,
    None)``.

    "Mostly" means that more than half of the cells that are not missing (see
    :data:`MISSING_CELLS`) read as numbers; a column of words, or of words with a few
    numbers among them, stays text. ``values`` holds the numbers as floats (NaN for
    missing cells and for the ``bad`` cells, those that are neither missing nor a
    number).
    """
    raw = np.asarray(cells, dtype=object)
    missing = np.array([is_missing_cell(cell) for cell in raw], dtype=bool)
    pd = _pandas()
    if pd is not None:
        # The parser pandas reads numeric CSV columns with, so that a column reads the
        # same whether or not a stray cell made pandas keep it as text.
        values = pd.to_numeric(pd.Series(np.where(missing, None, raw), dtype=object),
                               errors="coerce").to_numpy(dtype=float)
    else:
        values = np.full(raw.shape[0], np.nan)
        for i in np.flatnonzero(~missing):
            try:
                values[i] = float(raw[i])
            except (TypeError, ValueError):
                pass
    bad = ~missing & np.isnan(values)
    n_filled = int((~missing).sum())
    if n_filled == 0 or 2 * int(bad.sum()) >= n_filled:
        return None, None
    return values, bad


def _cells_phrase(n: int) -> str:
    return "1 cell that is not a number" if n == 1 else f"{n} cells that are not numbers"


def _bad_cell_listing(cells, bad) -> str:
    """``row 18 ('n.a')`` or ``rows 18 ('n.a'), 40 ('?') and 2 more``: the cells marked
    ``bad``, rows counted from 1 after the header."""
    raw = np.asarray(cells, dtype=object)
    rows = np.flatnonzero(bad)
    shown = ", ".join(f"{i + 1} ({str(raw[i])!r})" for i in rows[:SHOWN_BAD_CELLS])
    more = f" and {rows.size - SHOWN_BAD_CELLS} more" if rows.size > SHOWN_BAD_CELLS else ""
    return f"row{'s' if rows.size > 1 else ''} {shown}{more}"


def read_table(path: str) -> Table:
    """Read a CSV or Parquet file (by extension; anything else is read as CSV)."""
    if not os.path.isfile(path):
        raise CLIError(f"cannot read {path}: no such file")
    pd = _pandas()
    parquet = path.lower().endswith((".parquet", ".pq"))
    try:
        if parquet:
            try:
                import pyarrow.parquet as pq
            except ImportError:
                raise CLIError("reading Parquet needs pyarrow: pip install silva[frames]") \
                    from None
            table = pq.read_table(path)
            if pd is not None:
                frame = table.to_pandas()
                return Table(path, [str(c) for c in frame.columns], frame=frame,
                             source="Parquet")
            columns = {name: table.column(name).to_numpy(zero_copy_only=False)
                       for name in table.column_names}
            return Table(path, list(columns), columns=columns, source="Parquet")
        if pd is not None:
            frame = pd.read_csv(path)
            frame.columns = [str(c) for c in frame.columns]
            return Table(path, list(frame.columns), frame=frame)
        with open(path, newline="", encoding="utf-8") as file:
            rows = list(csv.reader(file))
    except CLIError:
        raise
    except Exception as error:  # parser errors of pandas, pyarrow and csv differ
        kind = "Parquet" if parquet else "CSV"
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error)
        raise CLIError(f"cannot read {path} as {kind}: {message}") from None
    if not rows:
        raise CLIError(f"cannot read {path} as CSV: the file is empty")
    header, body = rows[0], rows[1:]
    if any(len(row) != len(header) for row in body):
        raise CLIError(f"cannot read {path} as CSV: rows have different numbers of fields")
    columns = {name: _plain_column([row[j] for row in body]) for j, name in enumerate(header)}
    return Table(path, list(header), columns=columns)


def describe_columns(table, roles) -> str:
    """A table of the columns of ``table``: name, type as read, missing cells, and the
    role given in ``roles`` (``"not used"`` for the others)."""
    rows = [[name, table.kind(name), str(table.n_missing(name)),
             roles.get(name, "not used")] for name in table.names]
    return text_table(["column", "read as", "missing", "role"], rows, right={2})


def summarize_columns(table) -> str:
    """One line: rows, and columns by type as read, naming those that are not numbers."""
    by_kind: dict[str, list[str]] = {}
    for name in table.names:
        by_kind.setdefault(table.kind(name), []).append(name)
    parts = []
    for kind, names in by_kind.items():
        part = f"{len(names)} {kind}"
        if kind not in ("integer", "float"):
            shown = ", ".join(repr(n) for n in names[:5])
            part += f" ({shown}{', ...' if len(names) > 5 else ''})"
        parts.append(part)
    return (f"read {table.path} ({table.source}): {table.n_rows} rows, {len(table.names)} "
            f"columns: {', '.join(parts)}")
