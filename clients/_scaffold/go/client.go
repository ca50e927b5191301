// __NAME__: a lock client for tumbler (clients/PROTOCOL.md), written by
// `tumbler client new`. It speaks RESP to one Redis node with Go's
// standard library only — SET NX PX to acquire, a compare-and-delete
// script to release, a compare-and-PEXPIRE script to extend — so that it
// runs as it is. To put your own lock library under tumbler, replace the
// three calls marked LIBRARY with your library's, and keep the mapping of
// what it says to ok, fail and info.
package main

import (
	"bufio"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

const (
	release = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
	extend  = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"
)

// errNotSent: the command never left (no connection): it had no effect.
var errNotSent = errors.New("not sent")

type client struct {
	init    map[string]any
	conn    net.Conn
	r       *bufio.Reader
	ttl     int64 // ms
	timeout time.Duration
	steps   map[string]bool // nil: report every step
	out     *bufio.Writer
	in      *bufio.Scanner
	stepID  int
}

func main() {
	c := &client{out: bufio.NewWriter(os.Stdout), in: bufio.NewScanner(os.Stdin)}
	c.in.Buffer(make([]byte, 1<<20), 1<<20)
	for c.in.Scan() {
		var req map[string]any
		if err := json.Unmarshal(c.in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "bad request:", err)
			os.Exit(1)
		}
		rep := c.serve(req)
		rep["in_reply_to"] = req["id"]
		c.write(rep)
	}
}

func (c *client) write(v map[string]any) {
	b, _ := json.Marshal(v)
	c.out.Write(append(b, '\n'))
	c.out.Flush()
}

// step reports a step when init armed it and waits for tumbler's continue.
func (c *client) step(name, key string) {
	if c.steps != nil && !c.steps[name] {
		return
	}
	c.stepID++
	c.write(map[string]any{"type": "step", "id": c.stepID, "step": name, "key": key})
	c.in.Scan() // {"type": "continue", "in_reply_to": …}
}

func (c *client) serve(req map[string]any) map[string]any {
	typ, _ := req["type"].(string)
	key, _ := req["key"].(string)
	if typ == "init" {
		return c.open(req)
	}
	var rep map[string]any
	var err error
	switch typ {
	case "acquire":
		rep, err = c.acquire(key, num(req["wait_ms"]))
	case "release":
		rep, err = c.release(key, token(req))
	case "extend":
		rep, err = c.extend(key, token(req), num(req["ttl_ms"]))
	default:
		return map[string]any{"type": "fail", "error": "unsupported request " + typ}
	}
	switch {
	case errors.Is(err, errNotSent):
		return map[string]any{"type": "fail", "error": err.Error()}
	case err != nil: // sent, no answer: it may have taken effect
		c.drop()
		return map[string]any{"type": "info", "error": err.Error()}
	}
	return rep
}

