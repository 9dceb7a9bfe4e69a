"""ssl for the wasmbox sandbox: TLS is done by the host.

No OpenSSL is compiled into the sandbox's Python (this module replaces
CPython's ssl.py, which needs _ssl). SSLContext.wrap_socket(sock,
server_hostname=NAME) asks the host for a TLS connection to the name and
port sock is connected to (_wasmbox_net): the host does the handshake with
Go's crypto/tls, SNI NAME, ALPN http/1.1, TLS 1.2 or newer, and verifies
the certificate chain and the name against the host's roots and the run's
--net-ca. The guest writes and reads plaintext; the host encrypts.

What the guest's context says about trust does not lower it:
  - verify_mode CERT_NONE and check_hostname False are accepted (requests'
    verify=False, pip's --trusted-host) but the host verifies anyway; a
    server the host does not trust fails with SSLCertVerificationError. Add
    its CA on the host with --net-ca.
  - load_verify_locations / load_default_certs / set_default_verify_paths
    are accepted and add nothing: the sandbox cannot add roots.
  - load_cert_chain (client certificates) and server-side sockets raise
    SSLError.
  - server_hostname must be the name the socket connected to (the host
    verifies the name it dials); a connection through a proxy tunnel is
    not possible (the host refuses CONNECT).
getpeercert() returns the name the host verified (subject and
subjectAltName), not the server's certificate, which stays on the host.
"""
import enum as _enum
import errno as _errno
import os as _os
import base64 as _base64
from collections import namedtuple as _namedtuple

import _wasmbox_net

OPENSSL_VERSION = "wasmbox host TLS (Go crypto/tls)"
OPENSSL_VERSION_INFO = (3, 0, 0, 0, 0)
OPENSSL_VERSION_NUMBER = 0x30000000
_OPENSSL_API_VERSION = OPENSSL_VERSION_INFO

HAS_SNI = True
HAS_ALPN = True
HAS_NPN = False
HAS_ECDH = True
HAS_NEVER_CHECK_COMMON_NAME = True
HAS_SSLv2 = HAS_SSLv3 = HAS_TLSv1 = HAS_TLSv1_1 = False
HAS_TLSv1_2 = HAS_TLSv1_3 = True
CHANNEL_BINDING_TYPES = []

SOCK_STREAM = _wasmbox_net.SOCK_STREAM
SOL_SOCKET = 0xFFFF
SO_TYPE = 3


class SSLError(OSError):
    library = "SSL"
    reason = None

    def __str__(self):
        if len(self.args) >= 2 and isinstance(self.args[1], str):
            return self.args[1]
        return super().__str__()


class SSLZeroReturnError(SSLError):
    pass


class SSLWantReadError(SSLError):
    pass


class SSLWantWriteError(SSLError):
    pass


class SSLSyscallError(SSLError):
    pass


class SSLEOFError(SSLError):
    pass


class SSLCertVerificationError(SSLError, ValueError):
    verify_code = 1
    verify_message = ""


CertificateError = SSLCertVerificationError


class _IntEnum(_enum.IntEnum):
    pass


class _IntFlag(_enum.IntFlag):
    pass


class _SSLMethod(_IntEnum):
    PROTOCOL_SSLv23 = 2
    PROTOCOL_TLS_CLIENT = 16
    PROTOCOL_TLS_SERVER = 17


PROTOCOL_SSLv23 = PROTOCOL_TLS = _SSLMethod.PROTOCOL_SSLv23
PROTOCOL_TLS_CLIENT = _SSLMethod.PROTOCOL_TLS_CLIENT
PROTOCOL_TLS_SERVER = _SSLMethod.PROTOCOL_TLS_SERVER


