# The two commands of the README. Each installs what it needs into .venv first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DATA_DIR ?= data
# apt-get needs root: sudo when not already root.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: up test install lint bench bench-scale bench-history wrk browser postgres redis dashboard-assets bytecode

# uv installs in seconds what pip takes minutes for; it lives in the venv, so nothing is
# installed outside the repository. A stamp per flavour: `up` needs only the runtime.
$(BIN)/uv:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet uv

# --compile-bytecode: uv, unlike pip, leaves packages uncompiled, and where
# PYTHONDONTWRITEBYTECODE is set (our machines set it) every process then compiled all it
# imported from source again: 6.5-7.2 s for Dagster and the pipelines, 2.1-2.5 s compiled.
$(VENV)/.runtime: pyproject.toml | $(BIN)/uv
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e .
	touch $@

$(VENV)/.dev: pyproject.toml | $(BIN)/uv
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[dev]'
	touch $@ $(VENV)/.runtime

# Our own modules, compiled for the same reason (a changed file is compiled again on import).
PACKAGES := core api domain warehouse pipelines workers murmur connectors simulator benchmarks
bytecode:
	@$(BIN)/python -m compileall -q -j 0 $(PACKAGES) tests notebooks

## The service and every tool of the repository: tests, linters, notebooks, benchmarks.
install: $(VENV)/.dev

## Everything on the embedded default: store, test workspace, a printed test key, the API.
## Only the runtime is installed (the dev tools are not needed to run Murmur).
up: $(VENV)/.runtime
	@$(BIN)/python -m compileall -q -j 0 $(PACKAGES)
	$(BIN)/murmur up --data-dir $(DATA_DIR)

# The API, worker, pipeline and analyst suites that run a second time on the scale profile
# (PostgreSQL and S3, started on loopback by the tests; ADR 0002). A subset, for CI's time:
# what differs by engine (writes, claims, reads of the marts, the lake's upkeep, analysts,
# the review gate's edits racing decisions under read committed). The modules' other tests
# (breakouts, the zones' caches, more replicas) run at scale by hand (docs/testing.md).
SCALE_TESTS := tests/store/test_session_profile.py tests/posts tests/health \
	tests/publishing/test_worker.py::test_two_workers_never_publish_the_same_destination \
	tests/publishing/test_worker.py::test_killing_the_worker_mid_publish_then_another_publishes_exactly_once \
	tests/publishing/test_worker.py::test_a_timeout_after_commit_is_recovered_not_reposted \
	tests/analytics/test_unified.py::test_totals_equal_sql_sums_and_rate_is_recomputed \
	tests/analytics/test_unified.py::test_series_pages_without_duplicates_and_totals_ignore_the_page \
	tests/analytics/test_unified.py::test_hourly_reads_the_hourly_mart \
	tests/analytics/test_unified.py::test_a_polling_dashboard_gets_304_while_only_freshness_moves \
	tests/pipelines/test_ingest_simulator.py tests/pipelines/test_maintenance.py tests/pipelines/test_sensor.py \
	tests/pipelines/test_celery.py \
	tests/e2e/test_analytics_e2e.py::test_a_post_created_through_the_api_appears_in_analytics \
	tests/approvals/test_approvals.py::test_an_edit_of_what_a_reviewer_approved_sends_the_post_back_for_review \
	tests/approvals/test_approvals.py::test_a_decision_names_the_version_it_read \
	tests/mcp/test_writes.py::test_an_agent_editing_an_approved_post_sends_it_back_for_review \
	tests/store/test_multiprocess.py::test_api_pipeline_and_analyst_share_the_store \
	tests/store/test_multiprocess.py::test_each_replicas_caches_hold_and_a_write_on_either_is_seen_by_the_other_at_once \
	tests/store/test_lake_integrity.py::test_a_cut_raw_file_is_taken_out_and_its_loss_reported \
	tests/store/test_lake_integrity.py::test_a_take_out_racing_another_commit_takes_the_next_snapshot \
	tests/notebooks/test_notebooks.py::test_notebook_runs_attached_read_only \
	tests/publishing/test_reliability.py::test_the_figures_are_what_the_destinations_say \
	tests/experiments/test_experiments.py::test_each_new_post_is_drawn_an_arm_by_the_seed_and_scheduled_at_its_free_slot \
	tests/experiments/test_experiments.py::test_a_queue_the_experiment_names_schedules_its_new_items_at_their_arms_slots

