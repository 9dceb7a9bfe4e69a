/*
 * wasi_string_test.c: checks wasi_string.c against plain byte loops for
 * every start offset within a 16-byte block, every length up to 200 and
 * every position of the byte looked for, in a buffer at the very end of
 * the module's memory (a load past it would trap). Built and run by
 * wasm's TestCToolsStringFunctions; prints "ok" or the first mismatch.
 * It also checks wasi_strtod.c (linked with -Wl,--wrap=strtod) against
 * wasi-libc's strtod: the same bits and the same end for decimals of
 * every shape near its fast path's limits.
 */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *memchr(const void *, int, size_t);
void *memrchr(const void *, int, size_t);
void *rawmemchr(const void *, int);
double __real_strtod(const char *, char **);

static int check_strtod(const char *s)
{
	char *e1, *e2;
	double a = strtod(s, &e1), b = __real_strtod(s, &e2);
	if (memcmp(&a, &b, sizeof a) != 0 || e1 != e2) {
		printf("FAIL strtod(\"%s\"): %.17g end %d, wasi-libc %.17g end %d\n", s, a, (int)(e1 - s), b, (int)(e2 - s));
		return 1;
	}
	return 0;
}

static int test_strtod(void)
{
	static const char *fixed[] = {
		"", " ", "-", "+", ".", "-.", "0", "-0", "+0", "00", "0.", ".0", "-.5", "1.", "1.e5", "1e5", "1E-3",
		"0x10", "0X1p3", "1p3", "inf", "-inf", "nan", "1inf", "12abc", " \t\n42 ", "\v\f\r7", "1..2", "3.14.15",
		"999999999999999", "9999999999999999", "123456789012345.6", "0.000000000000000000001",
		"0.0000000000000000000001", "0.00000000000000000000001", "1.7976931348623157", "4503599627370497",
		"000000000000000000000000012", "0.1", "0.2", "0.3", "2.675", "1.005", "-123.456\tx", "7\n",
	};
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
		if (check_strtod(fixed[i]))
			return 1;
	/* pseudo-random decimals: 1-18 digits, a point anywhere, a tail */
	uint32_t x = 12345;
	char buf[64];
	for (int i = 0; i < 200000; i++) {
		char *p = buf;
		x = x * 1664525 + 1013904223;
		if (x >> 31)
			*p++ = '-';
		int nd = 1 + (x >> 8) % 18, point = (x >> 16) % (nd + 2);
		for (int d = 0; d < nd; d++) {
			if (d == point)
				*p++ = '.';
			x = x * 1664525 + 1013904223;
			*p++ = '0' + (x >> 24) % 10;
		}
		const char *tails = " \t,x.e5";
		x = x * 1664525 + 1013904223;
		*p++ = tails[(x >> 24) % 8];
		*p = 0;
		if (check_strtod(buf))
			return 1;
	}
	return 0;
}

static const unsigned char *ref_memchr(const unsigned char *s, int c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == (unsigned char)c)
			return s + i;
	return NULL;
}

static const unsigned char *ref_memrchr(const unsigned char *s, int c, size_t n)
{
	while (n--)
		if (s[n] == (unsigned char)c)
			return s + n;
	return NULL;
}

static int fail(const char *what, size_t off, size_t n, size_t pos)
{
	printf("FAIL %s off=%zu n=%zu pos=%zu\n", what, off, n, pos);
	return 1;
}

