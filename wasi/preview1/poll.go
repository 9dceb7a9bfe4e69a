package preview1

import (
	"context"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	experimentalsys "github.com/wasmbox/wasmbox/third_party/wazero/experimental/sys"

	"github.com/wasmbox/wasmbox/wasi"
)

// pollSlice bounds one wait on a Pollable stdin, so that the call's
// context is looked at even when the reader's own context is another one.
const pollSlice = 5 * time.Millisecond

// pollOneoff implements poll_oneoff.
//
//   - Clock subscriptions (relative, or absolute with
//     SUBSCRIPTION_CLOCK_ABSTIME, on the realtime or monotonic clock) fire
//     when their time comes; with nothing else to wait for this is a
//     sleep that honours the call's context.
//   - fd_read and fd_write on a stream that implements wasi.Waitable (a
//     pipe end, a process handle) are ready when a read or write would not
//     block; the call waits on all of them at once and wakes on the first
//     change, without polling.
//   - fd_read on a stdin that is only an experimental/sys.Pollable waits
//     until a read would not block, looking at it every pollSlice. Other
//     readers, writers, files and directories are always ready.
//   - A subscription on a closed descriptor is an event with EBADF.
//
// When the call's context is done the guest ends (exit code
// sys.ExitCodeContextCanceled or ExitCodeDeadlineExceeded).
func pollOneoff(ctx context.Context, s *State, mem api.Memory, p []uint64) Errno {
	in, out, n, result := uint32(p[0]), uint32(p[1]), uint32(p[2]), uint32(p[3])
	if n == 0 {
		return ErrnoInval
	}
	if uint64(n)*subscriptionSize > 1<<32-1 {
		return ErrnoInval
	}
	subs, ok := read(mem, in, n*subscriptionSize)
	if !ok {
		return ErrnoFault
	}
	evs, ok := read(mem, out, n*eventSize)
	if !ok {
		return ErrnoFault
	}
	// Validate everything first, and find the earliest deadline and what
	// to wait on.
	var (
		deadline    int64 = -1 // monotonic ns, -1 none
		stdinPoller experimentalsys.Pollable
		waits       []wasi.Waitable
	)
	now := s.nanotime()
	for i := uint32(0); i < n; i++ {
		sub := subs[i*subscriptionSize:]
		switch sub[8] {
		case eventClock:
			d, errno := s.clockDeadline(sub[16:], now)
			if errno != 0 {
				return errno
			}
			if deadline < 0 || d < deadline {
				deadline = d
			}
		case eventFdRead, eventFdWrite:
			e, errno := s.lookup(le.Uint32(sub[16:]))
			if errno != 0 {
				continue
			}
			if w, ok := e.waitable(); ok {
				waits = append(waits, w)
			} else if sub[8] == eventFdRead && e.kind == kindReader {
				if pl, ok := e.r.(experimentalsys.Pollable); ok {
					stdinPoller = pl
				}
			}
		default:
			return ErrnoInval
		}
	}

	var wake chan struct{}
	if len(waits) > 0 {
		// Registered before the first look, so that no change between the
		// look and the wait is missed.
		wake = make(chan struct{}, 1)
		for _, w := range waits {
			w.Wakers().Add(wake)
		}
		defer func() {
			for _, w := range waits {
				w.Wakers().Remove(wake)
			}
		}()
	}
	for {
		stdinReady := true
		if stdinPoller != nil {
			ready, xe := stdinPoller.Poll(experimentalsys.POLLIN, 0)
			if xe == experimentalsys.EINTR {
				exitIfDone(ctx)
				exitOnCtxErr(ctx, context.Canceled)
			}
			stdinReady = ready || xe != 0
		}
		now = s.nanotime()
		if cnt := s.events(subs, evs, n, now, stdinReady); cnt > 0 {
			return putU32(mem, result, cnt)
		}
		// Nothing ready: wait for the first deadline, a stream, or stdin.
		wait := time.Duration(-1)
		if deadline >= 0 {
			wait = time.Duration(deadline - now)
		}
		switch {
		case wake != nil || stdinPoller != nil:
			exitIfDone(ctx)
			if stdinPoller != nil && (wait < 0 || wait > pollSlice) {
				// A Pollable is looked at again every slice.
				if wake == nil {
					_, xe := stdinPoller.Poll(experimentalsys.POLLIN, int32(pollSlice/time.Millisecond)+1)
					if xe == experimentalsys.EINTR {
						exitIfDone(ctx)
						exitOnCtxErr(ctx, context.Canceled)
					}
					continue
				}
				wait = pollSlice
			}
			var timeout <-chan time.Time
			var t *time.Timer
			if wait >= 0 {
				t = time.NewTimer(wait)
				timeout = t.C
			}
			select {
			case <-wake:
			case <-timeout:
				if deadline >= 0 && s.nanotime() < deadline && stdinPoller == nil {
					// A clock that does not advance by itself
					// (deterministic): the wait stands for the time.
					s.monoShift += deadline - s.nanotime()
				}
			case <-ctx.Done():
			}
			if t != nil {
				t.Stop()
			}
			exitIfDone(ctx)
		case wait >= 0:
			if err := s.cfg.Sleep(ctx, wait); err != nil {
				exitOnCtxErr(ctx, err)
			}
			if s.nanotime() < deadline {
				// A clock that does not advance by itself
				// (deterministic): the sleep stands for the wait.
				return putU32(mem, result, s.events(subs, evs, n, deadline, stdinReady))
			}
		default:
			// Nothing can become ready: report every subscription as
			// ready rather than block forever.
			return putU32(mem, result, s.events(subs, evs, n, now, true))
		}
	}
}

