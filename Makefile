# Everything a run needs is installed here: a venv with the pinned dependencies of requirements.lock.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# make bench PRESET=tiny MEMORY=1g WRITERS=pyiceberg-add-files,pyiceberg-table SCENARIOS=append
PRESET    ?= small
MEMORY    ?= 2g
WRITERS   ?=
SCENARIOS ?=

REST_JAR := compose/rest-catalog/build/rest-catalog.jar

.PHONY: bench test lint install rest-catalog clean

$(STAMP): pyproject.toml requirements.lock
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "icebench needs Python 3.11+")'
	@$(PYTHON) -c 'import ensurepip' 2>/dev/null || { \
		echo "installing python3-venv (Debian keeps venv support in a separate package)"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq python3-venv; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

install: $(STAMP)

# The local-services stack's REST catalog: Iceberg Java's handlers, built from PyPI/Debian jars.
$(REST_JAR): $(STAMP) compose/rest-catalog/build.sh $(wildcard compose/rest-catalog/src/*/*/*/*.java compose/rest-catalog/src/*/*/*/*/*.java)
	PYTHON=$(BIN)/python compose/rest-catalog/build.sh

rest-catalog: $(REST_JAR)

bench: $(STAMP)
	$(BIN)/icebench matrix --preset $(PRESET) --memory $(MEMORY) \
		$(if $(WRITERS),--writers $(WRITERS)) $(if $(SCENARIOS),--scenarios $(SCENARIOS))

test: $(STAMP) $(REST_JAR)
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) .icebench results compose/rest-catalog/build
