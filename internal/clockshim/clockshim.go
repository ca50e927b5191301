// Package clockshim is the clock shim: an LD_PRELOAD library (clockshim.c)
// that shifts a process's wall clock by an offset tumbler changes while the
// process runs, and makes it run at a rate (a Drift), and the clock file
// through which it does. The data nodes run with it for node clock faults
// (package cluster) and lock client programs for client clock faults
// (package lock/protocol).
//
// The file holds the offset in its first word, as it always did, then a
// drift written as one snapshot under a generation counter (a seqlock; see
// clockshim.c): a drift's displacement is Base + Slope × (monotonic now −
// Anchor), Slope being the rate less one, so several drifts add up to one
// (Drift.Plus) and a process reads them consistently without a lock.
package clockshim

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
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

// File is a process's clock: an int64 offset of nanoseconds and a drift, in
// a file that the shim inside the process maps shared, so a store here is
// seen by the process's next clock read.
type File struct {
	mem []byte
	w   *words
	mu  sync.Mutex // one drift writer at a time
}

// words is the file's layout, clockshim.c's struct clockfile.
type words struct {
	offset int64
	gen    uint64 // odd while a drift is being written
	base   int64
	slope  uint64 // math.Float64bits
	anchor int64
}

// size is the file's size; a file of the old size (the offset alone) is
// extended, its offset kept.
const size = int64(unsafe.Sizeof(words{}))

// Open maps the clock file at path, creating it (offset 0, no drift) if
// needed.
func Open(path string) (*File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("clock file: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("clock file: %w", err)
	} else if st.Size() != size {
		if err := f.Truncate(size); err != nil {
			return nil, fmt.Errorf("clock file: %w", err)
		}
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("clock file: mmap %s: %w", path, err)
	}
	// The mapping is page-aligned, so every word is 8-byte aligned and each
	// store below is a single atomic instruction the shim's loads pair with.
	return &File{mem: mem, w: (*words)(unsafe.Pointer(&mem[0]))}, nil
}

// Set makes the process's wall clock run offset ahead of the host's
// (besides the drift).
func (c *File) Set(offset time.Duration) { atomic.StoreInt64(&c.w.offset, int64(offset)) }

// Get is the current offset.
func (c *File) Get() time.Duration { return time.Duration(atomic.LoadInt64(&c.w.offset)) }

// SetDrift makes the process's wall clock drift by d on top of the offset
// (the zero Drift: none). The shim sees the whole drift or the one before,
// never a mix.
func (c *File) SetDrift(d Drift) {
	c.mu.Lock()
	defer c.mu.Unlock()
	atomic.AddUint64(&c.w.gen, 1) // odd: being written
	atomic.StoreInt64(&c.w.base, int64(d.Base))
	atomic.StoreUint64(&c.w.slope, math.Float64bits(d.Slope))
	atomic.StoreInt64(&c.w.anchor, d.Anchor)
	atomic.AddUint64(&c.w.gen, 1)
}

// Drift is the current drift.
func (c *File) Drift() Drift {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Drift{
		Base:   time.Duration(atomic.LoadInt64(&c.w.base)),
		Slope:  math.Float64frombits(atomic.LoadUint64(&c.w.slope)),
		Anchor: atomic.LoadInt64(&c.w.anchor),
	}
}

// Close unmaps the file.
func (c *File) Close() error {
	if c == nil || c.mem == nil {
		return nil
	}
	err := unix.Munmap(c.mem)
	c.mem, c.w = nil, nil
	if err != nil {
		return errors.New("clock file: munmap: " + err.Error())
	}
	return nil
}