int main(void)
{
	enum { MAXN = 200 };
	size_t big = 1 << 20;
	unsigned char *p = malloc(big + 16), *heap = malloc(MAXN + 64);
	/* The last 64 KiB page of memory, grown for this after the mallocs. */
	size_t pages = __builtin_wasm_memory_grow(0, 1);
	if (pages == (size_t)-1) {
		printf("FAIL memory.grow\n");
		return 1;
	}
	unsigned char *end = (unsigned char *)((pages + 1) * 65536);
	unsigned char *bufs[2] = {end - MAXN - 32, heap};
	for (int b = 0; b < 2; b++) {
		for (size_t off = 0; off < 16; off++) {
			for (size_t n = 0; n <= MAXN && off + n <= MAXN + 32; n++) {
				/* s ends exactly at the end of memory in buffer 0 when off+n == MAXN+32 */
				unsigned char *s = bufs[b] + off;
				for (size_t pos = 0; pos <= n; pos++) {
					memset(bufs[b], 'x', off + n);
					/* bytes just around s hold the byte too: they must not be found */
					if (off)
						s[-1] = 'a';
					if (pos < n)
						s[pos] = 'a';
					if (pos + 2 < n)
						s[n - 1] = 'a';
					if (memchr(s, 'a', n) != ref_memchr(s, 'a', n))
						return fail("memchr", off, n, pos);
					if (memrchr(s, 'a', n) != ref_memrchr(s, 'a', n))
						return fail("memrchr", off, n, pos);
					if (pos < n && rawmemchr(s, 'a') != ref_memchr(s, 'a', n))
						return fail("rawmemchr", off, n, pos);
					if (memchr(s, 'a' + 256, n) != ref_memchr(s, 'a', n))
						return fail("memchr c+256", off, n, pos);
					if (n > 0) {
						s[n - 1] = 0;
						size_t want = 0;
						while (s[want])
							want++;
						if (strlen((char *)s) != want)
							return fail("strlen", off, n, pos);
					}
					/* copies of every length and overlap */
					unsigned char src[MAXN + 32], ref[MAXN + 32];
					for (size_t i = 0; i < n; i++)
						src[i] = (unsigned char)(i * 7 + pos);
					memcpy(s, src, n);
					if (memcmp(s, src, n) != 0)
						return fail("memcpy", off, n, pos);
					memset(s, pos & 0xff, n);
					for (size_t i = 0; i < n; i++)
						if (s[i] != (pos & 0xff))
							return fail("memset", off, n, pos);
					for (size_t i = 0; i < n; i++)
						s[i] = (unsigned char)i;
					size_t d = pos; /* move s[0..n-d) to s[d..n) and back */
					for (size_t i = 0; i < n; i++)
						ref[i] = s[i];
					for (size_t i = n; i-- > d;)
						ref[i] = ref[i - d];
					memmove(s + d, s, n - d);
					if (memcmp(s, ref, n) != 0)
						return fail("memmove up", off, n, pos);
					for (size_t i = 0; i < n; i++)
						s[i] = ref[i] = (unsigned char)i;
					for (size_t i = 0; i + d < n; i++)
						ref[i] = ref[i + d];
					memmove(s, s + d, n - d);
					if (memcmp(s, ref, n) != 0)
						return fail("memmove down", off, n, pos);
				}
			}
		}
	}
	/* memset past MAXN: its store loop up to FILL_BULK (256) and
	   memory.fill from there, with the bytes around left alone. */
	for (size_t off = 0; off < 16; off++) {
		for (size_t n = 0; n <= 600; n++) {
			memset(p, 'x', 640);
			memset(p + 16 + off, n & 0xff, n);
			for (size_t i = 0; i < 640; i++)
				if (p[i] != (i >= 16 + off && i < 16 + off + n ? (n & 0xff) : 'x'))
					return fail("memset long", off, n, i);
		}
	}
	/* Long buffers: the 64-byte steps of memchr and the bulk copies. */
	memset(p, 'x', big + 16);
	for (size_t pos = 0; pos < big; pos += 4093) {
		p[pos] = 'a';
		if (memchr(p + 3, 'a', big) != ref_memchr(p + 3, 'a', big))
			return fail("memchr big", 3, big, pos);
		if (memrchr(p + 3, 'a', big) != ref_memrchr(p + 3, 'a', big))
			return fail("memrchr big", 3, big, pos);
		p[pos] = 'x';
	}
	if (test_strtod())
		return 1;
	printf("ok\n");
	return 0;
}