class Options(_IntFlag):
    OP_ALL = 0x80000054
    OP_NO_SSLv2 = 0
    OP_NO_SSLv3 = 0x02000000
    OP_NO_TLSv1 = 0x04000000
    OP_NO_TLSv1_1 = 0x10000000
    OP_NO_TLSv1_2 = 0x08000000
    OP_NO_TLSv1_3 = 0x20000000
    OP_CIPHER_SERVER_PREFERENCE = 0x00400000
    OP_SINGLE_DH_USE = 0
    OP_SINGLE_ECDH_USE = 0
    OP_NO_COMPRESSION = 0x00020000
    OP_NO_TICKET = 0x00004000
    OP_NO_RENEGOTIATION = 0x40000000
    OP_ENABLE_MIDDLEBOX_COMPAT = 0x00100000
    OP_IGNORE_UNEXPECTED_EOF = 0x00000080
    OP_LEGACY_SERVER_CONNECT = 0x00000004
    OP_ENABLE_KTLS = 0x00000008


globals().update(Options.__members__)


class VerifyMode(_IntEnum):
    CERT_NONE = 0
    CERT_OPTIONAL = 1
    CERT_REQUIRED = 2


globals().update(VerifyMode.__members__)


class VerifyFlags(_IntFlag):
    VERIFY_DEFAULT = 0
    VERIFY_CRL_CHECK_LEAF = 0x4
    VERIFY_CRL_CHECK_CHAIN = 0xC
    VERIFY_X509_STRICT = 0x20
    VERIFY_ALLOW_PROXY_CERTS = 0x40
    VERIFY_X509_TRUSTED_FIRST = 0x8000
    VERIFY_X509_PARTIAL_CHAIN = 0x80000


globals().update(VerifyFlags.__members__)


class TLSVersion(_IntEnum):
    MINIMUM_SUPPORTED = -2
    SSLv3 = 0x0300
    TLSv1 = 0x0301
    TLSv1_1 = 0x0302
    TLSv1_2 = 0x0303
    TLSv1_3 = 0x0304
    MAXIMUM_SUPPORTED = -1


class AlertDescription(_IntEnum):
    ALERT_DESCRIPTION_HANDSHAKE_FAILURE = 40
    ALERT_DESCRIPTION_INTERNAL_ERROR = 80


globals().update(AlertDescription.__members__)


class _ASN1Object(_namedtuple("_ASN1Object", "nid shortname longname oid")):
    __slots__ = ()


class Purpose(_ASN1Object, _enum.Enum):
    SERVER_AUTH = (129, "serverAuth", "TLS Web Server Authentication", "1.3.6.1.5.5.7.3.1")
    CLIENT_AUTH = (130, "clientAuth", "TLS Web Client Authentication", "1.3.6.1.5.5.7.3.2")


DefaultVerifyPaths = _namedtuple("DefaultVerifyPaths", "cafile capath openssl_cafile_env openssl_cafile openssl_capath_env openssl_capath")


def get_default_verify_paths():
    return DefaultVerifyPaths(None, None, "SSL_CERT_FILE", "", "SSL_CERT_DIR", "")


def RAND_bytes(n):
    return _os.urandom(n)


def RAND_status():
    return True


def RAND_add(string, entropy):
    pass


PEM_HEADER = "-----BEGIN CERTIFICATE-----"
PEM_FOOTER = "-----END CERTIFICATE-----"


def DER_cert_to_PEM_cert(der_cert_bytes):
    f = str(_base64.standard_b64encode(der_cert_bytes), "ASCII", "strict")
    ss = [PEM_HEADER]
    ss += [f[i:i + 64] for i in range(0, len(f), 64)]
    ss.append(PEM_FOOTER + "\n")
    return "\n".join(ss)


def PEM_cert_to_DER_cert(pem_cert_string):
    if not pem_cert_string.startswith(PEM_HEADER):
        raise ValueError("Invalid PEM encoding; must start with %s" % PEM_HEADER)
    if not pem_cert_string.strip().endswith(PEM_FOOTER):
        raise ValueError("Invalid PEM encoding; must end with %s" % PEM_FOOTER)
    d = pem_cert_string.strip()[len(PEM_HEADER):-len(PEM_FOOTER)]
    return _base64.decodebytes(d.encode("ASCII", "strict"))


