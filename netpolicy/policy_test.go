package netpolicy

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseAllowAndMatch(t *testing.T) {
	rules, err := ParseAllow("api.example.com, *.githubusercontent.com,127.0.0.1:8443,[::1]:9000")
	if err != nil {
		t.Fatal(err)
	}
	p := &Policy{Allow: rules}
	cases := []struct {
		host string
		port int
		ok   bool
	}{
		{"api.example.com", 443, true},
		{"API.Example.COM.", 80, true},
		{"api.example.com", 8080, false}, // a bare host allows 80 and 443 only
		{"x.api.example.com", 443, false},
		{"raw.githubusercontent.com", 443, true},
		{"a.b.githubusercontent.com", 443, true},
		{"githubusercontent.com", 443, false}, // a suffix is not its apex
		{"evilgithubusercontent.com", 443, false},
		{"127.0.0.1", 8443, true},
		{"127.0.0.1", 443, false},
		{"::1", 9000, true},
		{"::ffff:127.0.0.1", 8443, true},
	}
	for _, c := range cases {
		if _, ok := p.Match(c.host, c.port); ok != c.ok {
			t.Errorf("Match(%q, %d) = %v, want %v", c.host, c.port, ok, c.ok)
		}
	}
	for _, bad := range []string{"a:0", "a:x", "::1", "[::1", "*.1.2.3.4", "a b", "*", "h:70000"} {
		if _, err := ParseAllow(bad); err == nil {
			t.Errorf("ParseAllow(%q) accepted", bad)
		} else if !strings.HasPrefix(err.Error(), "--allow-net: ") {
			t.Errorf("ParseAllow(%q): %v", bad, err)
		}
	}
}

func TestRefused(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "0.0.0.0",
		"::1", "fd00::1", "fd00:ec2::254", "fe80::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "100.64.0.1", "224.0.0.1", "::"} {
		if !Refused(netip.MustParseAddr(a)) {
			t.Errorf("Refused(%s) = false", a)
		}
	}
	for _, a := range []string{"93.184.216.34", "1.1.1.1", "2606:4700::1111"} {
		if Refused(netip.MustParseAddr(a)) {
			t.Errorf("Refused(%s) = true", a)
		}
	}
}

func TestMethods(t *testing.T) {
	p := &Policy{Methods: []string{"GET", "head"}}
	if !p.MethodAllowed("GET") || !p.MethodAllowed("HEAD") || p.MethodAllowed("POST") {
		t.Fatal("methods")
	}
	if (&Policy{}).MethodAllowed("CONNECT") {
		t.Fatal("CONNECT allowed")
	}
}

func TestParseSecret(t *testing.T) {
	env := map[string]string{"TOK": "s3cr3t-value"}
	s, err := ParseSecret("api.github.com=Authorization: Bearer $TOK", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if s.Host != "api.github.com" || s.Header != "Authorization" || s.Value != "Bearer s3cr3t-value" || len(s.Redact) != 1 || s.Redact[0] != "s3cr3t-value" {
		t.Fatalf("%+v", s)
	}
	for _, bad := range []string{"nohost", "h=NoColon", "h=Bad Name: v", "h=X: $UNSET", "=X: v"} {
		if _, err := ParseSecret(bad, func(k string) string { return env[k] }); err == nil {
			t.Errorf("ParseSecret(%q) accepted", bad)
		}
	}
}
