// Package engine is the resident engine behind `wasmbox run`: one process
// per user, build, compilation cache and umask that keeps the tool modules
// compiled and their snapshots taken, so that a warm run costs a process
// start and one round trip instead of loading 20 MB of modules. Each run
// is still a new sandbox: nothing but compiled code is shared.
//
// It is internal: the protocol is spoken only between a `wasmbox run` and
// an engine of the same build (the Key names the build), so it has no
// compatibility to keep.
//
// # Protocol
//
// The engine listens on a Unix stream socket, Path(cache), in a directory
// only its user may enter (Dir). Every message is a frame: a 4-byte
// big-endian length n, then n bytes of JSON. A frame longer than its limit
// is refused at its header, and a reader allocates as the bytes arrive,
// not what the header claims:
//
//   - the client's first frame, a Request, at most MaxRequestFrame (8 MiB:
//     a command line and an environment; Linux's ARG_MAX is 2 MiB);
//   - every later frame, either way, at most MaxControlFrame (64 KiB).
//
// A connection is one exchange:
//
//	client                                   engine
//	Request{op:"run", key, args, dir, env}
//	  + SCM_RIGHTS [stdin pipe, stdout, stderr]
//	                                         Reply{accept}   (the run is taken)
//	stdin bytes into the pipe ...            writes to stdout, stderr ...
//	Request{cancel} (on SIGINT, SIGTERM)
//	                                         Reply{done, exit, sigpipe}
//
// or, instead of accept, Reply{fallback: reason}: the engine read and
// wrote nothing, and the client runs the command itself. The descriptors
// travel with the first byte of the request. Op "status" is answered by
// Reply{done, status}; op "stop" by Reply{done, status} (the engine that
// stops) before the engine stops accepting and exits once its runs end.
//
// The engine reads the request under a 10 s deadline; any bad frame (too
// long, cut, not JSON, of another build, the wrong number or kind of
// descriptors) ends the connection with nothing run. A client closing its
// connection cancels its run.
//
// # Who may talk to whom
//
// Both ends check the other on the connection itself, not on the path,
// which a user who owns the runtime directory could swap: each reads the
// peer's credentials with SO_PEERCRED and, from /proc/PID, its uids, gids,
// groups, capabilities, security state, root directory and namespaces
// (Identity), and talks only to a peer whose identity equals its own. The
// client checks before it sends a byte (an engine of another uid gets no
// environment and no descriptors); the engine hangs up on another uid,
// and answers a client of its uid but another identity with a fallback
// before it acts on the request (a client with fewer capabilities, or in
// another mount namespace, does not read through the engine what it
// cannot read itself). A client that is refused runs the command
// in-process. The identity is also part of the Key, so such a client does
// not even dial the engine of a more privileged process: it finds its own.
//
// # Client-supplied files
//
// The engine never opens a path or reads a descriptor of the client's in a
// way that can wait for the client: the stdin pipe and the outputs are
// non-blocking (Output), and `wasmbox run` opens a script FILE with
// O_NONBLOCK and RESOLVE_NO_MAGICLINKS and takes it only if it is a
// regular file (a FIFO, /dev/stdin, /proc/self/fd/N are left to the
// client). A stop frees the socket and the lock at once; once the engine's
// context ends (SIGTERM) it waits at most 10 s for its runs.
package engine
