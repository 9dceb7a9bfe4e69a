# wasmbox build. `make wasm` rebuilds the committed tool module and its index;
# `make wasm-check` proves the committed module is what the sources build.
GO      ?= go
OUT     ?= wasm
LDFLAGS := -s -w -buildid=
TOOLS   := ./tools/coreutils
# Initial memory of the tool module in 64 KiB pages: about what the Go
# runtime reaches while it initializes, so that instantiation allocates
# once instead of growing (copying) the memory (see tools/wasmopt).
MIN_PAGES := 128
# Debian packages whose GNU tools goldengen compares against.
GOLDEN_PKGS := coreutils findutils grep sed gawk jq diffutils tar gzip bc file

.PHONY: all wasm wasm-head wasm-check test check golden

all: wasm

# The wasip1 build is reproducible: -trimpath, no build id, and the
# post-link data-segment merge (tools/wasmopt) is deterministic.
wasm:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	GOOS=wasip1 GOARCH=wasm $(GO) build -trimpath -ldflags='$(LDFLAGS)' -o $$tmp/raw.wasm $(TOOLS); \
	$(GO) run ./tools/wasmopt -min-pages $(MIN_PAGES) -o $(OUT)/coreutils.wasm $$tmp/raw.wasm; \
	$(GO) build -trimpath -o $$tmp/coreutils $(TOOLS); \
	$$tmp/coreutils --index > $(OUT)/commands.txt; \
	echo "built $(OUT)/coreutils.wasm ($$(wc -c < $(OUT)/coreutils.wasm) bytes, $$(wc -l < $(OUT)/commands.txt) names)"

# Like wasm, but from the committed sources only (git HEAD), ignoring
# uncommitted work in a shared checkout: what wasm-check on a clean clone
# will compare against.
wasm-head:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	git archive HEAD | tar -x -C $$tmp; \
	$(MAKE) --no-print-directory -C $$tmp wasm OUT=$(CURDIR)/wasm

wasm-check:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	$(MAKE) --no-print-directory wasm OUT=$$tmp; \
	for f in coreutils.wasm commands.txt; do \
		cmp -s $$tmp/$$f wasm/$$f || { echo "wasm/$$f is stale: run make wasm and commit"; exit 1; }; \
	done; echo "wasm/ is up to date"

test:
	$(GO) test ./...

check:
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi
	$(GO) vet ./...
	$(MAKE) --no-print-directory wasm-check
	$(GO) test ./...

# Regenerates golden expectations from the real GNU tools (installs them first).
golden:
	apt-get update -qq && apt-get install -y -qq $(GOLDEN_PKGS)
	$(GO) run ./tools/goldengen $(if $(RUN),-run '$(RUN)')