def match_hostname(cert, hostname):
    """The host verified the name; this checks the name getpeercert gave."""
    names = [v for k, v in cert.get("subjectAltName", ()) if k in ("DNS", "IP Address")]
    if hostname.rstrip(".").lower() not in [n.lower() for n in names]:
        raise CertificateError("hostname %r doesn't match %r" % (hostname, names))


def _refuse(what):
    return SSLError(_errno.EOPNOTSUPP, "wasmbox: network: %s is not supported: TLS is done by the host" % what)


class SSLContext:
    """A client TLS context; the host does the TLS (see the module doc)."""

    sslsocket_class = None  # set below
    sslobject_class = None

    def __init__(self, protocol=None, *args, **kwargs):
        if protocol is None:
            protocol = PROTOCOL_TLS
        self.protocol = _SSLMethod(protocol)
        self._check_hostname = self.protocol == PROTOCOL_TLS_CLIENT
        self._verify_mode = CERT_REQUIRED if self.protocol == PROTOCOL_TLS_CLIENT else CERT_NONE
        self.options = Options.OP_ALL | Options.OP_NO_SSLv2 | Options.OP_NO_SSLv3 | Options.OP_NO_COMPRESSION
        self.verify_flags = VerifyFlags.VERIFY_X509_TRUSTED_FIRST
        self.minimum_version = TLSVersion.TLSv1_2
        self.maximum_version = TLSVersion.MAXIMUM_SUPPORTED
        self.post_handshake_auth = False
        self.hostname_checks_common_name = False
        self.keylog_filename = None
        self.sni_callback = None
        self.security_level = 2
        self._alpn = []

    @property
    def check_hostname(self):
        return self._check_hostname

    @check_hostname.setter
    def check_hostname(self, v):
        self._check_hostname = bool(v)
        if v and self._verify_mode == CERT_NONE:
            self._verify_mode = CERT_REQUIRED

    @property
    def verify_mode(self):
        return self._verify_mode

    @verify_mode.setter
    def verify_mode(self, v):
        v = VerifyMode(v)
        if v == CERT_NONE and self._check_hostname:
            raise ValueError("Cannot set verify_mode to CERT_NONE when check_hostname is enabled.")
        self._verify_mode = v

    def load_verify_locations(self, cafile=None, capath=None, cadata=None):
        if cafile is None and capath is None and cadata is None:
            raise TypeError("cafile, capath and cadata cannot be all omitted")
        if cafile is not None and not _os.path.exists(cafile):
            raise FileNotFoundError(_errno.ENOENT, "No such file or directory", cafile)

    def load_default_certs(self, purpose=Purpose.SERVER_AUTH):
        pass

    def set_default_verify_paths(self):
        pass

    def load_cert_chain(self, certfile, keyfile=None, password=None):
        raise _refuse("a client certificate")

    def load_dh_params(self, path):
        pass

    def set_ecdh_curve(self, name):
        pass

    def set_ciphers(self, ciphers):
        pass

    def get_ciphers(self):
        return []

    def set_alpn_protocols(self, protocols):
        self._alpn = list(protocols)

    def set_npn_protocols(self, protocols):
        pass

    def set_servername_callback(self, cb):
        self.sni_callback = cb

    def cert_store_stats(self):
        return {"x509": 0, "crl": 0, "x509_ca": 0}

    def get_ca_certs(self, binary_form=False):
        return []

    def session_stats(self):
        return {}

    def wrap_socket(self, sock, server_side=False, do_handshake_on_connect=True,
                    suppress_ragged_eofs=True, server_hostname=None, session=None):
        if server_side:
            raise _refuse("a server-side TLS socket")
        if not isinstance(sock, _wasmbox_net.NetSocket):
            raise _refuse("TLS over %s" % type(sock).__name__)
        if self._check_hostname and not server_hostname:
            raise ValueError("check_hostname requires server_hostname")
        return SSLSocket._create(sock, self, server_hostname)

    def wrap_bio(self, incoming, outgoing, server_side=False, server_hostname=None, session=None):
        raise _refuse("TLS over memory BIOs")


