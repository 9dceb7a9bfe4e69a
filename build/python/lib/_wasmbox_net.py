"""wasmbox: TCP client sockets of Python over the host's network ABI.

The sandbox has no sockets. The host (runtime.NetABI, wasmbox.net_connect)
opens connections for it: it checks host:port against the run's allowlist
(--allow-net), resolves the name itself, refuses loopback, private,
link-local and metadata addresses the allowlist does not name exactly,
dials the address it checked, does TLS itself (Go crypto/tls, SNI, verified
against the host's roots and --net-ca) and re-frames every HTTP/1.1 request
(brokered secrets are added there, and masked in responses). A connection
is a pair of descriptors, read with fd_read and written with fd_write, and
waited for with poll_oneoff.

install() puts this in place of the socket module's TCP client:

  socket.socket(AF_INET|AF_INET6, SOCK_STREAM)  a NetSocket: connect() has
                    the host check host:port (allowlist, name resolved on
                    the host, refused addresses; a refusal raises at once:
                    ConnectionRefusedError, socket.gaierror or
                    TimeoutError with the host's one-line message) and
                    dials nothing; ssl.SSLContext.wrap_socket() then asks
                    for a TLS connection, or the first send, recv or
                    fileno() for a plain one. The host checks again then
                    (a refused TCP connect raises there).
  socket.getaddrinfo  answers the name itself: names are resolved by the
                    host when it connects, never in the sandbox.
  socket.create_connection, http.client, urllib.request, urllib3,
  requests and pip work on top of these.

Only HTTP/1.1 goes through: the host parses what the guest writes as
HTTP/1.1 requests for the host it connected to and ends the connection
otherwise (net_error says why; recv then raises ConnectionAbortedError
with that message). Servers, UDP, Unix sockets and other protocols are
refused with a clear OSError.
"""
import errno
import io
import os
import select

import _socket
import _wasmbox_host

AF_INET = _socket.AF_INET
AF_INET6 = _socket.AF_INET6
SOCK_STREAM = _socket.SOCK_STREAM
_SOCK_FLAGS = getattr(_socket, "SOCK_NONBLOCK", 0) | getattr(_socket, "SOCK_CLOEXEC", 0)

# The kinds of netpolicy.Kind (runtime.NetABI).
KIND_DENIED, KIND_RESOLVE, KIND_ADDRESS, KIND_CONNECT, KIND_TLS, KIND_TIMEOUT, KIND_LIMIT = 1, 2, 3, 4, 5, 6, 7

_PORTS = {"http": 80, "https": 443}


def _port(port):
    if port is None:
        return 0
    if isinstance(port, (bytes, bytearray)):
        port = port.decode("ascii")
    if isinstance(port, str):
        if port in _PORTS:
            return _PORTS[port]
        try:
            port = int(port)
        except ValueError:
            raise _socket.gaierror(_socket.EAI_SERVICE, "Servname not supported for ai_socktype") from None
    return int(port)


def _host(host):
    if isinstance(host, (bytes, bytearray)):
        host = host.decode("idna")
    if host is None or host == "":
        raise OSError(errno.EINVAL, "wasmbox: network: no host to connect to")
    return str(host)


def connect_error(kind, message, tls=False):
    """The exception for a refusal of net_connect (kind, one-line message)."""
    msg = message.decode("utf-8", "replace") if isinstance(message, bytes) else message
    if kind == KIND_RESOLVE:
        return _socket.gaierror(_socket.EAI_NONAME, msg)
    if kind == KIND_TIMEOUT:
        return TimeoutError(errno.ETIMEDOUT, msg)
    if kind == KIND_TLS:
        import ssl
        e = ssl.SSLCertVerificationError(1, msg)
        e.reason, e.library = "CERTIFICATE_VERIFY_FAILED", "SSL"
        e.verify_code, e.verify_message = 1, msg
        return e
    if kind == KIND_DENIED:
        return ConnectionRefusedError(errno.ECONNREFUSED, msg)
    return ConnectionRefusedError(errno.ECONNREFUSED, msg)


def host_connect(host, port, tls, check=False):
    import json
    w = {"host": host, "port": port, "tls": bool(tls)}
    if check:
        w["check"] = True
    code, a, b = _wasmbox_host.net_connect(json.dumps(w).encode())
    if code != 0:
        raise connect_error(a, b, tls)
    return a, b


def getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
    """The address of host:port, unresolved: the host resolves the name
    (and checks it) when the socket connects."""
    h = _host(host) if host not in (None, "") else "localhost"
    p = _port(port)
    if type not in (0, SOCK_STREAM):
        raise _socket.gaierror(_socket.EAI_SOCKTYPE, "wasmbox: network: only TCP (SOCK_STREAM) goes through the host")
    fam = AF_INET6 if family == AF_INET6 or (":" in h and family != AF_INET) else AF_INET
    sa = (h, p, 0, 0) if fam == AF_INET6 else (h, p)
    return [(fam, SOCK_STREAM, _socket.IPPROTO_TCP, "", sa)]


def _unsupported(*args, **kwargs):
    raise OSError(errno.ENETUNREACH, "wasmbox: network: names are resolved by the host when a socket connects, not in the sandbox")


