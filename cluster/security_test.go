package cluster

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/internal/testenv"
	"github.com/tumbler-dev/tumbler/internal/tlstest"
)

// secretEnv puts a fresh secret in an environment variable of the test's
// own, whose name begins with prefix.
func secretEnv(t *testing.T, prefix, value string) access.Secret {
	return access.Secret{Env: testenv.Set(t, prefix, value)}
}

// grepDir fails the test if any file under dir contains needle.
func grepDir(t *testing.T, dir, needle string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), needle) {
			t.Errorf("%s holds the secret", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func plainClient(t *testing.T, addr string, login access.Login) *redis.Client {
	o := &redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second,
		PoolSize: 1, DisableIdentity: true, Protocol: 2}
	login.Apply(o)
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A password (requirepass): every data node and Sentinel refuses a client
// without it; replication and Sentinel work with it, through a failover;
// no file of the cluster's directory holds it.
func TestPasswordEverywhere(t *testing.T) {
	t.Parallel()
	pw := "pw-" + t.Name() + "-Zq8 \"quoted\" and spaced"
	dir := t.TempDir()
	c := startCluster(t, Spec{Topology: topo(t, "replicated:1+sentinels"), Clients: 1, Dir: dir,
		Access: &access.Config{Client: access.Credentials{Password: secretEnv(t, "TUMBLER_TEST_PW", pw)}}})
	ctx := testCtx(t, 60*time.Second)
	good := access.NewLogin("", pw, nil)
	for _, name := range append(c.Nodes(), c.Sentinels()...) {
		addr, _ := c.Addr(name)
		if err := plainClient(t, addr, access.Login{}).Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
			t.Errorf("%s without a password: %v, want NOAUTH", name, err)
		}
		if err := plainClient(t, addr, good).Ping(ctx).Err(); err != nil {
			t.Errorf("%s with the password: %v", name, err)
		}
	}
	if err := c.CheckClients(ctx); err != nil {
		t.Fatal(err)
	}
	// Sentinel fails over with the password (auth-pass), and the new
	// primary's replica syncs with it (masterauth).
	if err := c.SentinelFailover(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := c.WaitFailover(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := c.Addr(p)
	if err := plainClient(t, addr, good).Set(ctx, "tumbler:after", "1", 0).Err(); err != nil {
		t.Fatalf("write on the new primary %s: %v", p, err)
	}
	waitReplicated(t, c, "p", "tumbler:after", good)
	grepDir(t, dir, pw)
}

func waitReplicated(t *testing.T, c *Cluster, node, key string, login access.Login) {
	t.Helper()
	addr, _ := c.Addr(node)
	cl := plainClient(t, addr, login)
	ctx := testCtx(t, 10*time.Second)
	for cl.Exists(ctx, key).Val() != 1 {
		if ctx.Err() != nil {
			t.Fatalf("%s never got %s by replication", node, key)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An ACL user: the clients get exactly their rights, the default user a
// password only the harness knows; a client following the Sentinels logs
// in to them as that user too. A changed password is an error naming the
// node before anything runs.
func TestACLUser(t *testing.T) {
	t.Parallel()
	pw := "lock-secret-" + t.Name()
	file := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(file, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	acl := []string{"resetkeys", "~tumbler:*", "-@all", "+ping", "+set", "+get"}
	c := startCluster(t, Spec{Topology: topo(t, "replicated:1+sentinels"), Clients: 2, Dir: dir, ClientACL: acl,
		Access: &access.Config{Client: access.Credentials{User: "locks", Password: access.Secret{File: file}}}})
	ctx := testCtx(t, 30*time.Second)
	v, err := c.ClientView(1)
	if err != nil {
		t.Fatal(err)
	}
	if v.Credentials.Password.File != file {
		t.Fatalf("client view credentials %+v: want a reference to %s", v.Credentials, file)
	}
	login, err := v.Login()
	if err != nil {
		t.Fatal(err)
	}
	fc := redis.NewFailoverClient(v.FailoverOptions(login))
	defer fc.Close()
	if err := fc.Set(ctx, "tumbler:k", "v", 0).Err(); err != nil {
		t.Fatalf("set through the Sentinels as locks: %v", err)
	}
	if err := fc.Set(ctx, "other:k", "v", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("set outside the key pattern: %v, want NOPERM", err)
	}
	if err := fc.ConfigGet(ctx, "maxmemory").Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("CONFIG GET as locks: %v, want NOPERM", err)
	}
	paddr, _ := c.Addr("p")
	if err := plainClient(t, paddr, access.NewLogin("", pw, nil)).Ping(ctx).Err(); err == nil {
		t.Error("the default user takes the clients' password")
	}
	if err := c.CheckClients(ctx); err != nil {
		t.Fatal(err)
	}
	// The password changes on the servers: the check names client and node.
	n := c.nodes["p"]
	if err := n.admin.Do(ctx, "ACL", "SETUSER", "locks", "resetpass", ">rotated").Err(); err != nil {
		t.Fatal(err)
	}
	err = c.CheckClients(ctx)
	if !errors.Is(err, ErrAccess) || !strings.Contains(err.Error(), "client 0 cannot log in to p ") || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("after the password changed: %v, want ErrAccess naming client 0 and p with WRONGPASS", err)
	}
	if strings.Contains(err.Error(), pw) {
		t.Fatalf("the error shows the password: %v", err)
	}
	grepDir(t, dir, pw)
}

// TLS with client certificates and a password: plain connections are
// refused, clients reach every node and Sentinel through their proxies by
// the certificate's name, replication and Sentinel speak TLS (a failover
// completes), and the cluster's directory holds neither the password nor
// the private keys.
func TestTLS(t *testing.T) {
	t.Parallel()
	certs := tlstest.Certs(t)
	pw := "tls-pw-" + t.Name()
	dir := t.TempDir()
	tlsCfg := &access.TLS{CAFile: certs.CA, CertFile: certs.ClientCert, KeyFile: certs.ClientKey,
		ServerName: tlstest.ServerName, ServerCertFile: certs.ServerCert, ServerKeyFile: certs.ServerKey}
	c := startCluster(t, Spec{Topology: topo(t, "replicated:1+sentinels"), Clients: 1, Dir: dir,
		Access: &access.Config{Client: access.Credentials{Password: secretEnv(t, "TUMBLER_TEST_TLS_PW", pw)}, TLS: tlsCfg}})
	ctx := testCtx(t, 60*time.Second)
	paddr, _ := c.Addr("p")
	if err := plainClient(t, paddr, access.NewLogin("", pw, nil)).Ping(ctx).Err(); err == nil {
		t.Error("a plain connection was served")
	}
	if err := c.CheckClients(ctx); err != nil {
		t.Fatal(err)
	}
	v, _ := c.ClientView(0)
	login, err := v.Login()
	if err != nil {
		t.Fatal(err)
	}
	fc := redis.NewFailoverClient(v.FailoverOptions(login))
	defer fc.Close()
	if err := fc.Set(ctx, "tumbler:tls", "1", 0).Err(); err != nil {
		t.Fatalf("set through the Sentinels over TLS: %v", err)
	}
	waitReplicated(t, c, "r1", "tumbler:tls", login)
	if err := c.SentinelFailover(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitFailover(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	grepDir(t, dir, pw)
	key, _ := os.ReadFile(certs.ServerKey)
	grepDir(t, dir, strings.Split(string(key), "\n")[1])
}

// A certificate the harness cannot verify stops the start at once, with an
// error naming the node; so does a client certificate the servers refuse.
func TestTLSRefusedNamesTheNode(t *testing.T) {
	t.Parallel()
	certs, other := tlstest.Certs(t), tlstest.Certs(t)
	for name, tc := range map[string]access.TLS{
		"server name": {CAFile: certs.CA, ServerName: "elsewhere.test", ServerCertFile: certs.ServerCert, ServerKeyFile: certs.ServerKey},
		// The servers verify clients against another CA than the one that
		// signed the client's certificate.
		"client cert": {CAFile: other.CA, ServerName: tlstest.ServerName, ServerCertFile: other.ServerCert, ServerKeyFile: other.ServerKey,
			CertFile: certs.ClientCert, KeyFile: certs.ClientKey},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			c, err := Start(testCtx(t, 60*time.Second), Spec{Topology: topo(t, "independent:1"), Clients: 1,
				Access: &access.Config{TLS: &tc}})
			if err == nil {
				_ = c.Close()
				t.Fatal("started")
			}
			if !errors.Is(err, ErrAccess) || !strings.Contains(err.Error(), "start n1") {
				t.Fatalf("err = %v, want ErrAccess naming n1", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v to give up: a refused certificate must end the wait at once", d)
			}
			t.Log(err)
		})
	}
}
