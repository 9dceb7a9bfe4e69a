/*
 * wasi_string.c: the string functions the C tools spend their time in,
 * for wasm32 with simd128 and bulk memory (build.sh compiles this file
 * with -msimd128 -mbulk-memory and links it before wasi-libc, whose
 * copies then stay out of the link).
 *
 * Debian 12's wasi-libc (git 2022-05-10) has musl's portable C: memchr,
 * memrchr and strlen test 4 bytes per step, memcpy and memset move 4
 * bytes per step. Under wazero these loops are what grep spends its time
 * in (its Boyer-Moore search skips with memchr; natively glibc's memchr
 * takes 16-32 bytes per step), and sed and mawk copy every line. Here:
 *
 * - memchr, memrchr, rawmemchr, strlen: 16 bytes per step with i8x16.eq and
 *   i8x16.bitmask (SSE2 pcmpeqb and pmovmskb in wazero's amd64 code).
 *   Every load is a 16-byte aligned block that holds at least one byte
 *   of the object, so it never reaches past the page of a valid byte
 *   (no trap at the end of memory); bytes outside the object are masked
 *   off.
 * - memcpy, memmove: memory.copy (wazero calls Go's memmove for it) from
 *   32 bytes on; below, two overlapping loads and stores of 16, 8 or 4
 *   bytes, which is cheaper than the call.
 * - memset: memory.fill from 256 bytes on. wazero fills by doubling
 *   copies, one call of Go's memmove per power of two (eight for the
 *   136-byte match context that GNU regex clears on every search, which
 *   was a tenth of sed's s/a/A/g); below, 16-byte stores in a loop and
 *   one overlapping store at the end, or the small pieces as for copies.
 *
 * The results are the C standard's; the tests of the tools (the golden
 * cases) run through them.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <wasm_simd128.h>

#if !defined(__wasm_simd128__) || !defined(__wasm_bulk_memory__)
#error "wasi_string.c needs -msimd128 -mbulk-memory"
#endif

#define BULK 32
#define FILL_BULK 256

static inline uint32_t eqmask(const unsigned char *p, v128_t vc)
{
	return (uint32_t)wasm_i8x16_bitmask(wasm_i8x16_eq(wasm_v128_load(p), vc));
}

void *memchr(const void *src, int c, size_t n)
{
	const unsigned char *s = src;
	if (n == 0)
		return NULL;
	v128_t vc = wasm_i8x16_splat((int8_t)c);
	size_t align = (uintptr_t)s & 15;
	const unsigned char *p = s - align;
	uint32_t m = eqmask(p, vc) >> align;
	size_t head = 16 - align; /* bytes of s in the first block */
	if (m) {
		size_t i = __builtin_ctz(m);
		return i < n ? (void *)(s + i) : NULL;
	}
	if (n <= head)
		return NULL;
	n -= head;
	p += 16;
	while (n >= 64) {
		v128_t a = wasm_i8x16_eq(wasm_v128_load(p), vc);
		v128_t b = wasm_i8x16_eq(wasm_v128_load(p + 16), vc);
		v128_t c2 = wasm_i8x16_eq(wasm_v128_load(p + 32), vc);
		v128_t d = wasm_i8x16_eq(wasm_v128_load(p + 48), vc);
		if (wasm_v128_any_true(wasm_v128_or(wasm_v128_or(a, b), wasm_v128_or(c2, d))))
			break;
		p += 64;
		n -= 64;
	}
	while (n >= 16) {
		m = eqmask(p, vc);
		if (m)
			return (void *)(p + __builtin_ctz(m));
		p += 16;
		n -= 16;
	}
	if (n) {
		m = eqmask(p, vc) & ((1u << n) - 1);
		if (m)
			return (void *)(p + __builtin_ctz(m));
	}
	return NULL;
}

