# Everything a run needs is installed here: a venv with the pinned dependencies of requirements.lock.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# make bench PRESET=tiny MEMORY=1g WRITERS=pyiceberg-add-files,pyiceberg-table SCENARIOS=append
# make bench PRESET=wide MEMORY=4g   (the canonical scale: 1M rows x 400 columns in a 4 GiB cap)
# make bench SOURCE=~/orders KEY=order_id MEMORY=4g   (your parquet: a file, a folder or a glob)
# make bench STACK=local-services PRESET=wide MEMORY=4g   (S3 + REST catalog on loopback)
PRESET    ?= small
STACK     ?=
SOURCE    ?=
KEY       ?=
MEMORY    ?= 2g
WRITERS   ?=
SCENARIOS ?=
# Seconds a worker may run before it is killed and recorded as timed out (empty: the setting,
# 1800); at wide 900, so one stalled writer costs a quarter hour, not the evening.
TIMEOUT   ?= $(if $(filter wide events,$(PRESET)),900)
# The tables each pair writes, one --partition each (docs/tables-and-caps.md): at wide, the plain table,
# a day partition of c017_ts (30 days) and 16 buckets of the key as well. PARTITIONS=none: plain only.
PARTITIONS ?= $(if $(filter wide,$(PRESET)),none day(c017_ts) bucket[16](id))
# The writers on the matrix's scale axis, append at 50, 100 and 200 batches (the O(N^2) picture); SCALE= to skip.
SCALE     ?= pyiceberg-txn-batches,pyiceberg-add-files
# The rows axis (docs/scale.md): the preset's shape at these row counts too, e.g. ROWS=1M,3M,10M.
ROWS      ?=

# The CI gate: its workload and thresholds, the baseline it is held to, where its results go.
GATE_CONFIG   := baselines/ci-tiny.toml
GATE_BASELINE := baselines/ci-tiny.json
GATE_RESULTS  := results/gate

REST_JAR := compose/rest-catalog/build/rest-catalog.jar

# $(call apt_install_unless,TEST,PACKAGE,WHY): Debian's PACKAGE installed when the shell TEST
# fails (sudo when not root).
apt_install_unless = @$(1) || { \
	echo "==> installing Debian's $(2) with apt-get ($(3))"; \
	if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $(2); }

.PHONY: bench rounds test test-all lint install rest-catalog s3-counter spark-jars rust-worker clean clean-all docker-engine images up down gate gate-baseline perf browser

# Each set-up step says what it does before it starts (a fresh clone's first `make bench` spends
# minutes here); pip shows its progress on a terminal and stays quiet in a log or pipe.
PIP_INSTALL = q=--quiet; if [ -t 1 ]; then q=; fi; $(BIN)/pip install --disable-pip-version-check $$q

$(STAMP): pyproject.toml requirements.lock
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "icebench needs Python 3.11+")'
	$(call apt_install_unless,$(PYTHON) -c 'import ensurepip' 2>/dev/null,python3-venv,Debian keeps venv support in a separate package)
	@echo '==> creating the virtual environment $(VENV) with $(PYTHON)'
	@$(PYTHON) -m venv $(VENV)
	@echo '==> installing the Python dependencies (requirements.lock, ~2 min on a fresh machine)'
	@$(PIP_INSTALL) -r requirements.lock
	@echo '==> installing icebench itself into $(VENV) (editable, a few seconds)'
	@$(PIP_INSTALL) --no-deps -e .
	@touch $@

install: $(STAMP)

