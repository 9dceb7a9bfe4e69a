package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/wasmbox/wasmbox/netpolicy"
)

// netFlags are the network flags of run, shell, exec, serve and mcp.
type netFlags struct {
	allowNet   []string
	netCA      string
	netSecrets []string
	netMethods []string
}

func (f *netFlags) register(fl *pflag.FlagSet) {
	fl.StringSliceVar(&f.allowNet, "allow-net", nil,
		"let curl, wget and git (--native git: clone, fetch, push, pull of https:// URLs) reach these hosts, HOST[:PORT],... (exact names, *.suffix or addresses; without a port 80 and 443; loopback and private addresses only when named exactly; repeatable)")
	fl.StringSliceVar(&f.netMethods, "net-methods", nil, "allow only these HTTP methods for --allow-net, e.g. GET,HEAD (default: all but CONNECT)")
	fl.StringVar(&f.netCA, "net-ca", "", "trust the PEM certificates of this file besides the host's roots for --allow-net TLS")
	fl.StringArrayVar(&f.netSecrets, "net-secret", nil,
		"add a header to requests for a host, 'HOST=Header: value $ENV' ($ENV from the host environment; the sandbox never sees it; repeatable)")
}

// getenv looks a variable up in the caller's environment (the client's,
// in the resident engine).
func (a *app) getenv(k string) string {
	if a.environ == nil {
		return os.Getenv(k)
	}
	for _, kv := range a.environ {
		if name, v, ok := strings.Cut(kv, "="); ok && name == k {
			return v
		}
	}
	return ""
}

// policy is the network policy of the flags; nil when none was given.
func (f *netFlags) policy(a *app) (*netpolicy.Policy, error) {
	if len(f.allowNet) == 0 && f.netCA == "" && len(f.netSecrets) == 0 && len(f.netMethods) == 0 {
		return nil, nil
	}
	p := &netpolicy.Policy{}
	for _, spec := range f.allowNet {
		rules, err := netpolicy.ParseAllow(spec)
		if err != nil {
			return nil, err
		}
		p.Allow = append(p.Allow, rules...)
	}
	for _, m := range f.netMethods {
		m = strings.ToUpper(strings.TrimSpace(m))
		if m == "" || strings.ContainsAny(m, " \t\r\n:/") {
			return nil, fmt.Errorf("--net-methods: bad method %q", m)
		}
		p.Methods = append(p.Methods, m)
	}
	if f.netCA != "" {
		pool, err := netpolicy.LoadCA(a.hostPath(f.netCA))
		if err != nil {
			return nil, err
		}
		p.RootCAs = pool
	}
	for _, spec := range f.netSecrets {
		s, err := netpolicy.ParseSecret(spec, a.getenv)
		if err != nil {
			return nil, err
		}
		p.Secrets = append(p.Secrets, s)
	}
	return p, nil
}
