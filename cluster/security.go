package cluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/access"
)

// ServerTLS is how a process tumbler starts serves TLS (and speaks it to
// its primary and, for a Sentinel, to the nodes and other Sentinels).
// Paths are on this machine; the provider hands the files to the process
// from its SecretDir.
type ServerTLS struct {
	// CertFile and KeyFile are the server's certificate; CAFile verifies
	// its peers.
	CertFile, KeyFile, CAFile string
	// ClientCertFile and ClientKeyFile, if set, are what the process
	// presents when it connects out (a replica to its primary, a Sentinel
	// to a node); AuthClients makes it require a certificate of whoever
	// connects to it.
	ClientCertFile, ClientKeyFile string
	AuthClients                   bool
}

// ErrAccess is wrapped by every error that says the credentials or the TLS
// settings are wrong: a secret that cannot be read, a login a server
// refuses, a certificate either side rejects. It is bad input, not a
// failure of the harness.
var ErrAccess = errors.New("access refused")

// SentinelClientACL are the rights a lock client needs on a Sentinel: ask
// for the primary and the other Sentinels, and hear of a switch (go-redis's
// FailoverClient), or list the masters (redis-py's Sentinel, which
// discovers the primary with SENTINEL MASTERS). The lock clients' ACL user
// gets exactly these on the Sentinels tumbler starts.
var SentinelClientACL = []string{
	"resetchannels", "&+switch-master", "&+replica-reconf-done",
	"-@all", "+ping", "+subscribe", "+unsubscribe",
	"+sentinel|get-master-addr-by-name", "+sentinel|sentinels", "+sentinel|replicas", "+sentinel|masters",
}

// security is how the cluster's servers are secured and how the harness
// and the clients log in to them.
type security struct {
	cfg *access.Config // as given; nil: plain, no AUTH
	// admin is the harness's login to every data node and Sentinel; client
	// the lock clients' (resolved once, to check them before a run).
	admin, client access.Login
	// own: tumbler starts the servers and configures their security.
	own bool
	// aclUser: the clients log in as their own ACL user, so the servers'
	// default user carries admin's password.
	aclUser bool
	// clientACL are the client user's rights on the data nodes.
	clientACL []string
}

// newSecurity resolves cfg: it reads the secrets now, so a missing one is
// an error before anything starts. own is whether tumbler starts the
// servers (process, docker) rather than adopting them (external).
func newSecurity(cfg *access.Config, own bool, clientACL []string) (*security, error) {
	s := &security{own: own, clientACL: clientACL}
	if cfg.IsZero() {
		return s, nil
	}
	s.cfg = cfg
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAccess, err)
	}
	var err error
	if s.client, err = access.Resolve(cfg.Client, cfg.TLS); err != nil {
		return nil, fmt.Errorf("%w: client: %w", ErrAccess, err)
	}
	if !own {
		admin := cfg.Admin
		if admin.IsZero() {
			admin = cfg.Client
		}
		if s.admin, err = access.Resolve(admin, cfg.TLS); err != nil {
			return nil, fmt.Errorf("%w: admin: %w", ErrAccess, err)
		}
		return s, nil
	}
	if !cfg.Admin.IsZero() {
		return nil, fmt.Errorf("%w: admin credentials are for an external deployment; on servers tumbler starts the harness logs in with a password of its own", ErrAccess)
	}
	if t := cfg.TLS; t != nil && (t.ServerCertFile == "" || t.CAFile == "") {
		return nil, fmt.Errorf("%w: tls: servers tumbler starts need server_cert_file and server_key_file for their certificate, and ca_file to verify it and their peers", ErrAccess)
	}
	s.aclUser = cfg.Client.User != ""
	switch {
	case s.aclUser:
		// The clients get only their ACL user; the harness, replication and
		// the Sentinels use the default user with a password nobody else
		// knows.
		var b [24]byte
		_, _ = rand.Read(b[:])
		s.admin = access.NewLogin("", hex.EncodeToString(b[:]), s.client.TLS)
	default:
		s.admin = access.NewLogin("", s.client.Password(), s.client.TLS)
	}
	return s, nil
}

// enabled reports whether the servers need any security configuration.
func (s *security) enabled() bool { return s.cfg != nil }

