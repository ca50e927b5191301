// Package clockshim is the clock shim: an LD_PRELOAD library (clockshim.c)
// that shifts a process's wall clock by an offset tumbler changes while the
// process runs, and the offset file through which it does. The data nodes
// run with it for node clock faults (package cluster) and lock client
// programs for client clock faults (package lock/protocol).
package clockshim

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

//go:embed shim/clockshim.c
var source []byte

// Env names the environment variable that tells the clock shim which
// offset file to map.
const Env = "TUMBLER_CLOCK_FILE"

// Source is the C source of the clock shim, for images that build it
// themselves.
func Source() []byte { return append([]byte(nil), source...) }

var built struct {
	once sync.Once
	path string
	err  error
}

// Build compiles the clock shim with cc on first use and returns the path
// of the shared library. The result is cached under
// os.UserCacheDir()/tumbler, keyed by a hash of the source, so a machine
// compiles each version once; concurrent builders each write their own
// file and rename it into place.
func Build() (string, error) {
	built.once.Do(func() {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = filepath.Join(os.TempDir(), "tumbler-cache-"+strconv.Itoa(os.Getuid()))
		}
		built.path, built.err = Compile(filepath.Join(cache, "tumbler"))
	})
	return built.path, built.err
}

// Compile builds the library into dir unless it is there already.
func Compile(dir string) (string, error) {
	sum := sha256.Sum256(source)
	lib := filepath.Join(dir, "clockshim-"+hex.EncodeToString(sum[:8])+".so")
	if _, err := os.Stat(lib); err == nil {
		return lib, nil
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		return "", fmt.Errorf("build clock shim: no C compiler (cc) on PATH: install the Debian package gcc (apt-get install gcc libc6-dev)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("build clock shim: %w", err)
	}
	work, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", fmt.Errorf("build clock shim: %w", err)
	}
	defer os.RemoveAll(work)
	src := filepath.Join(work, "clockshim.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return "", fmt.Errorf("build clock shim: %w", err)
	}
	out := filepath.Join(work, "clockshim.so")
	if b, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", out, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build clock shim: cc failed: %v: %s", err, b)
	}
	if err := os.Rename(out, lib); err != nil {
		return "", fmt.Errorf("build clock shim: %w", err)
	}
	return lib, nil
}

// File is a process's clock offset: one int64 of nanoseconds, in a file
// that the shim inside the process maps shared, so a store here is seen by
// the process's next clock read.
type File struct {
	mem  []byte
	word *int64
}

// Open maps the offset file at path, creating it (offset 0) if needed.
func Open(path string) (*File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("clock file: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("clock file: %w", err)
	} else if st.Size() != 8 {
		if err := f.Truncate(8); err != nil {
			return nil, fmt.Errorf("clock file: %w", err)
		}
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, 8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("clock file: mmap %s: %w", path, err)
	}
	// The mapping is page-aligned, so the word is 8-byte aligned and the
	// store below is a single atomic instruction the shim's load pairs with.
	return &File{mem: mem, word: (*int64)(unsafe.Pointer(&mem[0]))}, nil
}

// Set makes the process's wall clock run offset ahead of the host's.
func (c *File) Set(offset time.Duration) { atomic.StoreInt64(c.word, int64(offset)) }

// Get is the current offset.
func (c *File) Get() time.Duration { return time.Duration(atomic.LoadInt64(c.word)) }

// Close unmaps the file.
func (c *File) Close() error {
	if c == nil || c.mem == nil {
		return nil
	}
	err := unix.Munmap(c.mem)
	c.mem, c.word = nil, nil
	if err != nil {
		return errors.New("clock file: munmap: " + err.Error())
	}
	return nil
}
