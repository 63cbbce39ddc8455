"""File importers: the exports people have (YouTube trending, tweets, Instagram) → raw tables."""

from pipelines.importers.csvfile import ImportRejectedError
from pipelines.importers.runner import (
    FORMATS,
    ImportResult,
    UnknownWorkspaceError,
    import_file,
    run_import,
)

__all__ = [
    "FORMATS",
    "ImportRejectedError",
    "ImportResult",
    "UnknownWorkspaceError",
    "import_file",
    "run_import",
]
