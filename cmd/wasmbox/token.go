package main

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// The HTTP front ends' access rules, shared by `wasmbox mcp --listen`
// (and meant for serve: the same rule as its --token-file):
//
//   - a bearer token comes from --token-file FILE (surrounding white space
//     trimmed) or else the WASMBOX_TOKEN environment variable; with one,
//     every request needs "Authorization: Bearer <token>", compared in
//     constant time (401 otherwise);
//   - without a token the listener must be on a loopback address;
//   - on a loopback listener, requests must name a loopback Host and come
//     from no foreign browser Origin (DNS rebinding, web pages posting to
//     the port): 403 otherwise.

// loadToken returns the bearer token of file, or of WASMBOX_TOKEN when file
// is "", or "" for none.
func loadToken(file string) (string, error) {
	var tok string
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		tok = strings.TrimSpace(string(b))
		if tok == "" {
			return "", fmt.Errorf("--token-file %s: the file is empty", file)
		}
	} else {
		tok = strings.TrimSpace(os.Getenv("WASMBOX_TOKEN"))
	}
	if strings.IndexFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return "", errors.New("the token must not contain spaces or control characters")
	}
	return tok, nil
}

// requireToken refuses requests without the bearer token; "" lets every
// request through.
func requireToken(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) != 1 {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isLoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func isLoopbackListener(l net.Listener) bool {
	a, ok := l.Addr().(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}

// loopbackRequests refuses a non-loopback Host and a foreign Origin.
func loopbackRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isLoopbackHost(r.Host) {
			http.Error(w, "Host "+r.Host+" is not a loopback name", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || !isLoopbackHost(u.Host) {
				http.Error(w, "cross-origin request refused", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
