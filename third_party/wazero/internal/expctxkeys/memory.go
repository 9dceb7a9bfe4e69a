package expctxkeys

// MemoryAllocatorKey is a context.Context key for the experimental memory allocator.
type MemoryAllocatorKey struct{}

// SkipActiveDataKey is a context.Context key: when set at instantiation,
// active data segments are not copied into memory (wasmbox patch 12).
type SkipActiveDataKey struct{}