# The local-services stack's REST catalog: Apache Iceberg's REST fixture, its jars from Maven Central.
$(REST_JAR): compose/rest-catalog/build.sh compose/rest-catalog/pom.xml $(wildcard compose/rest-catalog/src/*/*/*/*/*.java)
	@echo '==> building the REST catalog server $(REST_JAR) (pom.xml'"'"'s jars from Maven Central; the first time only)'
	compose/rest-catalog/build.sh

rest-catalog: $(REST_JAR)

# local-services' request counter in front of its S3 server (Go, standard library only).
S3_COUNTER := compose/s3-counter/build/s3-counter
$(S3_COUNTER): compose/s3-counter/build.sh compose/s3-counter/main.go compose/s3-counter/go.mod
	@echo '==> building the S3 request counter $(S3_COUNTER) (go build; the first time only)'
	compose/s3-counter/build.sh

s3-counter: $(S3_COUNTER)

# Spark's jars: Iceberg's Spark runtime, the AWS SDK bundle, SQLite's JDBC driver (Maven Central).
SPARK_JARS := compose/spark/build/spark-3.5_2.12/iceberg-1.10.1/.complete
$(SPARK_JARS): compose/spark/fetch-jars.sh
	@echo '==> fetching Spark'"'"'s Iceberg jars from Maven Central (~120 MB the first time)'
	compose/spark/fetch-jars.sh

spark-jars: $(SPARK_JARS)

# The Rust writers' worker (rust/): cargo builds it in ~/.cache/icebench, the binary kept under a digest
# of rust/'s sources, so it is built again only when they change (18 min cold on 2 cores, then
# seconds). ICEBERG_RUST=0.10.0 builds it against another iceberg-rust release, ICEBERG_RUST=../iceberg-rust
# against a checkout of its workspace (or git+URL@REV).
ICEBERG_RUST ?=
rust-worker: $(STAMP)
	@command -v cargo >/dev/null || { echo "the Rust writers need cargo (Rust 1.94+: https://rustup.rs)"; exit 1; }
	@echo '==> building the Rust worker (cargo; ~20 min the first time on 2 cores, then only when rust/ changes)'
	$(BIN)/python -m harness.services.rust_worker build $(ICEBERG_RUST)

# What a stack other than the embedded one needs built first.
STACK_PARTS = $(if $(filter local-services,$(STACK)),$(REST_JAR) $(S3_COUNTER))

# RUST=1: build the Rust writers' worker first (cargo, ~18 min the first time on 2 cores). Without it
# the first results come in minutes: iceberg-rust and iceberg-rust-datafusion run where their worker
# is already built, and are otherwise recorded with how to build it.
RUST ?=
bench: $(STAMP) $(STACK_PARTS) $(if $(findstring spark,$(WRITERS)),$(SPARK_JARS)) $(if $(filter 1,$(RUST)),rust-worker)
	$(BIN)/icebench matrix $(if $(SOURCE),--source '$(SOURCE)' $(if $(KEY),--key $(KEY)),--preset $(PRESET)) \
		--memory $(MEMORY) --report $(if $(TIMEOUT),--timeout $(TIMEOUT)) $(if $(STACK),--stack $(STACK)) \
		$(if $(WRITERS),--writers $(WRITERS)) $(if $(SCENARIOS),--scenarios $(SCENARIOS)) \
		$(if $(SCALE),--scale $(SCALE)) $(if $(ROWS),--rows $(ROWS)) $(foreach spec,$(PARTITIONS),--partition '$(spec)')

# Longevity: ROUNDS rounds of PHASES (append,upsert,replace) by each writer on a table of its own,
# judged after every phase, with each metric's degradation rate over the rounds.
# make rounds PRESET=small MEMORY=2g ROUNDS=5 WRITERS=pyiceberg-add-files,pyiceberg-fast-append-naive
ROUNDS ?=
PHASES ?=
rounds: $(STAMP)
	$(BIN)/icebench rounds --preset $(PRESET) --memory $(MEMORY) --report $(if $(TIMEOUT),--timeout $(TIMEOUT)) \
		$(if $(ROUNDS),--rounds $(ROUNDS)) $(if $(PHASES),--phases $(PHASES)) $(if $(WRITERS),--writers $(WRITERS))

# Fails (exit 1, with the table of what regressed) when the tiny bench regressed against the
# baseline committed in the repo.
gate: $(STAMP)
	$(BIN)/icebench matrix --config $(GATE_CONFIG) --results $(GATE_RESULTS) --report
	$(BIN)/icebench gate --baseline $(GATE_BASELINE) --config $(GATE_CONFIG) --results $(GATE_RESULTS)

# Re-record the baseline (then commit baselines/ci-tiny.json) after an intended change.
gate-baseline: $(STAMP)
	$(BIN)/icebench matrix --config $(GATE_CONFIG) --results $(GATE_RESULTS) --report
	$(BIN)/icebench baseline save $$(ls -d $(GATE_RESULTS)/*/ | tail -1) --out $(GATE_BASELINE)

# Benchmarks inside pytest (pytest-benchmark, pytest-memray): outside make test.
perf: $(STAMP)
	$(BIN)/pytest -q benchmarks --benchmark-columns=min,median,max,rounds --memray