// serverTLS is the TLS of the processes tumbler starts, nil for none.
func (s *security) serverTLS() *ServerTLS {
	if s.cfg == nil || s.cfg.TLS == nil || !s.own {
		return nil
	}
	t := s.cfg.TLS
	return &ServerTLS{CertFile: t.ServerCertFile, KeyFile: t.ServerKeyFile, CAFile: t.CAFile,
		ClientCertFile: t.CertFile, ClientKeyFile: t.KeyFile, AuthClients: t.ClientCert()}
}

// nodeSecrets are the directives a data node tumbler starts needs for
// AUTH: its users (passwords as SHA-256, so even the private file holds no
// client password in clear) and the password it replicates with.
func (s *security) nodeSecrets() []string {
	if s.cfg == nil || !s.admin.Auth() {
		return nil
	}
	out := []string{"user default on resetpass #" + sha(s.admin.Password()) + " ~* &* +@all"}
	if s.aclUser {
		out = append(out, "user "+s.client.User+" on resetpass #"+sha(s.client.Password())+" "+strings.Join(s.clientACL, " "))
	}
	return append(out, "masterauth "+quoteConf(s.admin.Password()))
}

// sentinelSecrets are a Sentinel's AUTH directives: its own users, and the
// passwords it reaches the nodes and the other Sentinels with.
func (s *security) sentinelSecrets() []string {
	if s.cfg == nil || !s.admin.Auth() {
		return nil
	}
	out := []string{"user default on resetpass #" + sha(s.admin.Password()) + " ~* &* +@all"}
	if s.aclUser {
		out = append(out, "user "+s.client.User+" on resetpass #"+sha(s.client.Password())+" "+strings.Join(SentinelClientACL, " "))
	}
	return append(out,
		"sentinel auth-pass "+MasterName+" "+quoteConf(s.admin.Password()),
		"sentinel sentinel-pass "+quoteConf(s.admin.Password()))
}

// redact hides the passwords in text that came from a server.
func (s *security) redact(text string) string {
	return s.client.Redact(s.admin.Redact(text))
}

// redactErr is err with the passwords hidden from its text; errors.Is and
// errors.As still see through it.
func (s *security) redactErr(err error) error {
	if msg := err.Error(); s.redact(msg) != msg {
		return redacted{msg: s.redact(msg), err: err}
	}
	return err
}

type redacted struct {
	msg string
	err error
}

func (r redacted) Error() string { return r.msg }
func (r redacted) Unwrap() error { return r.err }

func sha(pw string) string {
	h := sha256.Sum256([]byte(pw))
	return hex.EncodeToString(h[:])
}

