package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Server is the server software a cluster runs: Redis or Valkey (the
// Linux Foundation's fork of Redis 7.2, same protocol, configuration and
// Sentinel). The empty Server is Redis.
type Server string

const (
	// Redis runs redis-server and redis-sentinel (Debian's redis-server
	// and redis-sentinel packages, 7.0 on bookworm).
	Redis Server = "redis"
	// Valkey runs valkey-server and valkey-sentinel (Debian's
	// valkey-server and valkey-sentinel, 8.0 from bookworm-backports;
	// scripts/setup installs them).
	Valkey Server = "valkey"
)

// Servers are the servers a cluster can run, Redis first.
var Servers = []Server{Redis, Valkey}

// ParseServer accepts redis and valkey ("" is redis).
func ParseServer(s string) (Server, error) {
	v := Server(strings.ToLower(strings.TrimSpace(s)))
	if v == "" {
		v = Redis
	}
	return v, v.Validate()
}

// Validate reports an unknown server.
func (s Server) Validate() error {
	switch s {
	case "", Redis, Valkey:
		return nil
	}
	return fmt.Errorf("unknown server %q, want redis or valkey", string(s))
}

// Name is s with the default filled in: "redis" or "valkey".
func (s Server) Name() string {
	if s == "" {
		return string(Redis)
	}
	return string(s)
}

// Binary is the program that runs a data node (sentinel false) or a
// Sentinel: redis-server, redis-sentinel, valkey-server, valkey-sentinel.
func (s Server) Binary(sentinel bool) string {
	if sentinel {
		return s.Name() + "-sentinel"
	}
	return s.Name() + "-server"
}

// Package is the Debian package that brings Binary.
func (s Server) Package(sentinel bool) string { return s.Binary(sentinel) }

// ServerVersion reads INFO's "server" section: which software answers
// (Valkey says valkey_version, and server_name:valkey; Redis only
// redis_version) and its version.
func ServerVersion(info string) (Server, string) {
	fields := InfoFields(info)
	if v := fields["valkey_version"]; v != "" {
		return Valkey, v
	}
	return Redis, fields["redis_version"]
}

// InfoFields parses INFO's "key:value" lines.
func InfoFields(info string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// Version is what the first data node runs, as "redis 7.0.15" or
// "valkey 8.0.1", for a report.
func (c *Cluster) Version(ctx context.Context) (string, error) {
	n, err := c.node("version", c.order[0], true)
	if err != nil {
		return "", err
	}
	ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	info, err := n.admin.Info(ictx, "server").Result()
	if err != nil {
		return "", fmt.Errorf("version of %s: %w", n.name, err)
	}
	s, v := ServerVersion(info)
	return s.Name() + " " + v, nil
}