## The whole test suite, the scale profile's run and the linters, side by side.
# The scale pass (one worker) and the linters run beside the first pass (two workers): each
# leaves a core idle at moments (a worker waiting on a process it started, a pass's servers
# starting, a pass's last test), which the others fill. Their output is printed after. Not at
# a lower priority: with `nice -n 10` the run took 720 s instead of 751 s, but beside other
# work the scale pass starved (still running minutes after the first pass had ended).
# The notebooks' kernels talk over sockets in their test's folder, not TCP ports (a port found
# free by one pass was taken by the other's kernel: tests/notebooks/test_notebooks.py).
# The first pass's DuckDB sessions run on one thread each (docs/operations.md): its stores are
# small and its processes many, and a second thread per session cost CPU without speeding
# anything (the marts' and planning tests: 74 CPU-s on DuckDB's two, 54 on one). The scale
# pass keeps DuckDB's default, so the suite still runs multi-threaded sessions.
# PYTHONDONTWRITEBYTECODE emptied for pytest: where it is set, pytest keeps no copy of the test
# modules it rewrites for its asserts, and every process rewrote all of them again (12 CPU-s
# a run in all); emptied, the first process writes them and the others read them.
# The test modules that mostly wait (on `murmur up`'s children and Dagster's daemon, on posts
# scheduled seconds ahead and their leases) run in a lane of their own, from the start: in the
# first pass their waits left a core idle once the scale pass had ended (108 idle CPU-s a run);
# after the scale pass, in its lane, they made that lane the run's longest (419 + 371 s beside
# a first pass of 985 s, a floor once the first pass is shorter). Beside the others their waits
# are filled by the other lanes' work.
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest
SCALE_PASS := $(PYTEST) -n 1 -q -p no:cacheprovider --store-profile=scale $(SCALE_TESTS)
WAITING_TESTS := tests/cli/test_lifecycle.py tests/cli/test_readme.py tests/publishing/test_worker.py \
	tests/publishing/test_reliability.py
WAITING_PASS := MURMUR_DUCKDB_THREADS=1 $(PYTEST) -n 1 -q -p no:cacheprovider $(WAITING_TESTS)
FIRST_PASS := MURMUR_DUCKDB_THREADS=1 $(PYTEST) -n 2 --dist loadgroup -q --durations=30 \
	$(WAITING_TESTS:%=--ignore=%)
test: install browser postgres redis bytecode
	@scale_log=$$(mktemp); waiting_log=$$(mktemp); lint_log=$$(mktemp); \
	$(SCALE_PASS) > $$scale_log 2>&1 & scale=$$!; \
	$(WAITING_PASS) > $$waiting_log 2>&1 & waiting=$$!; \
	$(MAKE) --no-print-directory lint > $$lint_log 2>&1 & lint=$$!; \
	echo "$(FIRST_PASS)"; $(FIRST_PASS); first=$$?; \
	wait $$scale; scaled=$$?; wait $$waiting; waited=$$?; wait $$lint; linted=$$?; \
	echo "$(SCALE_PASS)"; cat $$scale_log; echo "$(WAITING_PASS)"; cat $$waiting_log; \
	cat $$lint_log; rm -f $$scale_log $$waiting_log $$lint_log; \
	test $$first -eq 0 && test $$scaled -eq 0 && test $$waited -eq 0 && test $$linted -eq 0

## Debian's headless Chromium, for the test that renders the docs page offline.
browser:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq \
		&& $(SUDO) apt-get install -y -qq --no-install-recommends chromium; } \
		|| echo "chromium could not be installed: the docs page's browser test will skip"

## PostgreSQL's server binaries, for the scale profile's tests (benchmarks/servers.py starts them).
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { $(SUDO) apt-get update -qq \
		&& $(SUDO) apt-get install -y -qq --no-install-recommends postgresql; }

## Debian's Redis, the broker of the Celery executor's tests (benchmarks/servers.py starts it).
redis:
	@command -v redis-server >/dev/null || { $(SUDO) apt-get update -qq \
		&& $(SUDO) apt-get install -y -qq --no-install-recommends redis-server; }

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

## The benchmark (docs/performance.md): wrk its load generator, Chromium its dashboard row (installed when missing).
bench: install wrk browser
	$(BIN)/murmur bench

## The same rows at scale: PostgreSQL and S3 (moto), started on loopback for the run.
bench-scale: install wrk browser postgres
	$(BIN)/murmur bench --profile scale

## The pipeline and the reads over 100M snapshots of history against 10M (~15 min, ~15 GB of disk).
bench-history: install wrk
	$(BIN)/murmur bench --history 100000000

wrk:
	@command -v wrk >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq wrk; } \
		|| echo "wrk could not be installed: the read rows will measure the Python load generator"

# The dashboard's chart library (docs/dashboard.md): uPlot's built files, vendored from npm's
# tarball so that `make up` needs no Node.js. Only this target needs npm; it rewrites the
# committed files, then checks them against their recorded SHA-256.
UPLOT_VERSION := 1.6.32
UPLOT_DIR := api/dashboard/static/vendor/uplot

## Fetch uPlot $(UPLOT_VERSION) from the npm registry into the dashboard's vendor folder.
dashboard-assets:
	@tmp=$$(mktemp -d) && cd $$tmp && npm pack --silent uplot@$(UPLOT_VERSION) >/dev/null \
		&& tar -xzf uplot-$(UPLOT_VERSION).tgz \
		&& cp package/dist/uPlot.iife.min.js package/dist/uPlot.min.css package/LICENSE \
			$(CURDIR)/$(UPLOT_DIR)/ \
		&& rm -rf $$tmp
	cd $(UPLOT_DIR) && sha256sum -c SHA256SUMS
