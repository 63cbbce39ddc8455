"""How runs log to the console: warnings and errors only.

Every event is still in Dagster's event log and UI; the console (`murmur up`'s, `murmur
pipeline run`'s) is for what needs a look, not for each step's debug events. Jobs carry it
as their default config (launches from the UI, in-process runs), and every schedule and
sensor request as its run config: the daemon's runs take only the request's.
"""

QUIET_CONSOLE = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}

# An in-process run (`murmur pipeline run`, the doctor's rebuild) says a failed step itself,
# from the step's error (pipelines/run.py): one line for a full disk or a damaged file,
# where Dagster's console printed each failure's trace (190 lines for one insights step).
SILENT_CONSOLE = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