_blocking = object()


class NetSocket:
    """A TCP client socket whose connection the host holds."""

    def __init__(self, family=AF_INET, type=SOCK_STREAM, proto=0, fileno=None):
        if family == -1:
            family = AF_INET
        if type == -1:
            type = SOCK_STREAM
        if fileno is not None:
            raise OSError(errno.EBADF, "wasmbox: network: a socket cannot be made from a descriptor in the sandbox")
        if family not in (AF_INET, AF_INET6) or (type & ~_SOCK_FLAGS) != SOCK_STREAM:
            raise OSError(errno.EAFNOSUPPORT, "wasmbox: network: only TCP client sockets (AF_INET/AF_INET6, SOCK_STREAM) go through the host")
        self.family, self.type, self.proto = family, SOCK_STREAM, proto or _socket.IPPROTO_TCP
        self._rfd = self._wfd = -1
        self._peer = None
        self._tls = False
        self._sent = False
        self._closed = False    # close() was called
        self._released = False  # the descriptors are closed
        self._opened = False    # the host's connection was opened
        self._eof = False
        self._io_refs = 0
        self._timeout = _socket.getdefaulttimeout()

    # --- the socket module's protocol ----------------------------------
    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.close()

    def __repr__(self):
        state = "closed" if self._closed else "peer=%r" % (self._peer,)
        return "<wasmbox socket %s%s>" % (state, " tls" if self._tls else "")

    def __getstate__(self):
        raise TypeError("cannot pickle %r" % self)

    def fileno(self):
        if self._released or self._closed and not self._opened:
            return -1
        if self._peer is not None and not self._opened:
            try:
                self._check()
            except OSError:
                return -1
        return self._rfd

    def _check(self):
        """Raises unless the socket is connected; the first use after
        connect() opens the host's plain connection. A socket close()d
        while a makefile() stream is open still works, as CPython's does
        (http.client reads a response after urllib closed its socket)."""
        if self._released:
            raise OSError(errno.EBADF, "Bad file descriptor")
        if self._peer is None:
            raise OSError(errno.ENOTCONN, "Transport endpoint is not connected")
        if not self._opened:
            if self._closed:
                raise OSError(errno.EBADF, "Bad file descriptor")
            self._opened = True
            self._rfd, self._wfd = host_connect(self._peer[0], self._peer[1], False)

    def settimeout(self, t):
        if t is not None:
            t = float(t)
            if t < 0:
                raise ValueError("Timeout value out of range")
        self._timeout = t

    def gettimeout(self):
        return self._timeout

    def setblocking(self, flag):
        self._timeout = None if flag else 0.0

    def getblocking(self):
        return self._timeout != 0.0

    def setsockopt(self, *args):
        pass  # TCP_NODELAY, SO_KEEPALIVE...: the host's connection

    def getsockopt(self, level, opt, buflen=None):
        return 0 if buflen is None else b"\0" * buflen

    def bind(self, addr):
        raise OSError(errno.EACCES, "wasmbox: network: the sandbox cannot bind sockets")

    def listen(self, *args):
        raise OSError(errno.EOPNOTSUPP, "wasmbox: network: the sandbox cannot accept connections")

    accept = listen

    def getpeername(self):
        if self._peer is None:
            raise OSError(errno.ENOTCONN, "Transport endpoint is not connected")
        return self._peer

    def getsockname(self):
        return ("0.0.0.0", 0)

    def connect(self, address):
        if self._closed or self._released:
            raise OSError(errno.EBADF, "Bad file descriptor")
        if self._peer is not None:
            raise OSError(errno.EISCONN, "Transport endpoint is already connected")
        if not isinstance(address, tuple) or len(address) < 2:
            raise TypeError("%s(): AF_INET address must be tuple, not %s" % ("connect", type(address).__name__))
        host, port = _host(address[0]), _port(address[1])
        host_connect(host, port, False, check=True)
        self._peer = (host, port)

    def connect_ex(self, address):
        try:
            self.connect(address)
        except OSError as e:
            return e.errno or errno.ECONNREFUSED
        return 0

    def _starttls(self, server_hostname):
        """Replaces the plain connection by a TLS connection of the host to
        the same name and port (wrap_socket)."""
        if self._closed or self._released:
            raise OSError(errno.EBADF, "Bad file descriptor")
        if self._peer is None:
            raise OSError(errno.ENOTCONN, "Transport endpoint is not connected")
        if self._tls:
            raise ValueError("wasmbox: network: the socket already does TLS")
        host, port = self._peer
        if server_hostname is not None:
            sni = _host(server_hostname).rstrip(".").lower()
            if sni != host.rstrip(".").lower():
                raise connect_error(KIND_TLS, "wasmbox: network: TLS for %s on a connection to %s: the host verifies the name it connects to" % (sni, host))
        if self._sent:
            raise OSError(errno.EPROTO, "wasmbox: network: TLS after plain data on one connection is not supported")
        # A plain connection opened already (fileno() before wrap_socket)
        # is closed first: a server that does the handshake in its accept
        # loop would wait for it.
        self._close_fds()
        self._opened = True
        try:
            self._rfd, self._wfd = host_connect(host, port, True)
        except BaseException:
            # No plain connection behind a failed TLS one.
            self._closed = self._released = True
            raise
        self._tls = True

    # --- waiting ------------------------------------------------------
    def _wait(self, fd, ev):
        """Waits until fd is ready for ev within the timeout; raises
        TimeoutError (socket.timeout) or BlockingIOError."""
        t = self._timeout
        if t == 0.0:
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        p = select.poll()
        p.register(fd, ev)
        ms = -1 if t is None else max(0, int(t * 1000 + 0.999))
        if not p.poll(ms):
            raise TimeoutError("timed out")

    def _host_error(self, default=None):
        try:
            msg = _wasmbox_host.net_error(self._rfd)
        except OSError:
            msg = b""
        if msg:
            return ConnectionAbortedError(errno.ECONNABORTED, msg.decode("utf-8", "replace"))
        return default

    # --- data -----------------------------------------------------------
    def recv(self, n, flags=0):
        self._check()
        if n < 0:
            raise ValueError("negative buffersize in recv")
        if n == 0 or self._eof:
            return b""
        while True:
            try:
                data = os.read(self._rfd, n)
            except BlockingIOError:
                self._wait(self._rfd, select.POLLIN)
                continue
            if not data:
                self._eof = True
                e = self._host_error()
                if e is not None:
                    raise e
            return data

    def recv_into(self, buf, nbytes=0, flags=0):
        m = memoryview(buf).cast("B")
        n = nbytes or len(m)
        data = self.recv(n, flags)
        m[:len(data)] = data
        return len(data)

    def recvfrom(self, n, flags=0):
        return self.recv(n, flags), self._peer

    def send(self, data, flags=0):
        self._check()
        m = memoryview(data).cast("B")
        while True:
            try:
                k = os.write(self._wfd, m)
            except BlockingIOError:
                self._wait(self._wfd, select.POLLOUT)
                continue
            except (BrokenPipeError, ConnectionError) as e:
                raise self._host_error(e)
            self._sent = self._sent or k > 0
            return k

    def sendall(self, data, flags=0):
        m = memoryview(data).cast("B")
        while m:
            k = self.send(m)
            m = m[k:]

    def sendto(self, data, *args):
        return self.send(data)

    def sendfile(self, file, offset=0, count=None):
        if offset:
            file.seek(offset)
        total = 0
        while count is None or total < count:
            chunk = file.read(65536 if count is None else min(65536, count - total))
            if not chunk:
                break
            self.sendall(chunk)
            total += len(chunk)
        return total

    def makefile(self, mode="r", buffering=None, *, encoding=None, errors=None, newline=None):
        import socket
        if not set(mode) <= {"r", "w", "b"}:
            raise ValueError("invalid mode %r (only r, w, b allowed)" % (mode,))
        writing, reading = "w" in mode, "r" in mode or "w" not in mode
        rawmode = ("r" if reading else "") + ("w" if writing else "")
        raw = socket.SocketIO(self, rawmode)
        self._io_refs += 1
        if buffering is None:
            buffering = -1
        if buffering < 0:
            buffering = io.DEFAULT_BUFFER_SIZE
        if buffering == 0:
            if "b" not in mode:
                raise ValueError("unbuffered streams must be binary")
            return raw
        if reading and writing:
            buf = io.BufferedRWPair(raw, raw, buffering)
        elif reading:
            buf = io.BufferedReader(raw, buffering)
        else:
            buf = io.BufferedWriter(raw, buffering)
        if "b" in mode:
            return buf
        text = io.TextIOWrapper(buf, encoding, errors, newline)
        text.mode = mode
        return text

    def _decref_socketios(self):
        if self._io_refs > 0:
            self._io_refs -= 1
        if self._closed:
            self._real_close()

    # --- closing --------------------------------------------------------
    def _close_fds(self):
        for fd in (self._rfd, self._wfd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._rfd = self._wfd = -1

    def _real_close(self):
        self._released = True
        self._close_fds()

    def close(self):
        self._closed = True
        if self._io_refs <= 0:
            self._real_close()

    def detach(self):
        raise OSError(errno.EOPNOTSUPP, "wasmbox: network: a host connection cannot be detached")

    def shutdown(self, how):
        self._check()
        if how in (_socket.SHUT_WR, _socket.SHUT_RDWR) and self._wfd >= 0:
            try:
                os.close(self._wfd)
            except OSError:
                pass
            self._wfd = -1

    def __del__(self):
        try:
            self._close_fds()
        except Exception:
            pass


def install():
    """Puts NetSocket and getaddrinfo in place in socket and _socket."""
    import socket
    socket.socket = socket.SocketType = NetSocket
    socket.getaddrinfo = getaddrinfo
    for name in ("gethostbyname", "gethostbyname_ex", "gethostbyaddr", "getnameinfo"):
        setattr(socket, name, _unsupported)
        setattr(_socket, name, _unsupported)
    _socket.getaddrinfo = getaddrinfo
    socket.has_ipv6 = True
