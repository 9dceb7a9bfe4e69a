package sandbox

import (
	"sync"

	"github.com/wasmbox/wasmbox/audit"
)

// Bounds of what a sandbox remembers as secret values.
const (
	maxSecrets   = 1024
	maxSecretLen = 4096
)

// secretSet holds the values of the secret-named variables a sandbox (and
// its forks) has seen: set by the embedder (WithEnv, SetEnv) or assigned by
// a script. They are redacted from its audit entries always, and from its
// output with WithRedactor.
type secretSet struct {
	mu   sync.Mutex
	vals []string
	seen map[string]bool
}

func (s *secretSet) add(vals ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range vals {
		if v == "" || len(v) > maxSecretLen || s.seen[v] || len(s.vals) >= maxSecrets {
			continue
		}
		if s.seen == nil {
			s.seen = map[string]bool{}
		}
		s.seen[v] = true
		s.vals = append(s.vals, v)
	}
}

func (s *secretSet) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.vals[:len(s.vals):len(s.vals)]
}

// defaultNamer tells secret names when no redactor was given.
var defaultNamer = sync.OnceValue(func() *audit.Redactor { return audit.NewRedactor(audit.WithEnviron(nil)) })

// namer is the redactor that decides which variable names are secret.
func (c *config) namer() *audit.Redactor {
	if c.redactor != nil {
		return c.redactor
	}
	return defaultNamer()
}

// noteEnv remembers value when key is a secret name.
func (c *config) noteEnv(key, value string) {
	if c.namer().IsSecretName(key) {
		c.secrets.add(value)
	}
}

// noteScript remembers the values script assigns to secret-named
// variables, when there is an audit log or output redaction to use them.
func (c *config) noteScript(script string) {
	if c.audit == nil && c.redactor == nil {
		return
	}
	_, vals := c.namer().RedactScript(script)
	c.secrets.add(vals...)
}
