package fileutils

// The difference algorithm of GNU diff (diffutils analyze.c and gnulib
// diffseq.h): common prefix and suffix stripped, "confusing" lines that
// match nothing (or too much) discarded, Myers' O(ND) middle-snake divide
// and conquer on the rest, then the boundaries of each run of changes
// shifted the way GNU does so that the hunks come out identical.

// diffLines holds the equivalence class of each line of the two files and
// the resulting change marks.
type diffLines struct {
	eqA, eqB           []int  // equivalence class per line
	changedA, changedB []bool // result
}

// computeDiff marks the changed lines of a and b, whose lines are given as
// equivalence class numbers (equal lines share a number, numbers start at 1).
//
// Like GNU diff, the identical prefix and suffix are left out of the
// analysis except for horizon lines at each end (GNU keeps as many as the
// output's context), which lets runs of changes slide into them.
// rawA and rawB number the lines by their exact bytes (GNU finds the
// identical ends on the raw text, whatever the ignore options say).
func computeDiff(eqA, eqB, rawA, rawB []int, minimal bool, horizon int) (changedA, changedB []bool) {
	n, m := len(eqA), len(eqB)
	changedA = make([]bool, n)
	changedB = make([]bool, m)
	// Common prefix and suffix.
	pre := 0
	for pre < n && pre < m && rawA[pre] == rawB[pre] {
		pre++
	}
	suf := 0
	for suf < n-pre && suf < m-pre && rawA[n-1-suf] == rawB[m-1-suf] {
		suf++
	}
	pre = max(pre-horizon, 0)
	suf = max(suf-horizon, 0)
	a := eqA[pre : n-suf]
	b := eqB[pre : m-suf]
	ca := changedA[pre : n-suf]
	cb := changedB[pre : m-suf]
	if len(a) == 0 || len(b) == 0 {
		for i := range ca {
			ca[i] = true
		}
		for i := range cb {
			cb[i] = true
		}
		return
	}
	// Discard confusing lines.
	undA, realA, undB, realB := discardConfusing(a, b, ca, cb, minimal)
	c := &diffCtx{xv: undA, yv: undB}
	diags := len(undA) + len(undB) + 3
	c.fd = make([]int, 2*diags)
	c.bd = make([]int, 2*diags)
	c.off = len(undB) + 1
	c.cx = make([]bool, len(undA))
	c.cy = make([]bool, len(undB))
	c.compareseq(0, len(undA), 0, len(undB))
	for i, ch := range c.cx {
		if ch {
			ca[realA[i]] = true
		}
	}
	for i, ch := range c.cy {
		if ch {
			cb[realB[i]] = true
		}
	}
	shiftBoundaries(a, ca, cb)
	shiftBoundaries(b, cb, ca)
	return
}

func discardConfusing(a, b []int, ca, cb []bool, minimal bool) (undA, realA, undB, realB []int) {
	maxEq := 0
	for _, v := range a {
		maxEq = max(maxEq, v)
	}
	for _, v := range b {
		maxEq = max(maxEq, v)
	}
	countA := make([]int, maxEq+1)
	countB := make([]int, maxEq+1)
	for _, v := range a {
		countA[v]++
	}
	for _, v := range b {
		countB[v]++
	}
	files := [2][]int{a, b}
	counts := [2][]int{countB, countA}
	var discards [2][]byte
	for f := 0; f < 2; f++ {
		end := len(files[f])
		d := make([]byte, end)
		many := 5
		tem := end / 64
		for tem = tem >> 2; tem > 0; tem = tem >> 2 {
			many *= 2
		}
		for i, v := range files[f] {
			nmatch := counts[f][v]
			if nmatch == 0 {
				d[i] = 1
			} else if nmatch > many {
				d[i] = 2
			}
		}
		discards[f] = d
	}
	for f := 0; f < 2; f++ {
		d := discards[f]
		end := len(d)
		for i := 0; i < end; i++ {
			if d[i] == 2 {
				d[i] = 0
				continue
			}
			if d[i] == 0 {
				continue
			}
			j := i
			provisional := 0
			for j = i; j < end; j++ {
				if d[j] == 0 {
					break
				}
				if d[j] == 2 {
					provisional++
				}
			}
			for j > i && d[j-1] == 2 {
				j--
				d[j] = 0
				provisional--
			}
			length := j - i
			if provisional*4 > length {
				for j > i {
					j--
					if d[j] == 2 {
						d[j] = 0
					}
				}
				continue
			}
			minimum := 1
			for tem := length >> 2; ; {
				tem >>= 2
				if tem <= 0 {
					break
				}
				minimum <<= 1
			}
			minimum++
			consec := 0
			for j = 0; j < length; j++ {
				if d[i+j] != 2 {
					consec = 0
				} else {
					consec++
					if minimum == consec {
						j -= consec
					} else if minimum < consec {
						d[i+j] = 0
					}
				}
			}
			consec = 0
			for j = 0; j < length; j++ {
				if j >= 8 && d[i+j] == 1 {
					break
				}
				if d[i+j] == 2 {
					consec = 0
					d[i+j] = 0
				} else if d[i+j] == 0 {
					consec = 0
				} else {
					consec++
				}
				if consec == 3 {
					break
				}
			}
			i += length - 1
			consec = 0
			for j = 0; j < length; j++ {
				if j >= 8 && d[i-j] == 1 {
					break
				}
				if d[i-j] == 2 {
					consec = 0
					d[i-j] = 0
				} else if d[i-j] == 0 {
					consec = 0
				} else {
					consec++
				}
				if consec == 3 {
					break
				}
			}
		}
	}
	changed := [2][]bool{ca, cb}
	var und, real [2][]int
	for f := 0; f < 2; f++ {
		for i, v := range files[f] {
			if minimal || discards[f][i] == 0 {
				und[f] = append(und[f], v)
				real[f] = append(real[f], i)
			} else {
				changed[f][i] = true
			}
		}
	}
	return und[0], real[0], und[1], real[1]
}

