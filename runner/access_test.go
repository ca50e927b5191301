package runner

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/access"
	_ "github.com/tumbler-dev/tumbler/clients" // the shipped clients
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/internal/testenv"
	"github.com/tumbler-dev/tumbler/internal/tlstest"
	"github.com/tumbler-dev/tumbler/lock/protocol"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/workloads"
)

// storeHolds lists the files under dir that contain needle.
func storeHolds(t *testing.T, dir, needle string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), needle) {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A real run as an ACL user over TLS with client certificates, against a
// primary, a replica and Sentinels that fail over during the run: the
// clients log in and work, and nothing in the whole store directory —
// plan.json, results.json, the report, the logs, the clients' stderr, the
// servers' directories — holds the password or the private keys. The same
// holds for a lock client program (redis-py over the protocol), which is
// told where its secrets are and reads them itself.
func TestSecretsNeverStored(t *testing.T) {
	t.Parallel()
	for _, lock := range []variants.Options{{Variant: "single"}, {Variant: variants.ClientVariant, Client: &protocol.Program{Name: "redis-py"}}} {
		t.Run(lock.Label(), func(t *testing.T) {
			t.Parallel()
			secretsNeverStored(t, lock)
		})
	}
}

func secretsNeverStored(t *testing.T, lock variants.Options) {
	certs := tlstest.Certs(t)
	pw := "S3cret-" + t.Name() + "-9f2c"
	pwEnv := testenv.Set(t, "TUMBLER_TEST_LOCK_PW", pw)
	p := basePlan(t, "secrets")
	p.Topology, _ = cluster.ParseTopology("replicated:1+sentinels")
	p.Lock.Options = lock
	p.Access = &access.Config{
		Client: access.Credentials{User: "locks", Password: access.Secret{Env: pwEnv}},
		TLS: &access.TLS{CAFile: certs.CA, CertFile: certs.ClientCert, KeyFile: certs.ClientKey, ServerName: tlstest.ServerName,
			ServerCertFile: certs.ServerCert, ServerKeyFile: certs.ServerKey},
	}
	p.Workload.Mode = workloads.Processes
	p.Faults = []nemesis.Step{{At: span(t, "1s"), Fault: nemesis.Failover, FailoverParams: nemesis.FailoverParams{Via: "sentinel"}}}
	store := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := Run(ctx, p, Options{Store: store})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if ok := out.Stats.Ops["acquire"].OK; ok < 5 {
		t.Fatalf("only %d acquires succeeded: the clients did not work as the ACL user over TLS (%s)", ok, out.Dir)
	}
	if n := len(out.Result.Faults); n != 1 {
		t.Fatalf("%d faults recorded, want the failover", n)
	}
	plan, _ := os.ReadFile(filepath.Join(out.Dir, "plan.json"))
	if !strings.Contains(string(plan), `"`+pwEnv+`"`) {
		t.Errorf("plan.json does not name where the password is:\n%s", plan)
	}
	for _, secret := range []string{pw, pemBody(t, certs.ServerKey), pemBody(t, certs.ClientKey)} {
		if files := storeHolds(t, store, secret); len(files) > 0 {
			t.Errorf("the store holds a secret in %s", strings.Join(files, ", "))
		}
	}
	index, _ := os.ReadFile(filepath.Join(out.Dir, "index.html"))
	if !strings.Contains(string(index), "TLS verified against") {
		t.Error("the report does not say how TLS was verified")
	}
}

// pemBody is the first line of base64 of a PEM file: unique to its key.
func pemBody(t *testing.T, file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")[1]
}

// Skipping certificate verification is only ever explicit, and the report
// says it loudly.
func TestInsecureTLSIsReported(t *testing.T) {
	t.Parallel()
	certs := tlstest.Certs(t)
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("file-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := basePlan(t, "insecure")
	p.TimeLimit = span(t, "1s")
	p.Access = &access.Config{Client: access.Credentials{Password: access.Secret{File: pwFile}},
		TLS: &access.TLS{CAFile: certs.CA, InsecureSkipVerify: true, ServerCertFile: certs.ServerCert, ServerKeyFile: certs.ServerKey}}
	out := runPlan(t, p)
	index, _ := os.ReadFile(filepath.Join(out.Dir, "index.html"))
	if !strings.Contains(string(index), "NOT verified") {
		t.Error("the report of a run that skipped verification does not say so")
	}
	if files := storeHolds(t, filepath.Dir(filepath.Dir(out.Dir)), "file-secret"); len(files) > 0 {
		t.Errorf("the store holds the password in %s", strings.Join(files, ", "))
	}
}

// A secret that cannot be read is bad input naming where it should be,
// before any server starts.
func TestUnreadableSecretIsBadInput(t *testing.T) {
	p := basePlan(t, "nosecret")
	p.Access = &access.Config{Client: access.Credentials{Password: access.Secret{Env: "TUMBLER_TEST_UNSET_PW"}}}
	_, err := Run(context.Background(), p, Options{Store: t.TempDir()})
	if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "TUMBLER_TEST_UNSET_PW is not set") {
		t.Fatalf("err = %v, want bad input naming TUMBLER_TEST_UNSET_PW", err)
	}
}
