# The shadow stack pointer (wasm-ld's __stack_pointer global), which
# setjmp saves and longjmp restores: Asyncify keeps wasm locals, not it.
	.globaltype __stack_pointer, i32

	.globl __wb_get_sp
	.type __wb_get_sp,@function
__wb_get_sp:
	.functype __wb_get_sp () -> (i32)
	global.get __stack_pointer
	end_function

	.globl __wb_set_sp
	.type __wb_set_sp,@function
__wb_set_sp:
	.functype __wb_set_sp (i32) -> ()
	local.get 0
	global.set __stack_pointer
	end_function
