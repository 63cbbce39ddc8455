"""DuckDB extensions, loaded from the wheels the project installs, and frames handed to DuckDB."""

from __future__ import annotations

import importlib.util
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb
    import polars as pl

# DuckDB's Python client tries ``import pandas`` three times per statement; without pandas
# installed each try is a failed import that walks sys.path under the interpreter's import
# lock, which request threads then queue on (py-spy: 12% of a request under load; ~80 us per
# statement with 8 threads). A None entry makes the failure immediate; it is set only when
# pandas is absent, so nothing that could import it loses it.
if importlib.util.find_spec("pandas") is None:
    sys.modules.setdefault("pandas", None)  # type: ignore[arg-type]


def load_extension(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Load a DuckDB extension from its installed wheel, or from DuckDB's repository when online."""
    import duckdb

    try:
        from duckdb_extensions import import_extension

        import_extension(name, con=con)
    except (ImportError, duckdb.Error, OSError):
        con.execute(f"INSTALL {name}")  # name is one of our own constants
    con.execute(f"LOAD {name}")


class ArrowStream:
    """A polars frame seen by DuckDB through the Arrow C stream interface (no pyarrow needed)."""

    def __init__(self, frame: pl.DataFrame) -> None:
        self._frame = frame

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self._frame.__arrow_c_stream__(requested_schema)