class SSLSocket(_wasmbox_net.NetSocket):
    """A NetSocket whose connection the host encrypts."""

    def __init__(self, *args, **kwargs):
        raise TypeError("SSLSocket does not have a public constructor. Instances are returned by SSLContext.wrap_socket().")

    @classmethod
    def _create(cls, sock, context, server_hostname):
        sock._starttls(server_hostname)
        self = object.__new__(cls)
        self.__dict__.update(sock.__dict__)
        # The SSLSocket owns the descriptors now.
        sock._rfd = sock._wfd = -1
        sock._closed = sock._released = True
        self._context = context
        self.server_hostname = server_hostname
        self.server_side = False
        self.session = None
        self.session_reused = False
        return self

    @property
    def context(self):
        return self._context

    def do_handshake(self, block=False):
        pass

    def unwrap(self):
        raise _refuse("unwrap")

    def version(self):
        return None

    def cipher(self):
        return None

    def shared_ciphers(self):
        return None

    def compression(self):
        return None

    def selected_alpn_protocol(self):
        return "http/1.1" if "http/1.1" in self._context._alpn else None

    def selected_npn_protocol(self):
        return None

    def pending(self):
        return 0

    def get_channel_binding(self, cb_type="tls-unique"):
        return None

    def verify_client_post_handshake(self):
        raise _refuse("post-handshake authentication")

    def getpeercert(self, binary_form=False):
        if binary_form:
            return None
        host = self._peer[0]
        kind = "DNS"
        try:
            import ipaddress
            ipaddress.ip_address(host)
            kind = "IP Address"
        except ValueError:
            pass
        return {"subject": ((("commonName", host),),), "subjectAltName": ((kind, host),)}

    def read(self, len=1024, buffer=None):
        if buffer is not None:
            return self.recv_into(buffer, len)
        return self.recv(len)

    def write(self, data):
        return self.send(data)


class SSLObject:
    def __init__(self, *args, **kwargs):
        raise _refuse("SSLObject")


class MemoryBIO:
    def __init__(self, *args, **kwargs):
        raise _refuse("MemoryBIO")


class SSLSession:
    pass


SSLContext.sslsocket_class = SSLSocket
SSLContext.sslobject_class = SSLObject


def create_default_context(purpose=Purpose.SERVER_AUTH, *, cafile=None, capath=None, cadata=None):
    if purpose != Purpose.SERVER_AUTH:
        raise _refuse("a server-side context")
    ctx = SSLContext(PROTOCOL_TLS_CLIENT)
    if cafile or capath or cadata:
        ctx.load_verify_locations(cafile, capath, cadata)
    return ctx


def _create_unverified_context(protocol=None, *, cert_reqs=CERT_NONE, check_hostname=False,
                               purpose=Purpose.SERVER_AUTH, certfile=None, keyfile=None,
                               cafile=None, capath=None, cadata=None):
    ctx = SSLContext(PROTOCOL_TLS_CLIENT if protocol is None else protocol)
    ctx.check_hostname = check_hostname
    ctx.verify_mode = cert_reqs
    if certfile or keyfile:
        ctx.load_cert_chain(certfile, keyfile)
    return ctx


_create_default_https_context = create_default_context
_create_stdlib_context = _create_unverified_context


def get_server_certificate(addr, ssl_version=None, ca_certs=None, timeout=None):
    raise _refuse("get_server_certificate (the certificate stays on the host)")


def cert_time_to_seconds(cert_time):
    import time
    import calendar
    return calendar.timegm(time.strptime(cert_time, "%b %d %H:%M:%S %Y GMT"))


def wrap_socket(sock, keyfile=None, certfile=None, server_side=False, cert_reqs=CERT_NONE,
                ssl_version=PROTOCOL_TLS, ca_certs=None, do_handshake_on_connect=True,
                suppress_ragged_eofs=True, ciphers=None):
    ctx = SSLContext(ssl_version)
    return ctx.wrap_socket(sock, server_side=server_side, server_hostname=None)