void *memrchr(const void *src, int c, size_t n)
{
	const unsigned char *s = src;
	if (n == 0)
		return NULL;
	v128_t vc = wasm_i8x16_splat((int8_t)c);
	const unsigned char *end = s + n; /* one past the last byte */
	size_t tail = (uintptr_t)end & 15; /* bytes of s in the last block */
	const unsigned char *p = end - tail;
	if (tail) {
		uint32_t m = eqmask(p, vc) & ((1u << tail) - 1);
		if (p < s) /* s starts inside this block too */
			m &= ~((1u << (s - p)) - 1);
		if (m)
			return (void *)(p + 31 - __builtin_clz(m));
		if (n <= tail)
			return NULL;
		n -= tail;
	}
	/* p is aligned; n bytes of s lie before it. */
	while (n >= 16) {
		p -= 16;
		uint32_t m = eqmask(p, vc);
		if (m)
			return (void *)(p + 31 - __builtin_clz(m));
		n -= 16;
	}
	if (n) {
		p -= 16;
		uint32_t m = eqmask(p, vc) & ~((1u << (16 - n)) - 1);
		if (m)
			return (void *)(p + 31 - __builtin_clz(m));
	}
	return NULL;
}

/* rawmemchr: gnulib's dfa and grep look for the end of a line with it
 * (wasi-libc has none; build.sh tells gnulib it exists). */
void *rawmemchr(const void *src, int c)
{
	const unsigned char *s = src;
	v128_t vc = wasm_i8x16_splat((int8_t)c);
	size_t align = (uintptr_t)s & 15;
	const unsigned char *p = s - align;
	uint32_t m = eqmask(p, vc) >> align;
	if (m)
		return (void *)(s + __builtin_ctz(m));
	for (;;) {
		p += 16;
		m = eqmask(p, vc);
		if (m)
			return (void *)(p + __builtin_ctz(m));
	}
}

size_t strlen(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	v128_t z = wasm_i8x16_splat(0);
	size_t align = (uintptr_t)s & 15;
	const unsigned char *p = s - align;
	uint32_t m = eqmask(p, z) >> align;
	if (m)
		return __builtin_ctz(m);
	for (;;) {
		p += 16;
		m = eqmask(p, z);
		if (m)
			return (size_t)(p - s) + __builtin_ctz(m);
	}
}

/* Unaligned loads and stores (wasm allows them; these types tell C). */
typedef uint64_t __attribute__((aligned(1), may_alias)) u64u;
typedef uint32_t __attribute__((aligned(1), may_alias)) u32u;

/*
 * small_move copies n < BULK bytes: it loads every byte before it stores
 * one (two overlapping pieces from each end), so it is also a memmove.
 */
static inline void small_move(unsigned char *d, const unsigned char *s, size_t n)
{
	if (n >= 16) {
		v128_t a = wasm_v128_load(s), b = wasm_v128_load(s + n - 16);
		wasm_v128_store(d, a);
		wasm_v128_store(d + n - 16, b);
	} else if (n >= 8) {
		uint64_t a = *(const u64u *)s, b = *(const u64u *)(s + n - 8);
		*(u64u *)d = a;
		*(u64u *)(d + n - 8) = b;
	} else if (n >= 4) {
		uint32_t a = *(const u32u *)s, b = *(const u32u *)(s + n - 4);
		*(u32u *)d = a;
		*(u32u *)(d + n - 4) = b;
	} else if (n) {
		unsigned char a = s[0], b = s[n / 2], c = s[n - 1];
		d[0] = a;
		d[n / 2] = b;
		d[n - 1] = c;
	}
}

void *memcpy(void *restrict dst, const void *restrict src, size_t n)
{
	if (n >= BULK)
		return __builtin_memcpy(dst, src, n);
	small_move(dst, src, n);
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	if (n >= BULK)
		return __builtin_memmove(dst, src, n);
	small_move(dst, src, n);
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	if (n >= FILL_BULK)
		return __builtin_memset(dst, c, n);
	unsigned char *d = dst;
	if (n >= 16) {
		v128_t v = wasm_i8x16_splat((int8_t)c);
		for (size_t i = 16; i < n; i += 16, d += 16)
			wasm_v128_store(d, v);
		wasm_v128_store((unsigned char *)dst + n - 16, v);
	} else if (n >= 8) {
		uint64_t v = (uint64_t)(unsigned char)c * 0x0101010101010101ull;
		*(u64u *)d = v;
		*(u64u *)(d + n - 8) = v;
	} else if (n >= 4) {
		uint32_t v = (uint32_t)(unsigned char)c * 0x01010101u;
		*(u32u *)d = v;
		*(u32u *)(d + n - 4) = v;
	} else if (n) {
		d[0] = d[n / 2] = d[n - 1] = (unsigned char)c;
	}
	return dst;
}