func (c *client) acquire(key string, waitMS int64) (map[string]any, error) {
	tok := newToken()
	deadline := time.Now().Add(time.Duration(waitMS) * time.Millisecond)
	for {
		start := monotonicNS()
		// LIBRARY: the lock library's acquire.
		set, err := c.do("SET", key, tok, "NX", "PX", strconv.FormatInt(c.ttl, 10))
		if err != nil {
			return nil, err
		}
		if set == "OK" {
			c.step("after-set", key)
			drift := c.ttl*int64(time.Millisecond)/100 + 2*int64(time.Millisecond)
			return map[string]any{"type": "ok", "lease": map[string]any{"token": tok, "valid_until_ns": start + c.ttl*int64(time.Millisecond) - drift}}, nil
		}
		if !time.Now().Before(deadline) {
			return map[string]any{"type": "fail", "error": "held by another owner", "held": true}, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *client) release(key, tok string) (map[string]any, error) {
	// LIBRARY: the lock library's release.
	n, err := c.do("EVAL", release, "1", key, tok)
	if err != nil {
		return nil, err
	}
	if n == "1" {
		return map[string]any{"type": "ok"}, nil
	}
	return map[string]any{"type": "fail", "error": "not held"}, nil
}

func (c *client) extend(key, tok string, ttl int64) (map[string]any, error) {
	start := monotonicNS()
	// LIBRARY: the lock library's extend.
	n, err := c.do("EVAL", extend, "1", key, tok, strconv.FormatInt(ttl, 10))
	if err != nil {
		return nil, err
	}
	if n != "1" {
		return map[string]any{"type": "fail", "error": "not held"}, nil
	}
	drift := ttl*int64(time.Millisecond)/100 + 2*int64(time.Millisecond)
	return map[string]any{"type": "ok", "lease": map[string]any{"token": tok, "valid_until_ns": start + ttl*int64(time.Millisecond) - drift}}, nil
}

// open answers init: the node, the credentials (read from where init says
// they are), TLS, the TTL and the steps to report.
func (c *client) open(in map[string]any) map[string]any {
	c.init = in
	c.ttl = num(in["ttl_ms"])
	c.timeout = time.Duration(num(in["read_timeout_ms"])) * time.Millisecond
	if connect, _ := in["connect"].(string); connect != "node" {
		return map[string]any{"type": "fail", "error": "connect " + connect + ": this client locks one node (connect node)"}
	}
	if opts, _ := in["options"].(map[string]any); len(opts) > 0 {
		var names []string
		for k := range opts {
			names = append(names, k)
		}
		return map[string]any{"type": "fail", "error": "options unknown: " + strings.Join(names, ", ")}
	}
	if steps, ok := in["steps"].([]any); ok {
		c.steps = map[string]bool{}
		for _, s := range steps {
			c.steps[fmt.Sprint(s)] = true
		}
	}
	if err := c.dial(); err != nil {
		return map[string]any{"type": "fail", "error": err.Error()}
	}
	return map[string]any{"type": "ok", "library": "__NAME__ (Go " + strings.TrimPrefix(runtime.Version(), "go") + ", RESP over net)"}
}

// dial connects to the node and logs in.
func (c *client) dial() error {
	nodes, _ := c.init["nodes"].([]any)
	if len(nodes) == 0 {
		return errors.New("init names no node")
	}
	addr := fmt.Sprint(nodes[0].(map[string]any)["addr"])
	conn, err := net.DialTimeout("tcp", addr, c.timeout)
	if err != nil {
		return err
	}
	if t, ok := c.init["tls"].(map[string]any); ok {
		cfg, err := tlsConfig(t)
		if err != nil {
			conn.Close()
			return err
		}
		conn = tls.Client(conn, cfg)
	}
	c.conn, c.r = conn, bufio.NewReader(conn)
	if auth, ok := c.init["auth"].(map[string]any); ok {
		pw, err := secret(auth["password"].(map[string]any))
		if err != nil {
			c.drop()
			return err
		}
		args := []string{"AUTH", pw}
		if user, ok := auth["user"].(string); ok && user != "" {
			args = []string{"AUTH", user, pw}
		}
		if _, err := c.do(args...); err != nil {
			c.drop()
			return fmt.Errorf("AUTH: %w", err)
		}
	}
	return nil
}

func tlsConfig(t map[string]any) (*tls.Config, error) {
	cfg := &tls.Config{ServerName: str(t["server_name"]), InsecureSkipVerify: t["insecure_skip_verify"] == true}
	if ca := str(t["ca_file"]); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		cfg.RootCAs.AppendCertsFromPEM(pem)
	}
	if cert := str(t["cert_file"]); cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, str(t["key_file"]))
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// secret reads a password from the file or the variable init names.
func secret(s map[string]any) (string, error) {
	if f, ok := s["file"].(string); ok {
		b, err := os.ReadFile(f)
		return strings.TrimRight(string(b), "\n"), err
	}
	v, ok := os.LookupEnv(str(s["env"]))
	if !ok {
		return "", fmt.Errorf("the variable %s is not set", str(s["env"]))
	}
	return v, nil
}

func (c *client) drop() {
	if c.conn != nil {
		c.conn.Close()
	}
	c.conn = nil
}

// do sends one command and reads its reply: "OK", an integer, a bulk
// string or "" for nil. An error reply is an error of its own.
func (c *client) do(args ...string) (string, error) {
	if c.conn == nil {
		if err := c.dial(); err != nil {
			return "", fmt.Errorf("%w: %v", errNotSent, err)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.conn.SetDeadline(time.Now().Add(c.timeout))
	if _, err := c.conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if err := readFull(c.r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

func readFull(r *bufio.Reader, buf []byte) error {
	for n := 0; n < len(buf); {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return err
		}
	}
	return nil
}

// monotonicNS is CLOCK_MONOTONIC, the clock valid_until_ns is read on.
func monotonicNS() int64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

func newToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func token(req map[string]any) string {
	lease, _ := req["lease"].(map[string]any)
	return str(lease["token"])
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
