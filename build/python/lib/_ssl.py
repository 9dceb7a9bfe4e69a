"""wasmbox: there is no OpenSSL in the sandbox; the host does TLS (see ssl).

This module only tells programs that look for _ssl (pip's has_tls) that
TLS is available, and what does it."""
OPENSSL_VERSION = "wasmbox host TLS (Go crypto/tls)"
OPENSSL_VERSION_INFO = (3, 0, 0, 0, 0)
OPENSSL_VERSION_NUMBER = 0x30000000
HAS_SNI = True
HAS_ALPN = True