// quoteConf quotes a value for a Redis configuration file, escaping what
// its parser would otherwise split or interpret.
func quoteConf(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range []byte(v) {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\x%02x", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// writeSecrets writes a process's secret files into its private directory
// (mode 0700, files 0600): the directives in redis.conf and its TLS files
// under fixed names. Called by the providers from layout.
func writeSecrets(s ProcSpec) error {
	if s.SecretDir == "" {
		return nil
	}
	if err := os.MkdirAll(s.SecretDir, 0o700); err != nil {
		return fmt.Errorf("start %s: private directory: %w", s.Name, err)
	}
	if !s.Sentinel && len(s.Secret) > 0 {
		if err := os.WriteFile(filepath.Join(s.SecretDir, secretConf), []byte(strings.Join(s.Secret, "\n")+"\n"), 0o600); err != nil {
			return fmt.Errorf("start %s: %w", s.Name, err)
		}
	}
	if t := s.TLS; t != nil {
		for name, from := range t.files() {
			if from == "" {
				continue
			}
			b, err := os.ReadFile(from)
			if err != nil {
				return fmt.Errorf("start %s: tls: %w", s.Name, err)
			}
			if err := os.WriteFile(filepath.Join(s.SecretDir, name), b, 0o600); err != nil {
				return fmt.Errorf("start %s: tls: %w", s.Name, err)
			}
		}
	}
	return nil
}

// Names of the files in a process's private directory.
const (
	secretConf = "secret.conf"
	tlsCert    = "tls-server.crt"
	tlsKey     = "tls-server.key"
	tlsCA      = "tls-ca.crt"
	tlsCCert   = "tls-client.crt"
	tlsCKey    = "tls-client.key"
)

func (t *ServerTLS) files() map[string]string {
	return map[string]string{tlsCert: t.CertFile, tlsKey: t.KeyFile, tlsCA: t.CAFile, tlsCCert: t.ClientCertFile, tlsCKey: t.ClientKeyFile}
}

// args are the TLS directives for a process whose private directory it
// sees at dir.
func (t *ServerTLS) args(dir string, sentinel bool) []string {
	at := func(name string) string { return dir + "/" + name }
	out := []string{"--tls-cert-file", at(tlsCert), "--tls-key-file", at(tlsKey), "--tls-ca-cert-file", at(tlsCA), "--tls-replication", "yes"}
	if t.ClientCertFile != "" {
		out = append(out, "--tls-client-cert-file", at(tlsCCert), "--tls-client-key-file", at(tlsCKey))
	}
	auth := "no"
	if t.AuthClients {
		auth = "yes"
	}
	return append(out, "--tls-auth-clients", auth)
}

// accessError reports whether err means the server refused who we are or
// the TLS handshake failed: waiting longer will not help.
func accessError(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	for _, m := range []string{"WRONGPASS", "NOAUTH", "NOPERM", "invalid password", "invalid username-password"} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	var (
		unknownCA  x509.UnknownAuthorityError
		hostname   x509.HostnameError
		invalid    x509.CertificateInvalidError
		recordHdr  tls.RecordHeaderError
		certVerify *tls.CertificateVerificationError
		alert      tls.AlertError
	)
	return errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &recordHdr) || errors.As(err, &certVerify) || errors.As(err, &alert) ||
		strings.Contains(msg, "tls: ")
}

// adminOptions are the harness's go-redis options for a process.
func adminOptions(addr string, login access.Login) *redis.Options {
	o := &redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, PoolSize: 2,
		DisableIdentity: true, Protocol: 2}
	login.Apply(o)
	return o
}

// CheckClients logs in as every client, through its own proxies, to every
// data node and Sentinel, and reports each that refuses: a wrong password,
// a missing right, a certificate the server or the client rejects. A run
// calls it before the first fault, so bad credentials are an error naming
// the node rather than a history of failed acquires.
func (c *Cluster) CheckClients(ctx context.Context) error {
	var errs []error
	for i := 0; i < c.spec.Clients; i++ {
		v, err := c.ClientView(i)
		if err != nil {
			return err
		}
		dial := v.Dialer(c.sec.client.TLS)
		try := func(what, addr string) {
			o := &redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second,
				WriteTimeout: 2 * time.Second, PoolSize: 1, DisableIdentity: true, Protocol: 2, Dialer: dial}
			c.sec.client.Apply(o)
			cl := redis.NewClient(o)
			defer cl.Close()
			pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			if err := cl.Ping(pctx).Err(); err != nil {
				errs = append(errs, fmt.Errorf("%w: client %d cannot log in to %s at %s (%s): %s", ErrAccess, i, what, addr, c.sec.client, c.sec.redact(err.Error())))
			}
		}
		for _, x := range v.Nodes {
			try(x, v.Addrs[x])
		}
		for j, s := range v.Sentinels {
			try(c.topo.SentinelNames()[j], s)
		}
		if len(errs) > 0 {
			break // the other clients log in the same way
		}
	}
	return errors.Join(errs...)
}

// dialTLS wraps a dialer with a TLS handshake: go-redis does TLS only with
// its own dialer, and a client's dialer routes through its proxies.
func dialTLS(d func(ctx context.Context, network, addr string) (net.Conn, error), cfg *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if cfg == nil {
		return d
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := d(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := cfg
		if c.ServerName == "" && !c.InsecureSkipVerify {
			// As crypto/tls's own dialers do: verify the name dialled.
			c = cfg.Clone()
			c.ServerName, _, _ = net.SplitHostPort(addr)
		}
		conn := tls.Client(raw, c)
		if err := conn.HandshakeContext(ctx); err != nil {
			_ = raw.Close()
			return nil, err
		}
		return conn, nil
	}
}
