package history

import (
	"errors"
	"fmt"
)

// Validate checks what a single op must satisfy on its own: a known type, a
// function name, non-negative times, token and index, and a fault with an
// ID on every nemesis start/stop and only known traits. Relations between ops (pairing, order)
// are the checker's business.
func (o Op) Validate() error {
	switch o.Type {
	case Invoke, OK, Fail, Info:
	case "":
		return errors.New(`missing "type"`)
	default:
		return fmt.Errorf("unknown type %q (want invoke, ok, fail or info)", o.Type)
	}
	if o.F == "" {
		return errors.New(`missing "f"`)
	}
	switch {
	case o.Index < 0:
		return fmt.Errorf("negative index %d", o.Index)
	case o.Time < 0:
		return fmt.Errorf("negative time %d", o.Time)
	case o.Token < 0:
		return fmt.Errorf("negative token %d", o.Token)
	case o.ValidUntil < 0:
		return fmt.Errorf("negative valid_until %d", o.ValidUntil)
	case o.Client < 0:
		return fmt.Errorf("negative client %d", o.Client)
	case o.Process < NemesisProcess:
		return fmt.Errorf("process %d is neither a client (≥ 0) nor the nemesis", o.Process)
	}
	if o.Held && (o.Type != Fail || o.F != Acquire) {
		return fmt.Errorf(`"held" on a %s %s: only a failed acquire is refused as held`, o.Type, o.F)
	}
	if o.Mode != "" && o.Mode != ModeRead && o.Mode != ModeWrite {
		return fmt.Errorf("unknown mode %q (want read or write)", o.Mode)
	}
	if o.IsNemesis() {
		if (o.F == Start || o.F == Stop) && (o.Fault == nil || o.Fault.ID == "") {
			return fmt.Errorf("nemesis %s without a fault id", o.F)
		}
		if o.Fault != nil {
			if err := o.Fault.Traits.validate(); err != nil {
				return err
			}
		}
	} else if o.Fault != nil {
		return fmt.Errorf("client op (process %d) carries a fault", o.Process)
	}
	return nil
}
