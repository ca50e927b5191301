package protocol

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/history"
)

// The test binary doubles as a client program: with fakeEnv set it speaks
// the protocol as the fake below, which holds locks in its own memory (a
// fake for the protocol's own logic; the tests against Redis are in
// serve_test.go). fakeMode names how its first run misbehaves; every
// later run (a restart) behaves.
const (
	fakeEnv   = "TUMBLER_PROTOCOL_FAKE"
	fakeMode  = "TUMBLER_PROTOCOL_FAKE_MODE"
	fakeState = "TUMBLER_PROTOCOL_FAKE_STATE"
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeEnv) == "1" {
		os.Exit(fakeClient())
	}
	if os.Getenv(serveEnv) != "" {
		os.Exit(serveClient())
	}
	os.Exit(m.Run())
}

// fakeClient is a client program for the protocol's failure paths.
func fakeClient() int {
	mode := os.Getenv(fakeMode)
	if starts := countStart(); starts > 1 && mode != "init-fail" {
		mode = "good"
	}
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	say := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	held := map[string]string{}
	n := 0
	for in.Scan() {
		var req map[string]any
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintf(os.Stderr, "fake: bad request %q\n", in.Bytes())
			return 1
		}
		id, typ := req["id"], req["type"]
		key, _ := req["key"].(string)
		if typ == TypeInit {
			if mode == "init-fail" {
				say(map[string]any{"in_reply_to": id, "type": "fail", "error": "option \"bogus\" unknown"})
				continue
			}
			say(map[string]any{"in_reply_to": id, "type": "ok", "library": "fake 1.0"})
			continue
		}
		if typ == TypeAcquire || typ == TypeRelease {
			if done, code := misbehave(mode, id, key, in, out, say); done {
				if code >= 0 {
					return code
				}
				continue
			}
		}
		if typ == TypeValid && mode == "slow-valid" { // 1 s left, told 300 ms after the question
			time.Sleep(300 * time.Millisecond)
			say(map[string]any{"in_reply_to": id, "type": "ok", "valid": true, "remaining_ms": 1000})
			continue
		}
		switch typ {
		case TypeAcquire:
			if held[key] != "" {
				say(map[string]any{"in_reply_to": id, "type": "fail", "error": "held"})
				continue
			}
			n++
			held[key] = "tok" + strconv.Itoa(n)
			lease := map[string]any{"token": held[key], "fence": n}
			if mode == "valid" {
				lease["valid_until_ns"] = history.Monotonic() + int64(500*time.Millisecond)
			}
			if mode == "slow-line" { // half the reply, then the rest after several of the harness's read deadlines
				b, _ := json.Marshal(map[string]any{"in_reply_to": id, "type": "ok", "lease": lease})
				out.Write(b[:len(b)/2])
				out.Flush()
				time.Sleep(70 * time.Millisecond)
				out.Write(append(b[len(b)/2:], '\n'))
				out.Flush()
				continue
			}
			say(map[string]any{"in_reply_to": id, "type": "ok", "lease": lease})
			if mode == "reply-exit" { // the reply, then gone before anyone read it
				return 0
			}
		case TypeRelease:
			lease, _ := req["lease"].(map[string]any)
			if lease == nil || lease["token"] != held[key] {
				say(map[string]any{"in_reply_to": id, "type": "fail", "error": "not held"})
				continue
			}
			delete(held, key)
			say(map[string]any{"in_reply_to": id, "type": "ok"})
		default:
			say(map[string]any{"in_reply_to": id, "type": "info", "error": fmt.Sprintf("fake: %v not supported", typ)})
		}
	}
	return 0
}

// misbehave does what mode makes the fake do instead of answering request
// id: done when it did something, with the fake's exit code (-1: it goes on).
func misbehave(mode string, id any, key string, in *bufio.Scanner, out *bufio.Writer, say func(any)) (done bool, code int) {
	switch mode {
	case "garbage":
		out.WriteString("hello, I am not JSON\n")
		out.Flush()
		return true, -1
	case "crash":
		fmt.Fprintln(os.Stderr, "fake: dying on purpose")
		return true, 7
	case "hang":
		time.Sleep(time.Hour)
	case "unknown-type":
		say(map[string]any{"in_reply_to": id, "type": "maybe"})
		return true, -1
	case "wrong-id":
		say(map[string]any{"in_reply_to": 999, "type": "ok"})
		return true, -1
	case "no-lease":
		say(map[string]any{"in_reply_to": id, "type": "ok"})
		return true, -1
	case "step", "endless-steps":
		for step := uint64(1); step == 1 || mode == "endless-steps"; step++ {
			say(map[string]any{"type": "step", "id": step, "step": "after-set", "key": key})
			if !in.Scan() {
				return true, 1
			}
			var c Request
			if json.Unmarshal(in.Bytes(), &c) != nil || c.Type != TypeContinue || c.InReplyTo != step {
				fmt.Fprintf(os.Stderr, "fake: want continue, got %q\n", in.Bytes())
				return true, 1
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return false, 0
}

// countStart counts this fake's runs in its state directory.
func countStart() int {
	dir := os.Getenv(fakeState)
	if dir == "" {
		return 1
	}
	entries, _ := os.ReadDir(dir)
	n := len(entries) + 1
	os.WriteFile(filepath.Join(dir, strconv.Itoa(n)), nil, 0o600)
	return n
}
