package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/runner"
)

// targetFlags say where the servers run and how to log in to them
// (runner.Target): run, plan, reproduce, matrix and audit bind the same
// flags. Secrets are named by a file or an environment variable; no flag
// takes a secret's value.
type targetFlags struct {
	provider, external, server string

	user, passFile, passEnv                string
	adminUser, adminPassFile, adminPassEnv string

	tlsOn                           bool
	tlsCA, tlsCert, tlsKey, tlsName string
	tlsServerCert, tlsServerKey     string
	tlsInsecure                     bool
	changed                         func(string) bool
}

// targetPaths are the flags that set the plan fields at these paths, for
// errors that name the field (planFlags.explain): --tls stands for every
// --tls-* flag, which each imply it.
var targetPaths = map[string]string{"provider": "provider", "external": "external", "server": "server", "access.tls": "tls"}

// bind binds every target flag.
func (f *targetFlags) bind(fs *pflag.FlagSet) {
	f.bindWhere(fs)
	f.bindServer(fs)
	f.bindAccess(fs)
}

// bindWhere binds --provider and --external.
func (f *targetFlags) bindWhere(fs *pflag.FlagSet) {
	fs.StringVar(&f.provider, "provider", "", "who runs the servers: "+cluster.ProviderHelp())
	fs.StringVar(&f.external, "external", "", "configuration file of an external deployment (implies --provider "+cluster.ExternalKind().Name+")")
}

// bindServer binds --server.
func (f *targetFlags) bindServer(fs *pflag.FlagSet) {
	fs.StringVar(&f.server, "server", "", "server software: redis or valkey (valkey-server from Debian's bookworm-backports; default redis)")
}

// bindAccess binds the --auth-*, --admin-* and --tls-* flags.
func (f *targetFlags) bindAccess(fs *pflag.FlagSet) {
	fs.StringVar(&f.user, "auth-user", "", "ACL user the lock clients log in as (on servers tumbler starts: created with the least rights the locks need)")
	fs.StringVar(&f.passFile, "auth-password-file", "", "file holding the clients' password (a trailing newline is ignored)")
	fs.StringVar(&f.passEnv, "auth-password-env", "", "environment variable holding the clients' password")
	fs.StringVar(&f.adminUser, "admin-user", "", "external deployments: ACL user the harness logs in as (default: the clients')")
	fs.StringVar(&f.adminPassFile, "admin-password-file", "", "external deployments: file holding the harness's password")
	fs.StringVar(&f.adminPassEnv, "admin-password-env", "", "external deployments: environment variable holding the harness's password")
	fs.BoolVar(&f.tlsOn, "tls", false, "speak TLS to every server (implied by any other --tls-* flag)")
	fs.StringVar(&f.tlsCA, "tls-ca", "", "CA certificate file the servers' certificates are verified against (default: the system's roots)")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "client certificate file, for servers that require one")
	fs.StringVar(&f.tlsKey, "tls-key", "", "the client certificate's key file")
	fs.StringVar(&f.tlsName, "tls-server-name", "", "name the servers' certificates must carry (clients reach them through proxies at other addresses)")
	fs.StringVar(&f.tlsServerCert, "tls-server-cert", "", "certificate file of the servers tumbler starts ("+strings.Join(cluster.ProviderNamesWith(startsServers), ", ")+")")
	fs.StringVar(&f.tlsServerKey, "tls-server-key", "", "key file of the servers tumbler starts")
	fs.BoolVar(&f.tlsInsecure, "tls-insecure-skip-verify", false, "accept any server certificate (the report says so)")
}

// startsServers: a provider whose servers tumbler starts and configures.
func startsServers(k cluster.ProviderKind) bool { return !k.Adopts }

// target is the runner.Target the flags describe; Access stays nil unless
// an auth or TLS flag was given.
func (f *targetFlags) target() (runner.Target, error) {
	t := runner.Target{Provider: f.provider, External: f.external, Server: f.server}
	acc := &access.Config{
		Client: access.Credentials{User: f.user, Password: access.Secret{File: f.passFile, Env: f.passEnv}},
		Admin:  access.Credentials{User: f.adminUser, Password: access.Secret{File: f.adminPassFile, Env: f.adminPassEnv}},
	}
	if f.tlsOn || f.tlsCA != "" || f.tlsCert != "" || f.tlsKey != "" || f.tlsName != "" || f.tlsServerCert != "" || f.tlsServerKey != "" || f.tlsInsecure {
		acc.TLS = &access.TLS{CAFile: f.tlsCA, CertFile: f.tlsCert, KeyFile: f.tlsKey, ServerName: f.tlsName,
			ServerCertFile: f.tlsServerCert, ServerKeyFile: f.tlsServerKey, InsecureSkipVerify: f.tlsInsecure}
	}
	if acc.IsZero() {
		return t, nil
	}
	if err := acc.Validate(); err != nil {
		return t, fmt.Errorf("--auth-*/--tls-*: %w", err)
	}
	t.Access = acc
	return t, nil
}
