package runtimetest

// GrowingReactor returns a wasmbox reactor module (see
// runtime.SnapshotABI) whose _initialize grows its memory by pages pages
// and writes a word into every 4 KiB page of it, so that a snapshot of it
// holds pages*64 KiB that are not zeros; its wasmbox_run returns 0. Under
// a memory limit smaller than that, _initialize traps (the growth fails
// and the writes go out of bounds).
func GrowingReactor(pages uint32) []byte {
	end := int32(uint32(pages+1) * 65536)
	var body []byte
	body = append(body, I32Const(int32(pages))...)
	body = append(body, OpMemoryGrow, 0x00, OpDrop)
	body = append(body, 0x02, OpBlockVoid, OpLoop, OpBlockVoid)
	body = append(body, OpLocalGet, 0x00)
	body = append(body, I32Const(0x01010101)...)
	body = append(body, 0x36, 0x02, 0x00) // i32.store align=4 offset=0
	body = append(body, OpLocalGet, 0x00)
	body = append(body, I32Const(4096)...)
	body = append(body, OpI32Add, 0x22, 0x00) // local.tee 0
	body = append(body, I32Const(end)...)
	body = append(body, 0x49, OpBrIf, 0x00) // i32.lt_u; br_if 0
	body = append(body, OpEnd, OpEnd)
	return Module{
		HasMemory: true, MemoryMin: 1,
		Funcs: []Func{
			{Type: FuncType{}, Locals: []byte{I32}, Export: "_initialize", Body: body},
			{Type: FuncType{Results: []byte{I32}}, Export: "wasmbox_run", Body: I32Const(0)},
		},
	}.Encode()
}
