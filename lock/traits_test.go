package lock

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

type (
	fakeLocker    struct{}
	fakeReadWrite struct{}
	fakeSemaphore struct{}
	fakeLatch     struct{}
)

func (fakeLocker) Key() string                                     { return "k" }
func (fakeLocker) Acquire(context.Context) (Lease, error)          { return Lease{}, nil }
func (fakeLocker) Release(context.Context, Lease) error            { return nil }
func (fakeLocker) Extend(context.Context, Lease) (Lease, error)    { return Lease{}, nil }
func (fakeReadWrite) Key() string                                  { return "k" }
func (fakeReadWrite) ReadLock() Locker                             { return fakeLocker{} }
func (fakeReadWrite) WriteLock() Locker                            { return fakeLocker{} }
func (fakeSemaphore) Key() string                                  { return "k" }
func (fakeSemaphore) Permits() int                                 { return 1 }
func (fakeSemaphore) TrySetPermits(context.Context) (bool, error)  { return true, nil }
func (fakeSemaphore) Acquire(context.Context) (Lease, error)       { return Lease{}, nil }
func (fakeSemaphore) Release(context.Context, Lease) error         { return nil }
func (fakeLatch) Key() string                                      { return "k" }
func (fakeLatch) TrySetCount(context.Context, int64) (bool, error) { return true, nil }
func (fakeLatch) CountDown(context.Context) error                  { return nil }
func (fakeLatch) Await(context.Context) error                      { return nil }
func (fakeLatch) Count(context.Context) (int64, error)             { return 0, nil }

// kindOf is a Primitive of each kind's interface: a kind declared without
// one here fails TestKindsDeclaredOnce.
var kindOf = map[Kind]Primitive{KindLock: fakeLocker{}, KindReadWrite: fakeReadWrite{}, KindSemaphore: fakeSemaphore{}, KindLatch: fakeLatch{}}

// TestKindsDeclaredOnce: every Kind constant of this package is listed in
// Kinds, valid, and Of knows its interface (and no other kind's); a kind
// added without all three fails here (and lock/protocol's, lock/variants'
// and checker's tests fail until each knows it).
func TestKindsDeclaredOnce(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "traits.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []Kind
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Kind" {
				continue
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok {
					consts = append(consts, Kind(lit.Value[1:len(lit.Value)-1]))
				}
			}
		}
	}
	if len(consts) != len(Kinds) {
		t.Errorf("traits.go declares the kinds %v, Kinds lists %v", consts, Kinds)
	}
	for _, k := range consts {
		if !slices.Contains(Kinds, k) {
			t.Errorf("kind %q is not in Kinds", k)
		}
		if err := k.Check(); err != nil {
			t.Errorf("kind %q: %v", k, err)
		}
		if _, ok := kindOf[k]; !ok {
			t.Errorf("kind %q has no Primitive of its interface in kindOf", k)
			continue
		}
		for other, q := range kindOf {
			if got, want := k.Of(q), other == k; got != want {
				t.Errorf("Kind(%q).Of(%T) = %v, want %v", k, q, got, want)
			}
		}
	}
	if err := Kind("mutex").Check(); err == nil {
		t.Error(`Kind("mutex").Check() = nil, want an error`)
	}
	if Kind("").Or() != KindLock || Kind("").Check() != nil {
		t.Error(`"" is not KindLock`)
	}
}
