// Package netpolicy is wasmbox's network boundary: which hosts a sandbox
// may reach, how (methods, ports, limits), and the secrets the host adds
// to its requests without the sandbox ever seeing them.
//
// The sandbox never opens a socket. It asks the host to connect to
// host:port (runtime.NetABI); the host checks the name against the
// allowlist, resolves it itself, refuses loopback, private, link-local and
// metadata addresses unless the allowlist names that address exactly,
// dials the address it checked (so DNS rebinding cannot move the
// connection elsewhere), does TLS itself (crypto/tls, verified against the
// host's roots and the extra ones of the policy), and then reads the
// plaintext HTTP/1.1 requests the guest writes: each must be for the host
// it connected to (which also stops request smuggling and CONNECT), the
// brokered secret header replaces whatever the guest sent, and the secret
// values are masked in everything that flows back to the guest and in the
// records the host keeps.
package netpolicy

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// Rule is one allowed destination: a host named exactly, or every
// subdomain of a suffix ("*.example.com": a.example.com and
// a.b.example.com, not example.com itself), on one port or, with Port 0,
// on 80 and 443.
type Rule struct {
	Host   string // lower case, without the "*." of a suffix rule
	Suffix bool
	Port   int
}

// String is the rule as --allow-net spells it.
func (r Rule) String() string {
	h := r.Host
	if r.Suffix {
		h = "*." + h
	}
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if r.Port != 0 {
		return h + ":" + strconv.Itoa(r.Port)
	}
	return h
}

// ParseAllow parses an --allow-net list: HOST[:PORT] entries separated by
// commas, where HOST is a name, "*.suffix", an IPv4 address or a bracketed
// IPv6 address.
func ParseAllow(spec string) ([]Rule, error) {
	var rules []Rule
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		r, err := parseRule(f)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func parseRule(f string) (Rule, error) {
	var r Rule
	host, port := f, ""
	if strings.HasPrefix(f, "[") {
		end := strings.Index(f, "]")
		if end < 0 {
			return r, fmt.Errorf("--allow-net: %q: missing ]", f)
		}
		host, port = f[1:end], strings.TrimPrefix(f[end+1:], ":")
		if f[end+1:] != "" && !strings.HasPrefix(f[end+1:], ":") {
			return r, fmt.Errorf("--allow-net: %q: junk after ]", f)
		}
		if _, err := netip.ParseAddr(host); err != nil {
			return r, fmt.Errorf("--allow-net: %q: not an IPv6 address", f)
		}
	} else if i := strings.LastIndex(f, ":"); i >= 0 {
		host, port = f[:i], f[i+1:]
		if strings.Contains(host, ":") {
			return r, fmt.Errorf("--allow-net: %q: write an IPv6 address in brackets", f)
		}
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return r, fmt.Errorf("--allow-net: %q: bad port %q", f, port)
		}
		r.Port = n
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if strings.HasPrefix(host, "*.") {
		r.Suffix = true
		host = host[2:]
	}
	if host == "" || strings.ContainsAny(host, "*/ \t@") {
		return r, fmt.Errorf("--allow-net: %q: bad host", f)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if r.Suffix {
			return r, fmt.Errorf("--allow-net: %q: an address cannot be a suffix", f)
		}
		host = a.Unmap().String()
	}
	r.Host = host
	return r, nil
}

// Policy is what a sandbox may reach and how. The zero Policy allows
// nothing.
type Policy struct {
	// Allow is the allowlist; a destination no rule matches is denied.
	Allow []Rule
	// Methods, when not empty, are the only HTTP methods allowed (upper
	// case). CONNECT is never allowed.
	Methods []string
	// Secrets are the headers the host adds to requests (see Secret).
	Secrets []Secret
	// RootCAs are the roots TLS connections are verified against; nil
	// means the host's system roots (LoadCA adds a file's to them).
	RootCAs *x509.CertPool
	// MaxResponseBytes bounds the bytes of every response (headers and
	// body) a run receives, all requests together; 0 means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// MaxConns bounds the connections of a run open at once; 0 means
	// DefaultMaxConns.
	MaxConns int
	// Resolver resolves names (tests inject one); nil means the host's.
	Resolver Resolver
	// Dial opens the TCP connection to the checked address (tests
	// inject one); nil means a net.Dialer.
	Dial func(network, addr string, timeout time.Duration) (net.Conn, error)
}

// Defaults of the limits.
const (
	DefaultMaxResponseBytes int64 = 1 << 30
	DefaultMaxConns               = 32
	// ConnectTimeout bounds a TCP connect and TLS handshake (the run's
	// deadline bounds it too).
	ConnectTimeout = 30 * time.Second
	// MaxRequestHeader bounds the header of one request the guest writes.
	MaxRequestHeader = 1 << 20
)

// Resolver resolves a host name to its addresses.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Enabled reports whether the policy allows any destination.
func (p *Policy) Enabled() bool { return p != nil && len(p.Allow) > 0 }

// Match returns the rule that allows host:port, if any.
func (p *Policy) Match(host string, port int) (Rule, bool) {
	if p == nil {
		return Rule{}, false
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().String()
	}
	for _, r := range p.Allow {
		if r.Port != 0 {
			if port != r.Port {
				continue
			}
		} else if port != 80 && port != 443 {
			continue
		}
		if r.Suffix {
			if strings.HasSuffix(host, "."+r.Host) {
				return r, true
			}
		} else if host == r.Host {
			return r, true
		}
	}
	return Rule{}, false
}

// MethodAllowed reports whether requests of method m may be sent.
func (p *Policy) MethodAllowed(m string) bool {
	if m == "CONNECT" {
		return false
	}
	if len(p.Methods) == 0 {
		return true
	}
	for _, a := range p.Methods {
		if strings.EqualFold(a, m) {
			return true
		}
	}
	return false
}

// specialPrefixes are refused besides what netip classifies.
var specialPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),      // shared address space (CGNAT)
	netip.MustParsePrefix("192.0.0.0/24"),       // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),      // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),        // reserved, broadcast
	netip.MustParsePrefix("fd00:ec2::/32"),      // AWS metadata over IPv6 (in fc00::/7 too)
	netip.MustParsePrefix("64:ff9b::/96"),       // NAT64 (could reach private IPv4)
	netip.MustParsePrefix("64:ff9b:1::/48"),     // local-use NAT64
	netip.MustParsePrefix("2002::/16"),          // 6to4 (embeds IPv4)
	netip.MustParsePrefix("2001::/32"),          // Teredo (embeds IPv4)
	netip.MustParsePrefix("100::/64"),           // discard
	netip.MustParsePrefix("2001:db8::/32"),      // documentation
	netip.MustParsePrefix("192.88.99.0/24"),     // 6to4 relay
	netip.MustParsePrefix("169.254.0.0/16"),     // link-local, metadata 169.254.169.254
	netip.MustParsePrefix("fe80::/10"),          // link-local
	netip.MustParsePrefix("fc00::/7"),           // unique local (fd00::/8)
	netip.MustParsePrefix("127.0.0.0/8"),        // loopback
	netip.MustParsePrefix("10.0.0.0/8"),         // private
	netip.MustParsePrefix("172.16.0.0/12"),      // private
	netip.MustParsePrefix("192.168.0.0/16"),     // private
	netip.MustParsePrefix("100.100.100.200/32"), // Alibaba metadata (in CGNAT too)
}

