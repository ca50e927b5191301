package nemesis

import (
	"errors"
	"fmt"
	"time"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/field"
)

// ClientStarve gives client processes a small share of the CPU for For: a
// duty cycle of SIGCONT and SIGSTOP of each one's process group, Share of
// every Period running and the rest stopped.
//
// Why a duty cycle and not a CPU quota (cgroup v2 cpu.max): a quota only
// throttles the CPU a process uses, and a lock client's worker waits on
// its sockets nearly all the time — a renewal costs it microseconds of
// CPU, so any quota short of none leaves its renewals on time. A starved
// JVM (Redisson #5697, #2665) is late because its own busy threads eat its
// share; the duty cycle is that lateness without the busy threads: whatever
// falls due while a client is stopped runs at its next running part. It
// also needs nothing of the machine — no writable cgroup hierarchy, no cpu
// controller delegated (a container or a user session often has neither;
// this machine's cgroup v2 hierarchy has no cpu controller at all) — only
// clients in process mode, as client-pause.
const ClientStarve Kind = "client-starve"

// minPhase bounds the running and the stopped part of a period: the
// nemesis's timers are good to about a millisecond.
const minPhase = time.Millisecond

type clientStarve struct{ kindBase }

func init() { register(150, clientStarve{}) }

func (clientStarve) kind() Kind { return ClientStarve }

// traits: it stops client processes for most of every period.
func (clientStarve) traits() history.TraitSet {
	return history.TraitSet{history.StopsClient}
}

func (clientStarve) doc() string {
	return "starves client processes for \"for\": every \"period\" they run for \"share\" of it and are stopped (SIGSTOP) for the rest, so what falls due meanwhile — a renewal — runs late while the holder keeps working; stops of one client are counted with client-pause's"
}

func (clientStarve) fields() []string { return []string{"clients", "client", "share", "period"} }

func (clientStarve) needs() needs { return needs{clients: true, processClients: true} }

func (clientStarve) targets() targetKind { return targetsClients }

func (clientStarve) check(c *compiled, _ Setup) error {
	period := c.span(c.Period)
	switch {
	case c.Share <= 0 || c.Share >= 1:
		return field.Errorf("share", "%g must be in (0, 1): the part of every period the client runs", c.Share)
	case c.Period.IsZero():
		return field.Errorf("period", "%v is missing (\"0.5ttl\", \"200ms\"): the client runs %v of every period", field.Self, field.Ref("share"))
	case period > c.dur:
		return field.Errorf("period", "%q is longer than %v %q", c.Period, field.Ref("for"), c.For)
	case run(c) < minPhase || period-run(c) < minPhase:
		return field.Errorf("share", "%g of %v %q leaves a running or a stopped part under %v", c.Share, field.Ref("period"), c.Period, minPhase)
	}
	return nil
}

// run is how long the client runs in every period.
func run(c *compiled) time.Duration {
	return time.Duration(c.Share * float64(c.span(c.Period))).Round(time.Microsecond)
}

// apply stops the clients at once (a period starts stopped) and schedules
// the first flip; strobeOn is "stopped".
func (clientStarve) apply(r *runner, i int, t target) error {
	st := r.steps[i]
	st.clients = t.clients
	st.undo = append(st.undo, func() error {
		if !st.strobeOn {
			return nil
		}
		st.strobeOn = false
		return r.resumeClients(st.clients)
	})
	if err := r.pauseClients(t.clients); err != nil {
		return err
	}
	st.strobeOn = true
	r.push(event{at: st.base + int64(flipAt(st.c, 1)), kind: evTick, step: i})
	return nil
}

// flipAt is when, from the step's start, the duty cycle flips for the
// k-th time (k ≥ 1): odd flips let the clients run, even ones stop them.
func flipAt(c *compiled, k int) time.Duration {
	at := time.Duration(k/2) * c.span(c.Period)
	if k%2 == 1 {
		at += c.span(c.Period) - run(c)
	}
	return at
}

// tick flips the duty cycle.
func (clientStarve) tick(r *runner, i int) {
	st := r.steps[i]
	if st.phase != active {
		return
	}
	var err error
	if st.strobeOn {
		err = r.resumeClients(st.clients)
	} else {
		err = r.pauseClients(st.clients)
	}
	if err != nil {
		st.errs = append(st.errs, err)
	}
	st.strobeOn = !st.strobeOn
	st.toggles++
	if next := st.base + int64(flipAt(st.c, st.toggles+1)); next < st.healAt {
		r.push(event{at: next, kind: evTick, step: i})
	}
}

func (clientStarve) describe(c *compiled, t target) string {
	return fmt.Sprintf("starve %s for %v: running %v of every %v, stopped (SIGSTOP) for the rest", clientsText(c, t.clients), c.dur, run(c), c.span(c.Period))
}

// draw: the holder of the next grant (a starved holder's renewals come
// late), or a client at random; a share of 5–30 % of a period of half a
// TTL to two, for two to five TTLs.
func (clientStarve) draw(g *gen, a aim) (Step, bool) {
	st := Step{Fault: ClientStarve, StarveParams: StarveParams{Share: g.between(0.05, 0.3), Period: TTLs(g.between(0.5, 2))}, For: TTLs(g.between(2, 5))}
	return st, g.aimClient(&st, a)
}

// pauseClients stops clients, counted: a client already stopped by another
// fault stays so until the last of them lets it go. On an error the ones it
// stopped are let go again.
func (r *runner) pauseClients(clients []int) error {
	for k, cl := range clients {
		if r.clientPause[cl]++; r.clientPause[cl] == 1 {
			if err := r.env.Clients.Pause(cl); err != nil {
				r.clientPause[cl]--
				return errors.Join(fmt.Errorf("pause client %d: %w", cl, err), r.resumeClients(clients[:k]))
			}
		}
	}
	return nil
}

// resumeClients undoes pauseClients: each client resumes when its count
// falls to 0.
func (r *runner) resumeClients(clients []int) error {
	var errs []error
	for _, cl := range clients {
		if r.clientPause[cl]--; r.clientPause[cl] == 0 {
			delete(r.clientPause, cl)
			if err := r.env.Clients.Resume(cl); err != nil {
				errs = append(errs, fmt.Errorf("resume client %d: %w", cl, err))
			}
		}
	}
	return errors.Join(errs...)
}

// StarveParams are client-starve's parameters, embedded in Step: the share
// of every period the client runs.
type StarveParams struct {
	Share  float64 `json:"share,omitempty"`
	Period Span    `json:"period,omitzero"`
}
