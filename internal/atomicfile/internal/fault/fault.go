// Package fault holds the hook through which tests fail the file
// operations of package atomicfile's writes one at a time. Only
// atomicfile (which makes every operation through [Do]) and
// atomicfile/atomicfiletest (which sets the hook, for tests) can import
// it.
package fault

import "sync/atomic"

// hook, nil outside tests, sees every operation before it is made.
var hook atomic.Pointer[func(op, path string) error]

// Set makes h see every file operation of atomicfile's writes before it
// is made; an error h returns is the operation's, and the operation is not
// made. A nil h removes the hook.
func Set(h func(op, path string) error) {
	if h == nil {
		hook.Store(nil)
		return
	}
	hook.Store(&h)
}

// Do makes the file operation do (op, on path), unless the hook fails it.
func Do(op, path string, do func() error) error {
	if h := hook.Load(); h != nil {
		if err := (*h)(op, path); err != nil {
			return err
		}
	}
	return do()
}
