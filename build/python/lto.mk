# Included after CPython's Makefile by build.sh in every make of the wasm32
# build: Python/deepfreeze/deepfreeze.c out of ThinLTO. It is the frozen
# modules' code objects and _Py_Deepfreeze_Fini, thousands of
# _PyStaticCode_Dealloc calls that ThinLTO inlined into one function of
# 444 KB, over the runtime's compile caps (tools/SPEED.md, pylto).
Python/deepfreeze/deepfreeze.o: override CFLAGS_NODIST := $(filter-out -flto=thin,$(CFLAGS_NODIST))
