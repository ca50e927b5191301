// Package access says how tumbler authenticates to Redis, Valkey and
// Sentinel servers: AUTH with a password or an ACL user and its password,
// and TLS (a CA, a client certificate and key, the server name to verify).
//
// Secrets are never values in a plan, a flag or a configuration file: a
// Secret names a file or an environment variable that holds the value, and
// only Resolve reads it, into a Login that refuses to print or marshal its
// password. So plan.json, results.json, the report and the logs carry the
// reference ("env TUMBLER_REDIS_PASSWORD"), never the value, and a client
// process that gets its lock spec as JSON reads the secret itself from the
// same file or its inherited environment.
package access

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Secret is where a secret is kept: a file (its contents, without a
// trailing newline) or an environment variable. Exactly one is set.
type Secret struct {
	File string `json:"file,omitempty"`
	Env  string `json:"env,omitempty"`
}

// IsZero reports whether no secret is named.
func (s Secret) IsZero() bool { return s.File == "" && s.Env == "" }

// String says where the secret is, never what it is.
func (s Secret) String() string {
	switch {
	case s.File != "":
		return "file " + s.File
	case s.Env != "":
		return "environment variable " + s.Env
	}
	return "no secret"
}

// Validate checks that exactly one source is named.
func (s Secret) Validate() error {
	if s.File != "" && s.Env != "" {
		return fmt.Errorf("a secret comes from a file or an environment variable, not both (file %s, env %s)", s.File, s.Env)
	}
	return nil
}

// Read returns the secret. An unset or empty variable, an unreadable or
// empty file, is an error naming the source.
func (s Secret) Read() (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	var v string
	switch {
	case s.File != "":
		b, err := os.ReadFile(s.File)
		if err != nil {
			return "", fmt.Errorf("read the secret: %w", err)
		}
		v = strings.TrimRight(string(b), "\r\n")
	case s.Env != "":
		var ok bool
		if v, ok = os.LookupEnv(s.Env); !ok {
			return "", fmt.Errorf("read the secret: environment variable %s is not set", s.Env)
		}
	default:
		return "", errors.New("read the secret: none named")
	}
	if v == "" {
		return "", fmt.Errorf("read the secret: %s is empty", s)
	}
	return v, nil
}

// Credentials are one identity: an ACL user (empty: the default user) and
// its password.
type Credentials struct {
	User     string `json:"user,omitempty"`
	Password Secret `json:"password,omitzero"`
}

// IsZero reports whether no credentials are given: no AUTH.
func (c Credentials) IsZero() bool { return c.User == "" && c.Password.IsZero() }

// Validate refuses a user without a password and a malformed user name.
func (c Credentials) Validate() error {
	if err := c.Password.Validate(); err != nil {
		return err
	}
	if c.User != "" && c.Password.IsZero() {
		return fmt.Errorf("ACL user %q needs a password (a file or an environment variable)", c.User)
	}
	if strings.ContainsFunc(c.User, func(r rune) bool { return r <= ' ' || r == '"' || r == '\'' || r == 0x7f }) {
		return fmt.Errorf("ACL user %q: no spaces, quotes or control characters", c.User)
	}
	return nil
}

// String describes the credentials without the password.
func (c Credentials) String() string {
	if c.IsZero() {
		return "no AUTH"
	}
	user := c.User
	if user == "" {
		user = "default"
	}
	return fmt.Sprintf("user %s, password from %s", user, c.Password)
}

// TLS is how to speak TLS to the servers. Paths, not contents, so a plan
// can carry them; the key file is read only when connecting.
type TLS struct {
	// CAFile verifies the servers' certificates (and, on servers tumbler
	// starts, the clients' and replicas'). Empty: the system's roots.
	CAFile string `json:"ca_file,omitempty"`
	// CertFile and KeyFile are the client certificate, for servers that
	// ask for one; both or neither.
	CertFile string `json:"cert_file,omitempty"`
	KeyFile  string `json:"key_file,omitempty"`
	// ServerName is the name the servers' certificates must carry; clients
	// reach servers through proxies at other addresses, so it is needed
	// unless the certificates name the proxies' IP.
	ServerName string `json:"server_name,omitempty"`
	// InsecureSkipVerify accepts any server certificate. Only ever set
	// explicitly; every report of such a run says so.
	InsecureSkipVerify bool `json:"insecure_skip_verify,omitempty"`
	// ServerCertFile and ServerKeyFile are the certificate of the servers
	// tumbler starts itself (process and docker providers); an external
	// deployment has its own.
	ServerCertFile string `json:"server_cert_file,omitempty"`
	ServerKeyFile  string `json:"server_key_file,omitempty"`
}

// Validate checks that paired files come in pairs.
func (t *TLS) Validate() error {
	if t == nil {
		return nil
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return errors.New("tls: a client certificate needs both cert_file and key_file")
	}
	if (t.ServerCertFile == "") != (t.ServerKeyFile == "") {
		return errors.New("tls: the servers' certificate needs both server_cert_file and server_key_file")
	}
	return nil
}

// ClientCert reports whether a client certificate is given.
func (t *TLS) ClientCert() bool { return t != nil && t.CertFile != "" }

// Config is the client side of t as a crypto/tls configuration, reading
// the files now; errors name the file.
func (t *TLS) Config() (*tls.Config, error) {
	if t == nil {
		return nil, nil
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls: CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls: CA file %s holds no PEM certificate", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls: client certificate %s and key %s: %w", t.CertFile, t.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// String describes the TLS settings for a report: what is verified, and
// loudly when nothing is.
func (t *TLS) String() string {
	if t == nil {
		return "no TLS"
	}
	var parts []string
	switch {
	case t.InsecureSkipVerify:
		parts = append(parts, "TLS, server certificates NOT verified (insecure_skip_verify)")
	case t.CAFile != "":
		parts = append(parts, "TLS verified against "+t.CAFile)
	default:
		parts = append(parts, "TLS verified against the system's roots")
	}
	if t.ServerName != "" {
		parts = append(parts, "server name "+t.ServerName)
	}
	if t.CertFile != "" {
		parts = append(parts, "client certificate "+t.CertFile)
	}
	return strings.Join(parts, ", ")
}

// Config is how a run authenticates: the lock clients' identity, the
// harness's, and TLS for every connection.
type Config struct {
	// Client is the identity of the lock clients, to the data nodes and the
	// Sentinels. On servers tumbler starts, a Client with a user is created
	// as an ACL user with the least rights the locks need (LockACL); one
	// without a user is the default user's password (requirepass).
	Client Credentials `json:"client,omitzero"`
	// Admin is the harness's identity (ROLE, INFO, CONFIG SET, REPLICAOF,
	// SENTINEL…), for an external deployment; empty means Client. Servers
	// tumbler starts get a random admin password per run instead.
	Admin Credentials `json:"admin,omitzero"`
	TLS   *TLS        `json:"tls,omitempty"`
}

// IsZero reports whether nothing is configured: plain connections, no AUTH.
func (c *Config) IsZero() bool {
	return c == nil || (c.Client.IsZero() && c.Admin.IsZero() && c.TLS == nil)
}

// Validate checks the configuration without reading any secret.
func (c *Config) Validate() error {
	if c == nil {
		return nil
	}
	var errs []error
	if err := c.Client.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("client: %w", err))
	}
	if err := c.Admin.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("admin: %w", err))
	}
	if err := c.TLS.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// String describes the configuration for a report, without secrets.