type diffCtx struct {
	xv, yv []int
	fd, bd []int
	off    int // index offset so diagonals (which may be negative) fit
	cx, cy []bool
}

func (c *diffCtx) compareseq(xoff, xlim, yoff, ylim int) {
	for xoff < xlim && yoff < ylim && c.xv[xoff] == c.yv[yoff] {
		xoff++
		yoff++
	}
	for xoff < xlim && yoff < ylim && c.xv[xlim-1] == c.yv[ylim-1] {
		xlim--
		ylim--
	}
	switch {
	case xoff == xlim:
		for ; yoff < ylim; yoff++ {
			c.cy[yoff] = true
		}
	case yoff == ylim:
		for ; xoff < xlim; xoff++ {
			c.cx[xoff] = true
		}
	default:
		xmid, ymid := c.diag(xoff, xlim, yoff, ylim)
		c.compareseq(xoff, xmid, yoff, ymid)
		c.compareseq(xmid, xlim, ymid, ylim)
	}
}

// diag finds the midpoint of the shortest edit script (the middle snake).
func (c *diffCtx) diag(xoff, xlim, yoff, ylim int) (int, int) {
	fd, bd, o := c.fd, c.bd, c.off
	xv, yv := c.xv, c.yv
	dmin := xoff - ylim
	dmax := xlim - yoff
	fmid := xoff - yoff
	bmid := xlim - ylim
	fmin, fmax := fmid, fmid
	bmin, bmax := bmid, bmid
	odd := (fmid-bmid)&1 != 0
	const maxInt = int(^uint(0) >> 1)
	fd[o+fmid] = xoff
	bd[o+bmid] = xlim
	for {
		if fmin > dmin {
			fmin--
			fd[o+fmin-1] = -1
		} else {
			fmin++
		}
		if fmax < dmax {
			fmax++
			fd[o+fmax+1] = -1
		} else {
			fmax--
		}
		for d := fmax; d >= fmin; d -= 2 {
			tlo, thi := fd[o+d-1], fd[o+d+1]
			x0 := tlo + 1
			if tlo < thi {
				x0 = thi
			}
			x, y := x0, x0-d
			for x < xlim && y < ylim && xv[x] == yv[y] {
				x++
				y++
			}
			fd[o+d] = x
			if odd && bmin <= d && d <= bmax && bd[o+d] <= x {
				return x, y
			}
		}
		if bmin > dmin {
			bmin--
			bd[o+bmin-1] = maxInt
		} else {
			bmin++
		}
		if bmax < dmax {
			bmax++
			bd[o+bmax+1] = maxInt
		} else {
			bmax--
		}
		for d := bmax; d >= bmin; d -= 2 {
			tlo, thi := bd[o+d-1], bd[o+d+1]
			x0 := thi - 1
			if tlo < thi {
				x0 = tlo
			}
			x, y := x0, x0-d
			for xoff < x && yoff < y && xv[x-1] == yv[y-1] {
				x--
				y--
			}
			bd[o+d] = x
			if !odd && fmin <= d && d <= fmax && x <= fd[o+d] {
				return x, y
			}
		}
	}
}

// shiftBoundaries slides each run of changes in one file so that runs merge
// where they can and otherwise sit as late as possible, then back to line
// up with a run in the other file, exactly as GNU diff does.
func shiftBoundaries(equivs []int, changedIn, otherIn []bool) {
	iEnd := len(equivs)
	// Sentinel-padded copies: index k here is line k-1.
	changed := make([]bool, iEnd+2)
	copy(changed[1:], changedIn)
	other := make([]bool, len(otherIn)+2)
	copy(other[1:], otherIn)
	ch := func(k int) bool { return changed[k+1] }
	set := func(k int, v bool) { changed[k+1] = v }
	oc := func(k int) bool { return other[k+1] }
	i, j := 0, 0
	for {
		for i < iEnd && !ch(i) {
			for oc(j) {
				j++
			}
			j++
			i++
		}
		if i == iEnd {
			break
		}
		start := i
		i++
		for ch(i) {
			i++
		}
		for oc(j) {
			j++
		}
		var runlength, corresponding int
		for {
			runlength = i - start
			for start > 0 && equivs[start-1] == equivs[i-1] {
				start--
				set(start, true)
				i--
				set(i, false)
				for ch(start - 1) {
					start--
				}
				j--
				for oc(j) {
					j--
				}
			}
			if oc(j - 1) {
				corresponding = i
			} else {
				corresponding = iEnd
			}
			for i != iEnd && equivs[start] == equivs[i] {
				set(start, false)
				start++
				set(i, true)
				i++
				for ch(i) {
					i++
				}
				j++
				for oc(j) {
					j++
					corresponding = i
				}
			}
			if runlength == i-start {
				break
			}
		}
		for corresponding < i {
			start--
			set(start, true)
			i--
			set(i, false)
			j--
			for oc(j) {
				j--
			}
		}
	}
	copy(changedIn, changed[1:iEnd+1])
}
