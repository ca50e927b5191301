package checker

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// Deciding pieces: first in the order they returned, then by porcupine's
// search within a time limit and a share of memory.

// stateBytes is what porcupine keeps for each state it explores in a piece
// of n operations: a bitset of the operations linearized so far, the model
// state, and the cache entry and map slot holding them.
func stateBytes(n int) int64 { return int64(n+63)/64*8 + 160 }

// pieceMemory is the least porcupine needs for a piece of n operations: its
// entries and list nodes, and one state per operation (about n²/8 bytes
// for large n). A search that backtracks keeps more states.
func pieceMemory(n int) int64 { return int64(n) * (stateBytes(n) + 352) }

// pieceOutcome is what checkPieces found about one piece.
type pieceOutcome uint8

const (
	pieceOK pieceOutcome = iota
	pieceIllegal
	pieceTimedOut
	pieceTooBig     // its least need is over Config.LinearizabilityMemory: not run
	pieceOverBudget // its search kept more states than its share of memory allowed
)

// checkPieces decides every piece: linearizable when the model accepts its
// operations in the order they returned, otherwise by porcupine, in time
// order, as many at once as there are CPUs, each within timeout and within
// a share of memory (an equal share per CPU, more for a piece whose least
// need is larger, and never more than memory in all): a search that would
// keep more states than fit in its share is stopped, and a piece whose
// least need is over memory is not searched.
func checkPieces(model porcupine.Model, pieces []linPiece, timeout time.Duration, memory int64) []pieceOutcome {
	out := make([]pieceOutcome, len(pieces))
	workers := runtime.GOMAXPROCS(0)
	share := memory / int64(workers)
	todo := notAsReturned(pieces, workers)
	var wg sync.WaitGroup
	var (
		mu   sync.Mutex
		room = sync.NewCond(&mu)
		used int64
		next int
	)
	// take hands out the next piece to search and reserves its memory.
	take := func() (i int, reserve int64, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		for next < len(todo) && pieceMemory(len(pieces[todo[next]].ops)) > memory {
			out[todo[next]] = pieceTooBig
			next++
		}
		if next == len(todo) {
			return 0, 0, false
		}
		i = todo[next]
		next++
		reserve = max(share, pieceMemory(len(pieces[i].ops)))
		for used > 0 && used+reserve > memory {
			room.Wait()
		}
		used += reserve
		return i, reserve, true
	}
	for range workers {
		wg.Go(func() {
			for {
				i, reserve, ok := take()
				if !ok {
					return
				}
				n := len(pieces[i].ops)
				budget := (reserve - int64(n)*352) / stateBytes(n)
				var states int64
				var stopped atomic.Bool
				m := model
				m.Step = func(state, input, output any) (bool, any) {
					if states >= budget {
						stopped.Store(true)
						return false, state // fail every step: porcupine unwinds and gives up
					}
					ok, next := model.Step(state, input, output)
					if ok {
						states++
					}
					return ok, next
				}
				switch porcupine.CheckOperationsTimeout(m, porcupineOps(pieces[i].ops), timeout) {
				case porcupine.Illegal:
					out[i] = pieceIllegal
					if stopped.Load() {
						out[i] = pieceOverBudget
					}
				case porcupine.Unknown:
					out[i] = pieceTimedOut
				}
				mu.Lock()
				used -= reserve
				room.Broadcast()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

// notAsReturned lists, in order, the pieces the model does not accept in
// the order their operations returned (most pieces of a correct lock's
// history it does, and they need no search), checking them on workers
// goroutines.
func notAsReturned(pieces []linPiece, workers int) []int {
	var todo []int
	var tmu sync.Mutex
	var cursor atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var order []int
			for {
				i := int(cursor.Add(1)) - 1
				if i >= len(pieces) {
					return
				}
				if order = linearizableAsReturned(pieces[i].ops, order); order == nil {
					tmu.Lock()
					todo = append(todo, i)
					tmu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	slices.Sort(todo)
	return todo
}

// linearizableAsReturned says whether the model accepts ops in the order
// they returned (unknown outcomes last, in call order): an order that
// respects real time, so when the model accepts it the piece is
// linearizable, as porcupine would find. It returns the order (to reuse its
// memory) or nil when the model refuses it; porcupine then searches.
func linearizableAsReturned(ops []linOp, order []int) []int {
	order = order[:0]
	for i := range ops {
		order = append(order, i)
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(ops[a].ret, ops[b].ret); c != 0 {
			return c
		}
		return cmp.Compare(ops[a].call, ops[b].call)
	})
	s := linFree
	for _, i := range order {
		ok, next := linStep(s, &ops[i].in)
		if !ok {
			return nil
		}
		s = next
	}
	if order == nil {
		order = []int{}
	}
	return order
}

// bytesIEC renders a size for people: "3.6 GiB", "512.0 MiB".
func bytesIEC(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
