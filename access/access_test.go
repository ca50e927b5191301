package access

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecretRead(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pw")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ACCESS_TEST_PW", "from-env")
	t.Setenv("ACCESS_TEST_EMPTY", "")
	for _, c := range []struct {
		s       Secret
		want    string
		wantErr string
	}{
		{Secret{File: file}, "from-file", ""},
		{Secret{Env: "ACCESS_TEST_PW"}, "from-env", ""},
		{Secret{Env: "ACCESS_TEST_UNSET"}, "", "ACCESS_TEST_UNSET is not set"},
		{Secret{Env: "ACCESS_TEST_EMPTY"}, "", "is empty"},
		{Secret{File: empty}, "", "is empty"},
		{Secret{File: filepath.Join(dir, "missing")}, "", "missing"},
		{Secret{File: file, Env: "ACCESS_TEST_PW"}, "", "not both"},
		{Secret{}, "", "none named"},
	} {
		got, err := c.s.Read()
		if c.wantErr == "" && (err != nil || got != c.want) {
			t.Errorf("%s: %q, %v; want %q", c.s, got, err, c.want)
		}
		if c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s: err %v, want one mentioning %q", c.s, err, c.wantErr)
		}
	}
}

// A Login never shows its password: not printed, not as JSON, not
// redacted text.
func TestLoginHidesPassword(t *testing.T) {
	t.Setenv("ACCESS_TEST_PW", "hunter2-secret")
	l, err := Resolve(Credentials{User: "locks", Password: Secret{Env: "ACCESS_TEST_PW"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(struct{ L Login }{l})
	for _, s := range []string{fmt.Sprint(l), fmt.Sprintf("%v %+v %#v %s", l, l, l, l), string(b), l.Redact("auth locks hunter2-secret")} {
		if strings.Contains(s, "hunter2-secret") {
			t.Errorf("the password shows in %q", s)
		}
	}
	if l.Password() != "hunter2-secret" || l.User != "locks" {
		t.Fatalf("login %v does not carry the credentials", l)
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Client: Credentials{User: "locks"}}, "needs a password"},
		{Config{Client: Credentials{User: "a b", Password: Secret{Env: "X"}}}, "no spaces"},
		{Config{TLS: &TLS{CertFile: "c"}}, "cert_file and key_file"},
		{Config{TLS: &TLS{ServerKeyFile: "k"}}, "server_cert_file and server_key_file"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	insecure := (&Config{TLS: &TLS{InsecureSkipVerify: true}}).String()
	if !strings.Contains(insecure, "NOT verified") {
		t.Errorf("insecure TLS described as %q", insecure)
	}
}
