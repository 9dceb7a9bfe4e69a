package sysutils

import (
	"bufio"
	"fmt"
	"math/big"
	"math/bits"
	"slices"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("factor", factorMain)
}

func factorMain(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], helpOpts, false)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, "[OPTION] [NUMBER]...\nPrint the prime factors of each specified integer NUMBER. If none\nare specified on the command line, read them from standard input.\n") {
		return 0
	}
	exps := false
	w, flush := output(e)
	status := 0
	do := func(s string) {
		t := strings.TrimPrefix(strings.TrimLeft(s, " \t\n"), "+")
		n, ok := new(big.Int).SetString(t, 10)
		if !ok || t == "" || t[0] == '-' || strings.Trim(t, "0123456789") != "" {
			w.Flush()
			e.Errorf("'%s' is not a valid positive integer", s)
			status = 1
			return
		}
		if n.BitLen() > 128 {
			w.Flush()
			e.Errorf("'%s' is too large", s)
			status = 1
			return
		}
		w.WriteString(n.String() + ":")
		fs := factorize(n)
		for i := 0; i < len(fs); {
			j := i
			for j < len(fs) && fs[j].Cmp(fs[i]) == 0 {
				j++
			}
			if exps && j-i > 1 {
				fmt.Fprintf(w, " %s^%d", fs[i], j-i)
			} else {
				for k := i; k < j; k++ {
					w.WriteString(" " + fs[k].String())
				}
			}
			i = j
		}
		w.WriteByte('\n')
	}
	if len(ops) > 0 {
		for _, s := range ops {
			do(s)
		}
	} else {
		sc := bufio.NewScanner(e.Stdin)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		sc.Split(bufio.ScanWords)
		for sc.Scan() {
			do(sc.Text())
		}
	}
	if flush() != 0 {
		return 1
	}
	return status
}

// factorize returns the prime factors of n in ascending order (none for 0
// and 1).
func factorize(n *big.Int) []*big.Int {
	var out []*big.Int
	if n.IsUint64() {
		for _, f := range factor64(n.Uint64()) {
			out = append(out, new(big.Int).SetUint64(f))
		}
		return out
	}
	n = new(big.Int).Set(n)
	// Small factors first, then Pollard's rho on what remains.
	for p := int64(2); p < 10000; p++ {
		bp := big.NewInt(p)
		for new(big.Int).Rem(n, bp).Sign() == 0 {
			out = append(out, bp)
			n.Quo(n, bp)
		}
	}
	var split func(m *big.Int)
	split = func(m *big.Int) {
		if m.Cmp(big.NewInt(1)) == 0 {
			return
		}
		if m.IsUint64() {
			for _, f := range factor64(m.Uint64()) {
				out = append(out, new(big.Int).SetUint64(f))
			}
			return
		}
		if m.ProbablyPrime(25) {
			out = append(out, m)
			return
		}
		d := rhoBig(m)
		split(d)
		split(new(big.Int).Quo(m, d))
	}
	split(n)
	slices.SortFunc(out, func(a, b *big.Int) int { return a.Cmp(b) })
	return out
}

func rhoBig(n *big.Int) *big.Int {
	one := big.NewInt(1)
	for c := int64(1); ; c++ {
		x, y, d := big.NewInt(2), big.NewInt(2), big.NewInt(1)
		bc := big.NewInt(c)
		f := func(v *big.Int) *big.Int {
			v.Mul(v, v).Add(v, bc).Mod(v, n)
			return v
		}
		for d.Cmp(one) == 0 {
			f(x)
			f(f(y))
			d.Sub(x, y).Abs(d)
			d.GCD(nil, nil, d, n)
		}
		if d.Cmp(n) != 0 {
			return d
		}
	}
}

// factor64 factors a uint64: trial division, then Miller-Rabin and
// Pollard-Brent rho.
func factor64(n uint64) []uint64 {
	var out []uint64
	if n < 2 {
		return nil
	}
	for _, p := range []uint64{2, 3, 5} {
		for n%p == 0 {
			out = append(out, p)
			n /= p
		}
	}
	for p := uint64(7); p < 1000 && p*p <= n; p += 2 {
		for n%p == 0 {
			out = append(out, p)
			n /= p
		}
	}
	var split func(m uint64)
	split = func(m uint64) {
		switch {
		case m == 1:
			return
		case isPrime64(m):
			out = append(out, m)
			return
		}
		d := rho64(m)
		split(d)
		split(m / d)
	}
	split(n)
	slices.Sort(out)
	return out
}

func mulmod(a, b, m uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	_, r := bits.Div64(hi%m, lo, m)
	return r
}

func powmod(a, e, m uint64) uint64 {
	r := uint64(1)
	a %= m
	for ; e > 0; e >>= 1 {
		if e&1 == 1 {
			r = mulmod(r, a, m)
		}
		a = mulmod(a, a, m)
	}
	return r
}

// isPrime64 is a deterministic Miller-Rabin test for 64-bit numbers.
func isPrime64(n uint64) bool {
	if n < 2 {
		return false
	}
	for _, p := range []uint64{2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37} {
		if n%p == 0 {
			return n == p
		}
	}
	d, s := n-1, 0
	for d%2 == 0 {
		d, s = d/2, s+1
	}
	for _, a := range []uint64{2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37} {
		x := powmod(a, d, n)
		if x == 1 || x == n-1 {
			continue
		}
		composite := true
		for i := 1; i < s; i++ {
			x = mulmod(x, x, n)
			if x == n-1 {
				composite = false
				break
			}
		}
		if composite {
			return false
		}
	}
	return true
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// rho64 finds a non-trivial factor of the composite n (Pollard-Brent).
func rho64(n uint64) uint64 {
	if n%2 == 0 {
		return 2
	}
	for c := uint64(1); ; c++ {
		y, r, q := uint64(2), uint64(1), uint64(1)
		var x, ys, g uint64
		f := func(v uint64) uint64 { return (mulmod(v, v, n) + c) % n }
		for g = 1; g == 1; r *= 2 {
			x = y
			for i := uint64(0); i < r; i++ {
				y = f(y)
			}
			for k := uint64(0); k < r && g == 1; k += 128 {
				ys = y
				for i := uint64(0); i < min(128, r-k); i++ {
					y = f(y)
					d := x - y
					if x < y {
						d = y - x
					}
					q = mulmod(q, d, n)
				}
				g = gcd(q, n)
			}
		}
		if g == n {
			for g = 1; g == 1; {
				ys = f(ys)
				d := x - ys
				if x < ys {
					d = ys - x
				}
				g = gcd(d, n)
			}
		}
		if g != n {
			return g
		}
	}
}