// clockDeadline reads a subscription_clock and returns its deadline on the
// monotonic clock.
func (s *State) clockDeadline(c []byte, now int64) (int64, Errno) {
	id := le.Uint32(c[0:])
	timeout := int64(le.Uint64(c[8:]))
	flags := le.Uint16(c[24:])
	if flags&^1 != 0 {
		return 0, ErrnoInval
	}
	if flags&1 == 0 { // relative
		if _, errno := s.now(id); errno != 0 {
			return 0, errno
		}
		if timeout < 0 {
			timeout = 1<<63 - 1 - now
		}
		return now + timeout, 0
	}
	cur, errno := s.now(id)
	if errno != 0 {
		return 0, errno
	}
	return now + (timeout - cur), 0
}

// events writes the events that are ready at now and returns how many.
func (s *State) events(subs, evs []byte, n uint32, now int64, stdinReady bool) uint32 {
	cnt := uint32(0)
	for i := uint32(0); i < n; i++ {
		sub := subs[i*subscriptionSize:]
		typ := sub[8]
		var errno Errno
		ready := false
		var nbytes uint64
		switch typ {
		case eventClock:
			d, _ := s.clockDeadline(sub[16:], now)
			ready = d <= now
		case eventFdRead, eventFdWrite:
			fd := le.Uint32(sub[16:])
			e, e2 := s.lookup(fd)
			if e2 != 0 {
				errno, ready = e2, true
				break
			}
			w, waitable := e.waitable()
			switch {
			case typ == eventFdRead && e.kind == kindWriter:
				errno, ready = ErrnoBadf, true
			case typ == eventFdWrite && (e.kind == kindReader || e.kind == kindDir):
				errno, ready = ErrnoBadf, true
			case waitable:
				ready = w.Ready(typ == eventFdWrite)
				if ready && typ == eventFdRead {
					if pr, ok := e.r.(*wasi.PipeReader); ok {
						nbytes = uint64(pr.Buffered())
					}
				}
			case typ == eventFdRead && e.kind == kindReader:
				_, pollable := e.r.(experimentalsys.Pollable)
				ready = stdinReady || !pollable
			case typ == eventFdRead && e.kind == kindFile:
				ready = true
				unlock := e.lock()
				if st, xe := e.file.Stat(); xe == 0 {
					if cur, xe := e.file.Seek(0, 1); xe == 0 && st.Size > cur {
						nbytes = uint64(st.Size - cur)
					}
				}
				unlock()
			default:
				ready = true
			}
		}
		if !ready {
			continue
		}
		ev := evs[cnt*eventSize : (cnt+1)*eventSize]
		clear(ev)
		copy(ev[0:8], sub[0:8])
		le.PutUint16(ev[8:], uint16(errno))
		ev[10] = typ
		if typ != eventClock {
			le.PutUint64(ev[16:], nbytes)
		}
		cnt++
	}
	return cnt
}
