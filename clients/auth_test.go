package clients_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/access"
	_ "github.com/tumbler-dev/tumbler/clients" // the shipped clients
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/internal/testenv"
	"github.com/tumbler-dev/tumbler/internal/tlstest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
	"github.com/tumbler-dev/tumbler/lock/protocol"
	"github.com/tumbler-dev/tumbler/lock/variants"
)

// noUser: clients whose library takes a password but no ACL user; their
// init refuses one, naming auth.user.
var noUser = map[string]bool{"tooz": true}

// TestAuth: every client logs in with a password it reads from a file —
// the default user's (requirepass), and, unless its library takes no ACL
// user, an ACL user's with no more rights than tumbler's own locks have
// (variants.ACL) plus what its manifest's acl adds — and acquires, extends
// (where its library can) and releases.
func TestAuth(t *testing.T) {
	t.Parallel()
	pw := "client-secret-" + strings.ReplaceAll(t.Name(), "/", "-")
	file := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(file, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	servers := redistest.Start(t, 3)
	for _, s := range servers { // once started: the provider's readiness check logs in with no AUTH
		if err := s.Client(t).ConfigSet(ctxFor(t, 5*time.Second), "requirepass", pw).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range protocol.Shipped() {
		m, _ := protocol.Lookup(name)
		t.Run(name+"/password", func(t *testing.T) {
			authCycle(t, name, servers, &access.Credentials{Password: access.Secret{File: file}})
		})
		t.Run(name+"/acl-user", func(t *testing.T) {
			user := "locks-" + name
			rules := append([]string{user, "reset", "on", ">" + pw}, variants.ACL("locktest:")...)
			for _, s := range servers {
				admin := redis.NewClient(&redis.Options{Addr: s.Addr, Password: pw, DisableIdentity: true, Protocol: 2})
				err := admin.Do(ctxFor(t, 5*time.Second), append([]any{"ACL", "SETUSER"}, anys(append(rules, m.ACL...))...)...).Err()
				if err == nil { // the user must load its scripts itself, not find them loaded
					err = admin.ScriptFlush(ctxFor(t, 5*time.Second)).Err()
				}
				admin.Close()
				if err != nil {
					t.Fatalf("ACL SETUSER %s: %v", user, err)
				}
			}
			creds := &access.Credentials{User: user, Password: access.Secret{File: file}}
			if noUser[name] {
				in := initFor(m, servers, locktest.Key(t), time.Second, nil)
				in.Auth = creds
				wantRefused(t, name, in, "auth.user")
				return
			}
			authCycle(t, name, servers, creds)
		})
	}
}

func anys(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// authCycle: acquire, extend where the library can, release, logged in as creds.
func authCycle(t *testing.T, name string, servers []*redistest.Server, creds *access.Credentials) {
	t.Helper()
	m, _ := protocol.Lookup(name)
	key := locktest.Key(t)
	in := initFor(m, servers, key, 5*time.Second, nil)
	in.Auth = creds
	l := locker(t, start(t, name, in), key)
	ctx := ctxFor(t, 10*time.Second)
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if _, ok := m.Conform.Deviations[locktest.Extend]; !ok {
		if held, err = l.Extend(ctx, held); err != nil {
			t.Fatalf("extend: %v", err)
		}
	}
	if err := l.Release(ctx, held); err != nil {
		t.Fatalf("release: %v", err)
	}
	if _, err := l.Acquire(ctx); err != nil && !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("acquire after the release: %v", err)
	}
}

// tlsRefused: clients whose library cannot verify a server by a CA file
// of the user's; their init refuses tls, naming it.
var tlsRefused = map[string]bool{"tooz": true}

// TestTLS: through a cluster whose nodes speak TLS only (and ask for a
// client certificate and a password, read here from an environment
// variable), every client that can verify the servers by init's CA file
// locks through its own proxies; with a CA that signed nothing it gets
// no lock. The reference client speaks plain TCP only.
func TestTLS(t *testing.T) {
	t.Parallel()
	certs := tlstest.Certs(t)
	creds := access.Credentials{Password: access.Secret{Env: testenv.Set(t, "TUMBLER_TEST_CLIENT_PW", "tls-client-secret")}}
	tlsCfg := &access.TLS{CAFile: certs.CA, CertFile: certs.ClientCert, KeyFile: certs.ClientKey,
		ServerName: tlstest.ServerName, ServerCertFile: certs.ServerCert, ServerKeyFile: certs.ServerKey}
	tp, err := cluster.ParseTopology("independent:3")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Start(ctxFor(t, time.Minute), cluster.Spec{Topology: tp, Clients: 1, Access: &access.Config{Client: creds, TLS: tlsCfg}})
	if err != nil {
		t.Fatalf("start independent:3 with TLS: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	v, err := c.ClientView(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range protocol.Shipped() {
		if name == "reference" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			m, _ := protocol.Lookup(name)
			key := locktest.Key(t)
			in := initAt(m, v.AddrList(), key, 5*time.Second, nil)
			in.Auth = &creds
			clientTLS := access.TLS{CAFile: certs.CA, CertFile: certs.ClientCert, KeyFile: certs.ClientKey, ServerName: tlstest.ServerName}
			in.TLS = &clientTLS
			if tlsRefused[name] {
				wantRefused(t, name, in, "tls")
				return
			}
			l := locker(t, start(t, name, in), key)
			ctx := ctxFor(t, 10*time.Second)
			held, err := l.Acquire(ctx)
			if err != nil {
				t.Fatalf("acquire over TLS: %v", err)
			}
			if err := l.Release(ctx, held); err != nil {
				t.Fatalf("release over TLS: %v", err)
			}
			wrong := in
			wrongTLS := clientTLS
			wrongTLS.CAFile = certs.OtherCA
			wrong.TLS = &wrongTLS
			untrusting, err := startOrRefused(t, name, wrong)
			if err == nil {
				if _, err = locker(t, untrusting, key).Acquire(ctx); err == nil {
					t.Fatal("acquired over TLS verified against a CA that signed nothing")
				}
			}
			t.Logf("with a CA that signed nothing: %v", err)
		})
	}
}
