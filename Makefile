# wasmbox build. `make wasm` rebuilds the committed tool modules and their
# index; `make wasm-check` proves the committed modules are what the sources
# build.
GO      ?= go
OUT     ?= wasm
# -checklinkname=0: tools/internal/cmd sets package syscall's working
# directory (see reactor_wasip1.go).
LDFLAGS := -s -w -buildid= -checklinkname=0
# The tool modules: tools/NAME builds wasm/NAME.wasm. coreutils is the
# multi-call module of most commands; the heavy commands (gojq, GoAWK) have
# modules of their own so that the others do not carry or initialise them.
# (The shell is GNU bash: make bash.)
MODULES := coreutils jq awk net
# The C tools' part of the command index (make ctools).
CTOOLS_INDEX := wasm/ctools/commands.txt
# Initial memory of the tool module in 64 KiB pages: about what the Go
# runtime reaches while it initializes, so that instantiation allocates
# once instead of growing (copying) the memory (see tools/wasmopt).
MIN_PAGES := 128
# Debian packages whose GNU tools goldengen compares against.
GOLDEN_PKGS := coreutils findutils grep sed gawk jq diffutils tar gzip bc file \
	bsdextrautils gettext-base libc-bin xz-utils bzip2 ripgrep yq sqlite3

.PHONY: all wasm wasm-head wasm-check python python-check python-profile bash bash-check bash-profile posix-testdata posix-check ctools ctools-check test check golden

all: wasm

# The wasip1 build is reproducible: -trimpath, no build id, and the
# post-link data-segment merge (tools/wasmopt) is deterministic. The index
# (wasm/commands.txt: "NAME MODULE [ALIAS_OF]" lines, sorted) comes from a
# native build of each program with the tag wasmbox_index, which makes it
# print its part of the index (see cmd.Multicall), and from the C tools'
# part (wasm/ctools/commands.txt, written by make ctools), whose names
# replace the Go tools' lines of the same names.
wasm:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	$(GO) build -o $$tmp/wasmopt ./tools/wasmopt; \
	for m in $(MODULES); do \
		GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -ldflags='$(LDFLAGS)' -o $$tmp/$$m.raw.wasm ./tools/$$m; \
		$$tmp/wasmopt -min-pages $(MIN_PAGES) -o $(OUT)/$$m.wasm $$tmp/$$m.raw.wasm; \
		$(GO) build -trimpath -tags wasmbox_index -o $$tmp/$$m.index ./tools/$$m; \
		$$tmp/$$m.index >> $$tmp/commands.txt; \
		echo "built $(OUT)/$$m.wasm ($$(wc -c < $(OUT)/$$m.wasm) bytes)"; \
	done; \
	awk 'NR == FNR { c[$$1] = 1; print; next } !($$1 in c)' $(CTOOLS_INDEX) $$tmp/commands.txt | LC_ALL=C sort > $(OUT)/commands.txt; \
	dup=$$(cut -d' ' -f1 $(OUT)/commands.txt | uniq -d); \
	if [ -n "$$dup" ]; then echo "commands in more than one module:" $$dup; exit 1; fi; \
	echo "built $(OUT)/commands.txt ($$(wc -l < $(OUT)/commands.txt) names)"

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
	for f in $(addsuffix .wasm,$(MODULES)) commands.txt; do \
		cmp -s $$tmp/$$f wasm/$$f || { echo "wasm/$$f is stale: run make wasm and commit"; exit 1; }; \
	done; echo "wasm/ is up to date"

# CPython 3.11 for wasm32-wasi, its precompiled standard library and
# SQLite's shell (wasm/python/, embedded by package wasm), from Debian's
# source packages with Debian's clang/lld 19 and wasi-libc
# (build/python/build.sh installs them with apt-get; it needs root). Not part of `make wasm`: it takes
# minutes. python-check rebuilds them and fails if a byte differs.
PYTHON_FILES := python.wasm python-stdlib.zip sqlite3.wasm python.inputs

python:
	build/python/build.sh wasm/python

# The PGO profile that build.sh compiles CPython with (build/python/python.profdata,
# committed): from a native instrumented build of the same source running
# CPython's PGO task (build/python/pgo.sh). Run by hand, then make python.
python-profile:
	build/python/pgo.sh

python-check:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	build/python/build.sh $$tmp; \
	for f in $(PYTHON_FILES); do \
		cmp -s $$tmp/$$f wasm/python/$$f || { echo "wasm/python/$$f differs from the rebuild: run make python and commit"; diff $$tmp/python.inputs wasm/python/python.inputs || true; exit 1; }; \
	done; echo "wasm/python/ is up to date"

# The C test program of the process model for C guests (build/posix:
# fork, exec, waitpid, pipe, dup, setjmp over Asyncify), committed so that
# the tests need no clang. posix-check rebuilds it and fails if a byte
# differs. Needs clang-19 and wasi-libc (build/posix/build.sh installs
# them with apt-get).
posix-testdata:
	build/posix/testdata.sh testdata/posix

posix-check:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	build/posix/testdata.sh $$tmp; \
	cmp -s $$tmp/forktest.wasm testdata/posix/forktest.wasm || { echo "testdata/posix/forktest.wasm differs from the rebuild: run make posix-testdata and commit"; exit 1; }; \
	echo "testdata/posix/forktest.wasm is up to date"

# GNU grep, GNU sed, mawk and GNU coreutils' cat, tr, head, tail, tee, sort,
# uniq, wc, cut and sha256sum for wasm32-wasi (wasm/ctools/, embedded by
# package wasm), from Debian's source packages with Debian's clang/lld 19
# and wasi-libc (build/ctools/build.sh installs them with apt-get; it
# needs root). Not part of `make wasm`: it takes minutes. Run make wasm
# after it when wasm/ctools/commands.txt changed. ctools-check rebuilds
# them and fails if a byte differs, or if the rebuild makes a file that is
# not committed or a committed file (but README.txt) it no longer makes:
# the whole directory is compared, so a module added to build.sh is
# checked without a list to keep.
ctools:
	build/ctools/build.sh wasm/ctools

ctools-check:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	build/ctools/build.sh $$tmp; \
	for f in $$( (cd $$tmp && ls) ; (cd wasm/ctools && ls | grep -vx README.txt) ); do \
		cmp -s $$tmp/$$f wasm/ctools/$$f || { echo "wasm/ctools/$$f differs from the rebuild (or is missing on one side): run make ctools and commit"; diff $$tmp/ctools.inputs wasm/ctools/ctools.inputs || true; exit 1; }; \
	done; echo "wasm/ctools/ is up to date ($$(ls $$tmp | wc -l) files)"
# GNU bash 5.2.15 for wasm32-wasi (build/bash; needs build/posix). Not part
# of `make wasm`: it downloads Debian's source and takes minutes.
bash:
	build/bash/build.sh wasm

# The PGO profile that build.sh compiles bash with (build/bash/bash.profdata,
# committed): from a native instrumented build of the same source running the
# Oils spec cases and the bench's bash scripts (build/bash/pgo.sh). Run by
# hand, then make bash.
bash-profile:
	build/bash/pgo.sh

bash-check:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	build/bash/build.sh $$tmp; \
	cmp -s $$tmp/bash.wasm wasm/bash.wasm || { echo "wasm/bash.wasm differs from the rebuild: run make bash and commit"; diff $$tmp/bash.inputs wasm/bash.inputs || true; exit 1; }; \
	echo "wasm/bash.wasm is up to date"

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