func (c *Config) String() string {
	if c.IsZero() {
		return "no AUTH, no TLS"
	}
	s := "clients: " + c.Client.String()
	if !c.Admin.IsZero() {
		s += "; harness: " + c.Admin.String()
	}
	return s + "; " + c.TLS.String()
}

// Login is a resolved identity and TLS configuration, ready to connect.
// It never prints or marshals its password.
type Login struct {
	User     string
	password string
	TLS      *tls.Config
}

// NewLogin makes a Login from values the caller already holds (a password
// tumbler generated itself).
func NewLogin(user, password string, tlsCfg *tls.Config) Login {
	return Login{User: user, password: password, TLS: tlsCfg}
}

// Resolve reads the credentials' secret and the TLS files.
func Resolve(c Credentials, t *TLS) (Login, error) {
	if err := c.Validate(); err != nil {
		return Login{}, err
	}
	var l Login
	if !c.Password.IsZero() {
		pw, err := c.Password.Read()
		if err != nil {
			return Login{}, err
		}
		l.User, l.password = c.User, pw
	}
	tc, err := t.Config()
	if err != nil {
		return Login{}, err
	}
	l.TLS = tc
	return l, nil
}

// Password is the secret, for the code that must hand it to a server's
// configuration or a client library. Never log it.
func (l Login) Password() string { return l.password }

// Auth reports whether the login authenticates.
func (l Login) Auth() bool { return l.password != "" }

// String describes the login without its password.
func (l Login) String() string {
	user := l.User
	if user == "" {
		user = "default"
	}
	s := "no AUTH"
	if l.Auth() {
		s = "user " + user + " (password hidden)"
	}
	if l.TLS != nil {
		s += ", TLS"
	}
	return s
}

// GoString hides the password from %#v too.
func (l Login) GoString() string { return "access.Login{" + l.String() + "}" }

// MarshalJSON hides the password from JSON.
func (l Login) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf("%q", l.String())), nil }

// Apply sets the login on go-redis options: user, password and TLS. Use it
// as a tweak of lock.NewClient.
func (l Login) Apply(o *redis.Options) {
	o.Username, o.Password, o.TLSConfig = l.User, l.password, l.TLS
}

// ApplyFailover sets the login on a go-redis FailoverClient's options, for
// the data nodes and the Sentinels alike.
func (l Login) ApplyFailover(o *redis.FailoverOptions) {
	o.Username, o.Password, o.TLSConfig = l.User, l.password, l.TLS
	o.SentinelUsername, o.SentinelPassword = l.User, l.password
}

// ApplyCluster sets the login's user and password on a go-redis
// ClusterClient's options (TLS is the dialer's: ClientView.Dialer).
func (l Login) ApplyCluster(o *redis.ClusterOptions) {
	o.Username, o.Password = l.User, l.password
}

// Redact replaces every occurrence of the login's password in s, for text
// that crosses from a server (a log line) into an error or a report.
func (l Login) Redact(s string) string {
	if l.password == "" {
		return s
	}
	return strings.ReplaceAll(s, l.password, "[redacted]")
}