# Headless Chromium renders report.html for the suite's screenshot check and `icebench report
# --screenshot`: Debian's package, installed when missing.
browser:
	$(call apt_install_unless,[ -x /usr/bin/chromium ],chromium,headless browser for the report's screenshot check)

# The suite includes workers in containers: a private Docker engine is started (and stopped
# afterwards, also when a test fails) where none answers, and the worker image built once.
# `make test` leaves out the tests marked slow (pyproject.toml's markers); `make test-all` runs them too.
TEST_TIER = -m "not slow"
# The Rust worker is built beside the tests, not before them (tests/conftest.py): its tests run last.
# The tests and lint-rust build it with rust/Cargo.toml's `quick` profile: the same code, compiled in
# a fraction of release's CPU time (benchmarks build release; every record names the profile).
TEST_RUST_PROFILE := quick
test: $(STAMP) $(REST_JAR) $(S3_COUNTER) $(SPARK_JARS) images browser
	eval "$$(compose/docker-engine.sh env)" && ICEBENCH_REQUIRE_DOCKER=1 ICEBENCH_RUST_PROFILE=$(TEST_RUST_PROFILE) \
		$(BIN)/pytest -q $(TEST_TIER); \
		status=$$?; compose/docker-engine.sh stop --if-owner make; exit $$status

test-all: TEST_TIER =
test-all: test

lint: $(STAMP) lint-rust
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The Rust worker held to rustfmt (rust/rustfmt.toml) and clippy. clippy runs as the worker crate's
# compiler (clippy-driver, as cargo clippy runs it, RUSTC_WORKSPACE_WRAPPER) in the tests' build of
# the worker's own target folder: the ~540 crates it depends on are the tests' build's, compiled
# once for both (`cargo clippy` would check each of them again: ~15 CPU-minutes on a cold cache).
# RUST_DIR= another copy of rust/ (tests/test_rust_lint.py).
RUST_DIR ?= rust
.PHONY: lint-rust
lint-rust: $(STAMP)
	@command -v cargo >/dev/null || { echo "lint-rust needs cargo (Rust 1.94+: https://rustup.rs)"; exit 1; }
	cargo fmt --check --manifest-path $(RUST_DIR)/Cargo.toml
	CARGO_TARGET_DIR="$$($(BIN)/python -m harness.services.rust_worker target-dir)" RUSTC_WORKSPACE_WRAPPER=clippy-driver \
		cargo rustc --profile $(TEST_RUST_PROFILE) --locked --manifest-path $(RUST_DIR)/Cargo.toml -- -D warnings

clean:
	rm -rf $(VENV) .icebench results compose/rest-catalog/build compose/s3-counter/build compose/spark/build

# Also what icebench made outside the checkout (~/.cache/icebench, /var/tmp/icebench-docker, its
# images, temp and test-session folders): `icebench clean --all` says each with its size (the list
# lives in harness/services/cleanup.py); the private engine is stopped first if `make` started it.
clean-all: $(STAMP)
	$(ENGINE_ENV) compose/docker-engine.sh stop --if-owner make
	$(BIN)/icebench clean --all
	$(MAKE) clean

# Docker side (compose/README.md): a private dockerd when none answers, images built without a
# registry, and the compose stack (S3 + bucket + REST catalog) on 127.0.0.1:9000 / :8181.
# COMPOSE_VARIANT=local (images built here) | upstream (pinned registry images) | auto.
# An engine these targets start is owned by `make`: `make down` stops it, never another one.
COMPOSE_VARIANT ?= local
ENGINE_ENV := ICEBENCH_ENGINE_OWNER=make COMPOSE_VARIANT=$(COMPOSE_VARIANT)

docker-engine:
	@echo '==> a Docker engine: the one that answers, else a private dockerd (docker.io installed with apt-get the first time)'
	$(ENGINE_ENV) compose/docker-engine.sh start

images: $(STAMP) $(REST_JAR) docker-engine
	@echo '==> building the worker, S3 and REST images without a registry (minutes the first time; cached after)'
	eval "$$(compose/docker-engine.sh env)" && compose/images.sh

up: $(STAMP) $(REST_JAR)
	@echo '==> starting the compose stack: S3, its bucket and the REST catalog on 127.0.0.1:9000 / :8181'
	$(ENGINE_ENV) compose/stack.sh up

down:
	$(ENGINE_ENV) compose/stack.sh down
