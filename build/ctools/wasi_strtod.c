/*
 * wasi_strtod.c: a fast path in front of wasi-libc's strtod, for mawk
 * (build.sh links mawk with -Wl,--wrap=strtod: mawk's calls land here,
 * __real_strtod is wasi-libc's).
 *
 * mawk converts every numeric field with strtod. wasi-libc's (musl's
 * __floatscan) computes in long double, which is a software 128-bit float
 * on wasm32: it was a third of mawk's time in `awk '{s+=$1} END {print
 * s}'`. Most fields are short decimals: for up to 15 significant digits
 * with up to 22 of them after the point, the digits are an exact double
 * m and the value is m / 10^k, one correctly rounded IEEE division of two
 * exact values (Clinger's fast path), which is what a correctly rounding
 * strtod returns. Everything else (exponents, hex, inf/nan, more digits,
 * no digits) goes to wasi-libc's strtod, and so does a number followed by
 * a character strtod might still take ('e', 'p', 'x', '.', a digit), so
 * that *end is always strtod's.
 */
#include <stddef.h>
#include <stdint.h>

double __real_strtod(const char *restrict s, char **restrict end);

static const double pow10[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

double __wrap_strtod(const char *restrict str, char **restrict end)
{
	const unsigned char *p = (const unsigned char *)str;
	/* musl's strtod skips what isspace() accepts (the C locale's). */
	while (*p == ' ' || (*p >= '\t' && *p <= '\r'))
		p++;
	int neg = 0;
	if (*p == '-' || *p == '+')
		neg = *p++ == '-';
	uint64_t m = 0;
	int digits = 0, sig = 0, frac = 0;
	for (; *p >= '0' && *p <= '9'; p++, digits++) {
		if (m || *p != '0')
			sig++;
		m = m * 10 + (*p - '0');
		if (sig > 15)
			return __real_strtod(str, end);
	}
	if (*p == '.') {
		p++;
		for (; *p >= '0' && *p <= '9'; p++, digits++) {
			if (m || *p != '0')
				sig++;
			m = m * 10 + (*p - '0');
			if (sig > 15 || ++frac > 22)
				return __real_strtod(str, end);
		}
	}
	/* No digits (".", "-", "inf", "0x..." after its 0, ...) or an
	 * exponent or anything else strtod could read on: its answer. */
	if (digits == 0 || *p == 'e' || *p == 'E' || *p == 'x' || *p == 'X' ||
	    *p == 'p' || *p == 'P' || *p == '.')
		return __real_strtod(str, end);
	double v = (double)m; /* exact: m < 10^15 < 2^53 */
	if (frac)
		v /= pow10[frac];
	if (end)
		*end = (char *)p;
	return neg ? -v : v;
}