// Refused reports whether a is an address that is reached only when the
// allowlist names it exactly: loopback, private, link-local, metadata,
// multicast, unspecified and the other special ranges.
func Refused(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsUnspecified() || a.IsLoopback() || a.IsPrivate() ||
		a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() ||
		a.IsMulticast() {
		return true
	}
	for _, p := range specialPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Secret is a header the host adds to every request for Host (exactly, or
// a subdomain of it for a "*.suffix" host) over TLS, replacing any copy
// the guest sent (which is dropped over plain HTTP too: the secret never
// crosses the network in clear). Its Values (the header value, and the parts of it that came from
// the environment) are masked in all that flows back to the guest and in
// the host's records.
type Secret struct {
	Host   string // lower case; "*.suffix" allowed
	Header string // canonical header name
	Value  string
	// Redact are the strings masked besides Value (the environment
	// variables' values Value was made from).
	Redact []string
}

// ParseSecret parses a --net-secret: 'HOST=Header: value', where $NAME or
// ${NAME} in the value is the host environment variable NAME (getenv;
// os.Getenv when nil). An unset or empty variable is an error: a request
// without its credentials is better refused than sent.
func ParseSecret(spec string, getenv func(string) string) (Secret, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var s Secret
	host, rest, ok := strings.Cut(spec, "=")
	name, value, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 {
		return s, errors.New("--net-secret: want 'HOST=Header: value'")
	}
	host = strings.ToLower(strings.TrimSpace(host))
	name = strings.TrimSpace(name)
	value = strings.TrimSpace(value)
	if host == "" || strings.ContainsAny(host, "/ \t@") {
		return s, fmt.Errorf("--net-secret: bad host %q", host)
	}
	if !validHeaderName(name) {
		return s, fmt.Errorf("--net-secret: bad header name %q", name)
	}
	var missing string
	expanded := os.Expand(value, func(k string) string {
		v := getenv(k)
		if v == "" && missing == "" {
			missing = k
		}
		if v != "" {
			s.Redact = append(s.Redact, v)
		}
		return v
	})
	if missing != "" {
		return s, fmt.Errorf("--net-secret: %s: $%s is not set", host, missing)
	}
	if expanded == "" || strings.ContainsAny(expanded, "\r\n\x00") {
		return s, fmt.Errorf("--net-secret: %s: bad header value", host)
	}
	s.Host, s.Header, s.Value = host, canonicalHeader(name), expanded
	return s, nil
}

// applies reports whether s is sent to host.
func (s Secret) applies(host string) bool {
	if strings.HasPrefix(s.Host, "*.") {
		return strings.HasSuffix(host, s.Host[1:])
	}
	return host == s.Host
}

func validHeaderName(n string) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}

func canonicalHeader(n string) string {
	b := []byte(strings.ToLower(n))
	up := true
	for i, c := range b {
		if up && 'a' <= c && c <= 'z' {
			b[i] = c - 32
		}
		up = c == '-'
	}
	return string(b)
}

// LoadCA returns the host's system roots with the PEM certificates of
// file added (--net-ca).
func LoadCA(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--net-ca: %w", err)
	}
	p, err := x509.SystemCertPool()
	if err != nil || p == nil {
		p = x509.NewCertPool()
	}
	if !p.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("--net-ca: %s: no PEM certificate in it", file)
	}
	return p, nil
}
