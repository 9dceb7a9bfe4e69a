package textutils

import "bytes"

// The backtracking matcher runs patterns with back-references. It
// explores every way the pattern can match at a start position and keeps
// the longest (POSIX leftmost-longest), within a step budget.

type btMatcher struct {
	in        []byte
	caps      []int
	best      []int
	bestEnd   int
	steps     int
	budget    int
	icase     bool
	multiline bool
}

type btAbort struct{}

func (m *btMatcher) step() {
	m.steps++
	if m.steps > m.budget {
		panic(btAbort{})
	}
}

// match calls k with every end position at which n matches from i; it
// stops early when k returns true.
func (m *btMatcher) match(n *node, i int, k func(int) bool) bool {
	m.step()
	switch n.kind {
	case nLit:
		if bytes.HasPrefix(m.in[i:], n.lit) {
			return k(i + len(n.lit))
		}
		return false
	case nAny:
		if i < len(m.in) {
			return k(i + 1)
		}
		return false
	case nClass:
		if i < len(m.in) && n.set[m.in[i]] {
			return k(i + 1)
		}
		return false
	case nGroup:
		os, oe := m.caps[2*n.n], m.caps[2*n.n+1]
		if m.match(n.sub[0], i, func(j int) bool {
			ps, pe := m.caps[2*n.n], m.caps[2*n.n+1]
			m.caps[2*n.n], m.caps[2*n.n+1] = i, j
			if k(j) {
				return true
			}
			m.caps[2*n.n], m.caps[2*n.n+1] = ps, pe
			return false
		}) {
			return true
		}
		m.caps[2*n.n], m.caps[2*n.n+1] = os, oe
		return false
	case nCat:
		return m.seq(n.sub, i, k)
	case nAlt:
		for _, s := range n.sub {
			if m.match(s, i, k) {
				return true
			}
		}
		return false
	case nRep:
		return m.rep(n, 0, i, k)
	case nBol:
		return (i == 0 || m.multiline && m.in[i-1] == '\n') && k(i)
	case nEol:
		return (i == len(m.in) || m.multiline && m.in[i] == '\n') && k(i)
	case nBufStart:
		return i == 0 && k(i)
	case nBufEnd:
		return i == len(m.in) && k(i)
	case nWordB, nNotWordB, nWordStart, nWordEnd:
		before := i > 0 && isWordByte(m.in[i-1])
		after := i < len(m.in) && isWordByte(m.in[i])
		ok := false
		switch n.kind {
		case nWordB:
			ok = before != after
		case nNotWordB:
			ok = before == after
		case nWordStart:
			ok = !before && after
		case nWordEnd:
			ok = before && !after
		}
		return ok && k(i)
	case nBackref:
		s, e := m.caps[2*n.n], m.caps[2*n.n+1]
		if s < 0 {
			return false
		}
		ref := m.in[s:e]
		if len(m.in)-i < len(ref) {
			return false
		}
		got := m.in[i : i+len(ref)]
		if bytes.Equal(got, ref) || m.icase && bytes.EqualFold(got, ref) {
			return k(i + len(ref))
		}
		return false
	}
	return false
}

func (m *btMatcher) seq(subs []*node, i int, k func(int) bool) bool {
	if len(subs) == 0 {
		return k(i)
	}
	return m.match(subs[0], i, func(j int) bool { return m.seq(subs[1:], j, k) })
}

func (m *btMatcher) rep(n *node, count, i int, k func(int) bool) bool {
	if n.max == -1 || count < n.max {
		if m.match(n.sub[0], i, func(j int) bool {
			if j == i && count >= n.min {
				return false // an empty iteration adds nothing
			}
			return m.rep(n, count+1, j, k)
		}) {
			return true
		}
	}
	return count >= n.min && k(i)
}

// btFind returns the leftmost-longest match at or after from, with its
// groups, in Go's FindSubmatchIndex layout.
func (r *Regex) btFind(in []byte, from int) (loc []int, err error) {
	m := &btMatcher{in: in, budget: r.budget, icase: r.icase, multiline: r.multiline}
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(btAbort); !ok {
				panic(v)
			}
			loc, err = nil, ErrRegexTooComplex
		}
	}()
	ncap := 2 * (r.ngroups + 1)
	m.caps = make([]int, ncap)
	for s := from; s <= len(in); s++ {
		for i := range m.caps {
			m.caps[i] = -1
		}
		m.bestEnd = -1
		m.match(r.bt, s, func(e int) bool {
			if e > m.bestEnd {
				m.bestEnd = e
				m.best = append(m.best[:0], m.caps...)
			}
			return e == len(in) // nothing can be longer
		})
		if m.bestEnd >= 0 {
			loc = append([]int(nil), m.best...)
			loc[0], loc[1] = s, m.bestEnd
			return loc, nil
		}
	}
	return nil, nil
}

// Match reports whether b contains a match.
func (r *Regex) Match(b []byte) (bool, error) {
	if !r.mayMatch(b) {
		return false, nil
	}
	if r.re != nil {
		return r.re.Match(b), nil
	}
	if !r.pre.Match(b) {
		return false, nil
	}
	loc, err := r.btFind(b, 0)
	return loc != nil, err
}

// FindSubmatchIndex returns the leftmost-longest match and its groups.
func (r *Regex) FindSubmatchIndex(b []byte) ([]int, error) {
	if !r.mayMatch(b) {
		return nil, nil
	}
	if r.re != nil {
		return r.re.FindSubmatchIndex(b), nil
	}
	if !r.pre.Match(b) {
		return nil, nil
	}
	return r.btFind(b, 0)
}

// FindAllSubmatchIndex returns up to n (all if n < 0) successive
// non-overlapping matches; an empty match right after a match is skipped,
// as in package regexp.
func (r *Regex) FindAllSubmatchIndex(b []byte, n int) ([][]int, error) {
	if !r.mayMatch(b) {
		return nil, nil
	}
	if r.re != nil {
		return r.re.FindAllSubmatchIndex(b, n), nil
	}
	if !r.pre.Match(b) {
		return nil, nil
	}
	var out [][]int
	pos, prevEnd := 0, -1
	for pos <= len(b) && (n < 0 || len(out) < n) {
		loc, err := r.btFind(b, pos)
		if err != nil {
			return out, err
		}
		if loc == nil {
			break
		}
		if loc[1] == loc[0] && loc[0] == prevEnd {
			pos = loc[0] + 1
			continue
		}
		out = append(out, loc)
		prevEnd = loc[1]
		if loc[1] > loc[0] {
			pos = loc[1]
		} else {
			pos = loc[1] + 1
		}
	}
	return out, nil
}
