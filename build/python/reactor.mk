# Included after CPython's Makefile (build.sh): python.wasm as a wasmbox
# reactor, wasmbox_main.c in place of Programs/python.o.
python-reactor.wasm: Modules/wasmbox_main.o $(LINK_PYTHON_DEPS)
	$(LINKCC) $(PY_CORE_LDFLAGS) $(LINKFORSHARED) -nostartfiles -Wl,--no-entry -o $@ Modules/wasmbox_main.o $(LINK_PYTHON_DEPS) $(LIBS) $(MODLIBS) $(SYSLIBS)

Modules/wasmbox_main.o: $(WASMBOX_MAIN)
	$(CC) -c $(PY_CORE_CFLAGS) -o $@ $(WASMBOX_MAIN)
